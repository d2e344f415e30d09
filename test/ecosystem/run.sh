#!/usr/bin/env bash
# Runs one Python test module of test/ecosystem/ with the interpreter of one pinned ecosystem environment
# (scripts/ecosystem/install.sh; docs/ecosystem.md), against the pwab binary CTest names.
#   run.sh ENV MODULE      e.g. run.sh core test_trl
# Without that environment installed (or with an out-of-date one) it skips (exit 77) and says how to install it,
# unless PWAB_REQUIRE_ECOSYSTEM=1 (CI), where a missing environment fails the test instead.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
env=$1 module=$2
# shellcheck source=scripts/ecosystem/root.sh
. "$src/scripts/ecosystem/root.sh"
if ! "$src/scripts/ecosystem/install.sh" --check "$env" 2>/dev/null; then
  msg="the '$env' Python environment is not installed in $root: scripts/install-deps.sh --with-ecosystem"
  if [ "${PWAB_REQUIRE_ECOSYSTEM:-0}" = 1 ]; then echo "FAIL (PWAB_REQUIRE_ECOSYSTEM=1): $msg" >&2; exit 1; fi
  echo "SKIP: $msg" >&2
  exit 77
fi
# Nothing is fetched at run time: the hubs are off, and caches live in a folder of this run.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pwab-eco-$module-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export HF_HOME="$scratch/hf" HF_DATASETS_CACHE="$scratch/hf-datasets" WANDB_MODE=disabled WANDB_DISABLED=true
export INSPECT_LOG_DIR="$scratch/inspect-logs" XDG_CACHE_HOME="$scratch/cache" MPLCONFIGDIR="$scratch/mpl"
export TOKENIZERS_PARALLELISM=false PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export PYTHONPATH="$src/python:$here${PYTHONPATH:+:$PYTHONPATH}"
export PWAB_ECOSYSTEM_ENV="$root/$env" PWAB_SOURCE_DIR="$src" PWAB_ECOSYSTEM_SCRATCH="$scratch"
cd "$here"
exec "$root/$env/bin/python" -m unittest -v "$module"
