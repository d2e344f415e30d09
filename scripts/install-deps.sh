#!/usr/bin/env bash
# Installs every Debian package pwab needs to build, test and benchmark. Idempotent: packages that are
# already installed are skipped, and apt is not touched at all when nothing is missing.
#   scripts/install-deps.sh               build + test dependencies
#   scripts/install-deps.sh --with-parity also the Java/Lucene reference used by the search parity test
#   scripts/install-deps.sh --check       exit 1 (and list them) if any package is missing; installs nothing
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  clang libclang-rt-14-dev                          # libFuzzer target for the data loader
  libtorch-dev libopenblas0-openmp                  # SASRec, encoders, LLaMA (OpenBLAS: see docs/dependencies.md)
  libxapian-dev libicu-dev libfasttext-dev
  nlohmann-json3-dev libsimdjson-dev
  libcpp-httplib-dev libcurl4-openssl-dev
  libsqlite3-dev libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
parity_packages=(default-jdk-headless liblucene8-java)

check_only=0
for arg in "$@"; do
  case "$arg" in
    --with-parity) packages+=("${parity_packages[@]}") ;;
    --check) check_only=1 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$check_only" = 1 ]; then
  echo "missing packages: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps.sh: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
