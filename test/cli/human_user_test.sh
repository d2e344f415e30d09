#!/usr/bin/env bash
# `pwab run --user-sim human` driven through a pseudo-terminal (tmux), as a person would use it: the banner shows
# the task's instruction, each agent message is printed with a `you>` prompt, the typed line is the user's reply
# (it appears in the record as the respond's observation), and the run ends with every task recorded.
# Skips (77) without tmux, except under CI (CI set), where it fails.
#   test/cli/human_user_test.sh PWAB_BINARY
set -euo pipefail
pwab=$(realpath "$1")
if ! command -v tmux > /dev/null; then
  if [ -n "${CI:-}" ]; then echo "FAIL (under CI): tmux is not installed" >&2; exit 1; fi
  echo "SKIP: tmux is not installed" >&2
  exit 77
fi
work=$(mktemp -d /tmp/pwab-human-test.XXXXXX)
session="pwab-human-$$"
cleanup() {
  tmux kill-session -t "$session" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  tmux capture-pane -p -t "$session" -S -300 >&2 2> /dev/null || true
  exit 1
}

data="$work/mini"
"$pwab" data synth --out "$data" --scale mini --seed 3 > /dev/null 2>&1
"$pwab" rec train "$data" --epochs 1 --eval-every 0 > /dev/null 2>&1
tmux new-session -d -s "$session" -x 200 -y 60 \
  "'$pwab' run --data '$data' --track multi --user-sim human --agent heuristic --tasks 0:6 --embedder hashing \
   --out '$work/run'; echo \"EXIT=\$?\"; sleep 600"

# Answer every prompt with a numbered reply until the run ends.
answered=0
for _ in $(seq 1200); do  # 120 s at most
  screen=$(tmux capture-pane -p -t "$session" -S -1000)
  if grep -q '^EXIT=' <<< "$screen"; then break; fi
  last=$(grep -v '^[[:space:]]*$' <<< "$screen" | tail -n 1 || true)
  if [[ "$last" =~ ^you\>[[:space:]]*$ ]]; then
    answered=$((answered + 1))
    tmux send-keys -t "$session" "I like Trerin best, reply number $answered" Enter
    sleep 0.2
  fi
  sleep 0.1
done
screen=$(tmux capture-pane -p -t "$session" -S -1000)
grep -q '^EXIT=0' <<< "$screen" || fail "the run did not end with exit 0"
grep -q 'you are this user' <<< "$screen" || fail "no banner"
grep -q '^agent: ' <<< "$screen" || fail "no agent message was shown"
[ "$answered" -ge 1 ] || fail "no prompt was answered"
grep -q 'the agent called' <<< "$screen" || fail "the attempts were not shown"

# Every typed reply is the observation of a respond in the records, in order; 6 tasks recorded. The first task's
# instruction was shown in its banner.
first_instruction=$(/usr/bin/python3 - "$work/run/results.jsonl" "$answered" <<'PY'
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(records) == 6, len(records)
replies = [a["observation"] for r in records for a in r["actions"] if a["name"] == "respond"]
expected = [f"I like Trerin best, reply number {n}" for n in range(1, int(sys.argv[2]) + 1)]
assert replies == expected, (replies, expected)
print(min(records, key=lambda r: int(r["task"].split("/")[1]))["instruction"][:40])
PY
) || fail "the records do not hold the typed replies"
grep -qF "$first_instruction" <<< "$screen" || fail "the first task's instruction was not shown"
echo "PASS: $answered replies typed at the prompt" >&2
