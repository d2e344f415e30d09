#!/usr/bin/env bash
# Runs the data-loader fuzzer for N seconds (default 60) from a seed corpus made of the test fixtures.
#   scripts/fuzz.sh BUILD_DIR [SECONDS]
# Crashes are written to BUILD_DIR/fuzz-artifacts/ and make the script fail.
set -euo pipefail
build=${1:?usage: fuzz.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$corpus" "$artifacts"
# Seed corpus: each fixture file, prefixed by the byte that selects its file kind (see data_loader_fuzz.cpp).
i=0
for f in test/fixtures/data/original/*.json; do
  case "$(basename "$f")" in
    all_products*) k=0 ;; user_history*) k=1 ;; user_instructions*) k=2 ;; user_profiles*) k=3 ;; *) k=4 ;;
  esac
  { printf "\\x$(printf %02x $k)"; cat "$f"; } > "$corpus/seed-$i"
  i=$((i + 1))
done
echo "fuzzing the data loader for ${seconds}s (corpus $corpus)" >&2
"$build/fuzz/fuzz_data_loader" "$corpus" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 2>&1 | tail -n 25
echo "fuzz: no crash in ${seconds}s" >&2
