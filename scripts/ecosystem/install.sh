#!/usr/bin/env bash
# Creates the pinned Python ecosystem that pwab's integration tests run against (docs/ecosystem.md): one virtual
# environment per lock file in this folder, outside the source tree, each installed with
# `pip install --require-hashes --no-deps` from its lock (exact versions and hashes; the lock is the whole
# dependency set, so pip resolves nothing). Idempotent: an environment whose stamp holds the SHA-256 of its lock
# (and of the torch layer's lock under it) and of its interpreter's version is left alone; any other is made anew,
# and its stamp is written last, so an interrupted install is redone.
#   scripts/ecosystem/install.sh              every environment but the opt-in ones
#   scripts/ecosystem/install.sh core verl    some (the torch layer comes along when one needs it)
#   scripts/ecosystem/install.sh llamacpp     the opt-in llama.cpp environment: compiles llama.cpp from source
#                                             (PyPI has no wheel), from NAME-build.lock's pinned build backend
#   scripts/ecosystem/install.sh --check      exit 1 naming what is missing or out of date; installs nothing
#   scripts/ecosystem/install.sh --path       print the root folder and exit
#   scripts/ecosystem/install.sh --torch-dir  print the torch layer's torch/ folder (its libtorch: `make TORCH=...`)
# The root is $PWAB_ECOSYSTEM_DIR, else /opt/pwab/ecosystem as root, else ~/.local/share/pwab/ecosystem.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/ecosystem/root.sh
. "$here/root.sh"
all_envs=(torch core openenv verifiers verifiers-v0 verl openrlhf)
opt_in_envs=(llamacpp)   # named explicitly only: a source build that CI does not pay for
python=${PWAB_ECOSYSTEM_PYTHON:-/usr/bin/python3}   # Debian's: what a fresh Debian 12 machine has

check_only=0
envs=()
for arg in "$@"; do
  case "$arg" in
    --check) check_only=1 ;;
    --path) echo "$root"; exit 0 ;;
    --torch-dir)
      dir=$(ls -d "$root"/torch/lib/python3*/site-packages/torch 2>/dev/null | head -n 1)
      [ -n "$dir" ] || { echo "install.sh: no torch layer in $root (install: scripts/ecosystem/install.sh torch)" >&2; exit 1; }
      echo "$dir"; exit 0 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "install.sh: unknown option '$arg'" >&2; exit 2 ;;
    *) { [ -f "$here/$arg.lock" ] && [[ "$arg" != *-build ]]; } || {
         echo "install.sh: no environment '$arg' (${all_envs[*]} ${opt_in_envs[*]})" >&2; exit 2; }
       envs+=("$arg") ;;
  esac
done
[ ${#envs[@]} -gt 0 ] || envs=("${all_envs[@]}")

on_torch() { [ "$1" != torch ] && grep -qx 'torch==.*' "$here/$1.in"; }
# The torch layer goes first when any chosen environment stands on it.
for env in "${envs[@]}"; do
  if on_torch "$env" && [[ " ${envs[*]} " != *" torch "* ]]; then envs=(torch "${envs[@]}"); break; fi
done

[ -x "$python" ] || { echo "install.sh: $python not found (Debian's python3; or set PWAB_ECOSYSTEM_PYTHON)" >&2; exit 1; }
py_version=$("$python" -c 'import sys; print(sys.version.split()[0])')
stamp_of() {
  { echo "python $py_version"; sha256sum "$here/$1.lock" | cut -d' ' -f1
    if on_torch "$1"; then sha256sum "$here/torch.lock" | cut -d' ' -f1; fi
    if [ -f "$here/$1-build.lock" ]; then sha256sum "$here/$1-build.lock" | cut -d' ' -f1; fi; } | sha256sum | cut -d' ' -f1
}

stale=()
for env in "${envs[@]}"; do
  [ "$(cat "$root/$env/.pwab-lock-sha256" 2>/dev/null)" = "$(stamp_of "$env")" ] || stale+=("$env")
done
if [ ${#stale[@]} -eq 0 ]; then exit 0; fi
if [ "$check_only" = 1 ]; then
  how="scripts/install-deps.sh --with-ecosystem"
  for env in "${stale[@]}"; do
    [[ " ${opt_in_envs[*]} " == *" $env "* ]] && how="scripts/ecosystem/install.sh ${stale[*]}"
  done
  echo "install.sh: missing or out of date in $root: ${stale[*]} (install: $how)" >&2
  exit 1
fi

"$python" -c 'import ensurepip, venv' 2>/dev/null || {
  echo "install.sh: $python has no venv/ensurepip (Debian: apt-get install python3-venv)" >&2; exit 1; }
mkdir -p "$root"
for env in "${stale[@]}"; do
  dir="$root/$env"
  start=$SECONDS
  echo "install.sh: creating $dir from scripts/ecosystem/$env.lock" >&2
  rm -rf "$dir"
  "$python" -m venv "$dir"
  site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  if on_torch "$env"; then
    # The layer's site-packages after this environment's own: its packages are seen, this one's win.
    "$root/torch/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' > "$site/pwab-torch-layer.pth"
  fi
  # --no-deps: the lock is complete. --prefer-binary: wheels wherever PyPI has one for the pinned version; the two
  # pure-Python packages PyPI has only as source (antlr4-python3-runtime 4.9.3 for verl's hydra-core,
  # transformers-stream-generator for OpenRLHF) are built by their setup.py with the environment's own setuptools,
  # so nothing unpinned is fetched (pip prints a deprecation notice for that).
  build=()
  if [ -f "$here/$env-build.lock" ]; then
    # A package PyPI has only as source, with a pyproject build backend: pip's isolated build would fetch that
    # backend unpinned, so it comes from its own lock first and the build runs without isolation.
    PIP_FIND_LINKS= PIP_NO_INPUT=1 "$dir/bin/python" -m pip install --quiet --disable-pip-version-check \
      --require-hashes --no-deps --only-binary :all: -r "$here/$env-build.lock" >&2
    build=(--no-build-isolation)
    echo "install.sh: $env builds from source (llama.cpp: several minutes on 2 cores)" >&2
  fi
  PIP_FIND_LINKS= PIP_NO_INPUT=1 "$dir/bin/python" -m pip install --quiet --disable-pip-version-check \
    --require-hashes --no-deps --prefer-binary "${build[@]}" -r "$here/$env.lock" >&2
  stamp_of "$env" > "$dir/.pwab-lock-sha256"
  echo "install.sh: $env ready in $((SECONDS - start)) s ($(du -sh "$dir" | cut -f1))" >&2
done
