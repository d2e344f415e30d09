#!/usr/bin/env bash
# The main job on embedded data, no API key and no model weights: synthesize the mini dataset (if absent)
# and validate it. Later stages (index, recommender, benchmark runs) join as they land.
#   scripts/demo.sh PWAB_BINARY [DATA_DIR]
set -euo pipefail
pwab=${1:?usage: demo.sh PWAB_BINARY [DATA_DIR]}
data=${2:-build/demo/mini}
if [ ! -f "$data/user_instructions.json" ]; then
  "$pwab" data synth --out "$data" --scale mini --seed 1
fi
"$pwab" data validate "$data"
echo
echo "demo: the mini synthetic dataset is in $data; try: $pwab data validate --json $data" >&2
