#!/usr/bin/env bash
# Installs the Debian packages pwab needs to build (and, on request, to test, fuzz and benchmark), and unpacks
# Debian's sentencepiece source (fetched with `apt-get source`) into $PWAB_VENDOR_DIR (default
# /usr/local/src/pwab), where CMake builds it against the system protobuf (docs/dependencies.md says why).
# Idempotent: packages that are already installed are skipped, the source is fetched once (a stamp file records
# it), and apt is not touched when nothing is missing. `make` installs the build's needs, `make test` the tests'
# too, `make fuzz` clang's: a first build does not wait for a browser, a Slurm cluster or Node.js.
# With --with-test it also installs the MCP test client (test/mcp/client: the official MCP TypeScript SDK, pinned
# by its package-lock.json) from the npm registry with `npm ci`, after Debian's nodejs and npm when `node` is
# missing; a stamp holding the lock file's hash skips it when node_modules is already that lock's.
#   scripts/install-deps.sh               what building needs (make, make demo)
#   scripts/install-deps.sh --with-test   also what the tests need (make test): Chromium, Slurm, tmux, pip, the
#                                         MCP test client
#   scripts/install-deps.sh --with-fuzz   also clang and libFuzzer (make fuzz)
#   scripts/install-deps.sh --with-parity also the Java/Lucene reference used by the search parity test
#   scripts/install-deps.sh --with-bench  also Debian's python3-torch, the anchor of the PUMA training benchmarks
#   scripts/install-deps.sh --with-ecosystem  also the pinned Python ecosystem (TRL, transformers, PEFT, verifiers,
#                                         verl, OpenRLHF, OpenEnv, MCP, Inspect AI, ...) in virtual environments
#                                         outside the tree, from PyPI with hashes (scripts/ecosystem/install.sh)
#   scripts/install-deps.sh --no-mcp-client  with --with-test: without Node.js and the MCP test client (its test
#                                         then skips)
#   scripts/install-deps.sh --check       exit 1 (and list them) if any package is missing; installs nothing
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  libtorch-dev libopenblas0-openmp                  # SASRec, encoders, LLaMA (OpenBLAS: see docs/dependencies.md)
  libgloo-dev                                       # c10d's Gloo headers: data-parallel PUMA training
  libxapian-dev libicu-dev libfasttext-dev
  nlohmann-json3-dev libsimdjson-dev
  libcpp-httplib-dev libcurl4-openssl-dev
  libboost-dev                                      # Beast + Asio: pwab serve's HTTP and WebSocket layer
  libsqlite3-dev libcli11-dev libfmt-dev
  libtcmalloc-minimal4                              # the executables' malloc (cmake/Dependencies.cmake)
  libgtest-dev libgmock-dev libbenchmark-dev         # the test and bench binaries are part of the build
  protobuf-compiler                                 # the vendored sentencepiece, built against system protobuf
)
test_packages=(
  python3-pip python3-setuptools python3-wheel       # `pip install ./python`, offline (the Python package's test)
  chromium                                          # headless browser test of `pwab report`'s page
  slurm-wlm munge bc curl                           # the single-host Slurm cluster of test/slurm/ (scripts/slurm/)
  tmux                                              # a pseudo-terminal for the --user-sim human test
)
fuzz_packages=(clang libclang-rt-14-dev)             # libFuzzer targets for the parsers of outside input
parity_packages=(default-jdk-headless liblucene8-java)
bench_packages=(python3-torch)                      # the PyTorch-eager anchor of the PUMA training benchmarks
ecosystem_packages=(python3-venv)                   # the ecosystem's virtual environments (scripts/ecosystem/)

check_only=0
with_test=0
with_mcp_client=1
with_ecosystem=0
for arg in "$@"; do
  case "$arg" in
    --with-test) packages+=("${test_packages[@]}"); with_test=1 ;;
    --with-fuzz) packages+=("${fuzz_packages[@]}") ;;
    --with-parity) packages+=("${parity_packages[@]}") ;;
    --with-bench) packages+=("${bench_packages[@]}") ;;
    --with-ecosystem) packages+=("${ecosystem_packages[@]}"); with_ecosystem=1 ;;
    --no-mcp-client) with_mcp_client=0 ;;
    --check) check_only=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

# Debian's sentencepiece source: the exact version, and the SHA-256 of its upstream tarball (apt also checks both
# tarballs against the signed archive index, and dpkg-source checks them against the .dsc).
spm_version=0.1.97-3
spm_orig_sha256=56430381f45dc6debfd2e0cbde4f039f9499c49ca825af184b0cbf318c17a18f
vendor_dir=${PWAB_VENDOR_DIR:-/usr/local/src/pwab}
spm_dir="$vendor_dir/sentencepiece-${spm_version%-*}"
spm_stamp="$spm_dir/.pwab-vendored"

# The MCP test client: Node.js from Debian when there is none (any node >= 18 on PATH will do), then `npm ci`.
mcp_client_dir="$(cd "$(dirname "$0")/.." && pwd)/test/mcp/client"
mcp_client_stamp="$mcp_client_dir/node_modules/.pwab-lock-sha256"
need_mcp_client=0
if [ "$with_test" = 1 ] && [ "$with_mcp_client" = 1 ]; then
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
  lock_sha=$(sha256sum "$mcp_client_dir/package-lock.json" | cut -d' ' -f1)
  [ "$(cat "$mcp_client_stamp" 2>/dev/null)" = "$lock_sha" ] || need_mcp_client=1
fi

missing=()
installed=" $(dpkg-query -W -f='${Package}:${Status}\n' "${packages[@]}" 2>/dev/null |
              sed -n 's/:install ok installed$//p' | tr '\n' ' ' || true) "
for p in "${packages[@]}"; do
  [[ "$installed" == *" $p "* ]] || missing+=("$p")
done
need_spm=0
grep -qx "sentencepiece $spm_version upstream" "$spm_stamp" 2>/dev/null || need_spm=1

ecosystem="$(cd "$(dirname "$0")" && pwd)/ecosystem/install.sh"
need_ecosystem=0
if [ "$with_ecosystem" = 1 ] && ! "$ecosystem" --check 2>/dev/null; then need_ecosystem=1; fi

if [ ${#missing[@]} -eq 0 ] && [ "$need_spm" = 0 ] && [ "$need_mcp_client" = 0 ] && [ "$need_ecosystem" = 0 ]; then
  exit 0
fi
if [ "$check_only" = 1 ]; then
  [ ${#missing[@]} -eq 0 ] || echo "missing packages: ${missing[*]}" >&2
  [ "$need_spm" = 0 ] || echo "missing: sentencepiece $spm_version source in $spm_dir" >&2
  [ "$need_mcp_client" = 0 ] || echo "missing: the MCP test client's node_modules in $mcp_client_dir" >&2
  [ "$need_ecosystem" = 0 ] || "$ecosystem" --check || true
  exit 1
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps.sh: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The sentencepiece source, once. Debian's libsentencepiece.so bundles protobuf-lite 3.14 and crashes any process
# that also loads libtorch (which uses the system protobuf 3.21), so pwab builds it from Debian's source package.
# apt-get source needs deb-src entries; they are derived from the system's own deb entries (deb822 .sources files
# and classic one-line lists alike) into a private list, so the system's apt configuration is left untouched.
if [ "$need_spm" = 1 ]; then
  echo "install-deps.sh: fetching the sentencepiece $spm_version source from the Debian archive into $spm_dir" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/parts" "$work/lists/partial" "$work/cache/archives/partial" "$work/dl"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && sed -E 's/^Types:.*$/Types: deb-src/' "$f" > "$work/parts/$(basename "$f")"
  done
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | sed -nE 's/^deb[[:space:]]/deb-src /p' \
    > "$work/src.list" || true
  # apt drops privileges to _apt for downloads; let it write there.
  if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then chown -R _apt "$work"; fi
  apt_opts=(-o "Dir::Etc::SourceList=$work/src.list" -o "Dir::Etc::SourceParts=$work/parts"
            -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
  $SUDO apt-get "${apt_opts[@]}" update -qq
  (cd "$work/dl" && $SUDO apt-get "${apt_opts[@]}" source -qq --download-only "sentencepiece=$spm_version")
  orig="$work/dl/sentencepiece_${spm_version%-*}.orig.tar.gz"
  echo "$spm_orig_sha256  $orig" | sha256sum -c --quiet - || {
    echo "install-deps.sh: $orig does not have the expected SHA-256" >&2; exit 1; }
  # The upstream 0.1.97 release as Debian ships it (its orig tarball), without Debian's patch series: those are
  # cherry-picks towards 0.1.98, one of which (0023, init.h) hardwires the bundled protobuf-lite headers and so
  # cannot build against the system protobuf, and one removes the static library targets pwab links.
  # (dpkg-source verifies the tarballs against the .dsc; it cannot verify the uploader's signature without the
  # Debian keyring, which is fine: apt already checked the .dsc against the signed archive index.)
  (cd "$work/dl" && dpkg-source -x --skip-patches "sentencepiece_$spm_version.dsc" src >"$work/unpack.log" 2>&1) || {
    cat "$work/unpack.log" >&2; exit 1; }
  echo "sentencepiece $spm_version upstream" > "$work/dl/src/.pwab-vendored"
  $SUDO mkdir -p "$vendor_dir"
  $SUDO rm -rf "$spm_dir.tmp" "$spm_dir"
  $SUDO cp -a "$work/dl/src" "$spm_dir.tmp"
  $SUDO chown -R root:root "$spm_dir.tmp" 2>/dev/null || true
  $SUDO mv "$spm_dir.tmp" "$spm_dir"
fi

# The MCP test client, exactly as its lock file pins it (npm ci verifies every package's integrity hash). No
# install scripts run. Offline, this fails with a warning and the SDK test skips; everything else still builds.
if [ "$need_mcp_client" = 1 ]; then
  echo "install-deps.sh: installing the MCP test client (npm ci in $mcp_client_dir)" >&2
  if (cd "$mcp_client_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
    echo "$lock_sha" > "$mcp_client_stamp"
  else
    echo "install-deps.sh: warning: npm ci failed; the MCP SDK test (test/mcp) will skip" >&2
  fi
fi

# The pinned Python ecosystem (scripts/ecosystem/): after apt, which brought python3-venv.
if [ "$need_ecosystem" = 1 ]; then
  "$ecosystem"
fi
