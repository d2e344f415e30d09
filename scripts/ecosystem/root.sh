# The ecosystem's root folder, shared by install.sh and the test driver (test/ecosystem/run.sh): sourced, sets
# $root. Outside the source tree, so clones and build folders share one install.
if [ -n "${PWAB_ECOSYSTEM_DIR:-}" ]; then root=$PWAB_ECOSYSTEM_DIR
elif [ "$(id -u)" = 0 ]; then root=/opt/pwab/ecosystem
else root=${XDG_DATA_HOME:-$HOME/.local/share}/pwab/ecosystem
fi
