#!/usr/bin/env bash
# pwab on a real single-host Slurm cluster (scripts/slurm/test-cluster.sh), as docs/scaling.md tells users to run it:
#  1. scripts/slurm/pwab-array.sbatch as 4 array tasks, one of them requeued with `scontrol requeue` while it runs,
#     then pwab-merge.sbatch as a dependent job: the merged run equals an unsharded run (records and scores,
#     timings aside);
#  2. an array whose shards fail (a bad data path): the merge job never runs, and the error is in the shard's log;
#  3. `pwab serve` as a Slurm job, reached by a client on loopback;
#  4. PUMA's SFT as 2 data-parallel ranks under `srun -n 2`: the same losses as one process.
# Needs root and slurm-wlm + munge; without them it skips (exit 77), unless under CI (CI or PWAB_REQUIRE_SLURM=1
# set), where a cluster that cannot start is a failure.
#   test/slurm/slurm_test.sh PWAB_BINARY SOURCE_DIR
set -euo pipefail
pwab=$1
src=$2
skip() {
  if [ "${PWAB_REQUIRE_SLURM:-0}" = 1 ] || [ -n "${CI:-}" ]; then echo "FAIL (under CI the cluster must run): $*" >&2; exit 1; fi
  echo "SKIP: $*" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "the test cluster needs root"
command -v slurmctld > /dev/null && command -v munged > /dev/null || skip "slurm-wlm and munge are not installed"

work=$(mktemp -d /tmp/pwab-slurm-test.XXXXXX)
agent_pid=
cleanup() {
  [ -n "$agent_pid" ] && kill "$agent_pid" 2> /dev/null || true
  if [ -n "${SLURM_CONF:-}" ]; then scancel --user=root 2> /dev/null || true; fi
  "$src/scripts/slurm/test-cluster.sh" down "$work/cluster" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A port pair of our own, so that two checkouts testing at once do not meet.
port=$((20000 + RANDOM % 20000))
eval "$("$src/scripts/slurm/test-cluster.sh" up "$work/cluster" "$port")" || skip "the test cluster did not start"
export SLURM_CONF
echo "cluster up ($SLURM_CONF)" >&2

# job_state JOB: its state as scontrol reports it (COMPLETED, FAILED, PENDING, RUNNING, CANCELLED, ...)
job_state() { scontrol show job "$1" 2> /dev/null | grep -o 'JobState=[A-Z_]*' | head -1 | cut -d= -f2; }
# wait_for SECONDS COMMAND...: until COMMAND succeeds
wait_for() {
  local limit=$1; shift
  for _ in $(seq $((limit * 20))); do "$@" && return 0; sleep 0.05; done
  return 1
}
finished() { case "$(job_state "$1")" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) return 0;; esac; return 1; }

# The shared artefacts, prepared once before fanning out (docs/scaling.md).
data="$work/data"
"$pwab" data synth --out "$data" --scale mini --seed 2 > /dev/null 2>&1
"$pwab" index build "$data" > /dev/null 2>&1
"$pwab" rec train "$data" --epochs 1 --eval-every 0 > /dev/null 2>&1
/usr/bin/python3 "$src/test/slurm/slow_agent.py" 0.15 > "$work/agent.url" 2> "$work/agent.log" &
agent_pid=$!
wait_for 10 test -s "$work/agent.url" || fail "the test agent did not start"
agent_url=$(head -1 "$work/agent.url")
run_args="--split test --tasks 0:40 --track single --agent remote --agent-url $agent_url --seed 1"

# --- 1. the job array, a requeue, the merge ----------------------------------------------------------------------
start=$(date +%s.%N)
# shellcheck disable=SC2086
"$pwab" run --data "$data" $run_args --out "$work/unsharded" --quiet > /dev/null
unsharded_s=$(echo "$(date +%s.%N) - $start" | bc)

cd "$work"
export PWAB="$pwab" PWAB_DATA="$data" PWAB_OUT="$work/runs" PWAB_RUN_ARGS="$run_args"
start=$(date +%s.%N)
array=$(sbatch --parsable --array=0-3 "$src/scripts/slurm/pwab-array.sbatch")
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes "$src/scripts/slurm/pwab-merge.sbatch")
# Requeue shard 1 once it has recorded a task and before it is done.
shard1_started() { [ "$(job_state "${array}_1")" = RUNNING ] && [ -s "$work/runs/shard-1/results.jsonl" ]; }
wait_for 60 shard1_started || fail "shard 1 never ran (state $(job_state "${array}_1"))"
lines_at_requeue=$(wc -l < "$work/runs/shard-1/results.jsonl")
scontrol requeue "${array}_1"
# Slurm holds a requeued job back for a while (its begin time moves ahead); let it start again at once.
requeued() { [ "$(job_state "${array}_1")" = PENDING ]; }
wait_for 30 requeued && scontrol update JobId="${array}_1" StartTime=now || true
echo "requeued shard 1 after $lines_at_requeue of its 10 tasks" >&2
wait_for 300 finished "$merge" || fail "the merge job did not finish (state $(job_state "$merge"))"
sharded_s=$(echo "$(date +%s.%N) - $start" | bc)
[ "$(job_state "$merge")" = COMPLETED ] || { cat "$work"/pwab-merge-*.out >&2 || true; fail "merge job: $(job_state "$merge")"; }
scontrol show job "${array}_1" | grep -q 'Restarts=1' || fail "shard 1 was not requeued: $(scontrol show job "${array}_1" | tr '\n' ' ')"
[ "$lines_at_requeue" -lt 10 ] || fail "shard 1 had finished before the requeue; the test did not requeue mid-run"
grep -q "(start 1)" "$work/pwab-shard-${array}_1.out" || fail "shard 1's log does not show its second start"

# The merged run is the unsharded run: the same records (timings aside) and the same scores.
/usr/bin/python3 - "$work/unsharded" "$work/runs/all" <<'PY'
import json, sys
def records(d):
    out = {}
    for line in open(f"{d}/results.jsonl"):
        r = json.loads(line)
        for k in ("seconds_env", "seconds_agent"):
            r.pop(k, None)
        out[(r["task"], r["trial"])] = r
    return out
a, b = records(sys.argv[1]), records(sys.argv[2])
assert len(a) == 40, len(a)
assert a.keys() == b.keys(), sorted(set(a) ^ set(b))
for k in a:
    assert a[k] == b[k], (k, a[k], b[k])
PY
"$pwab" score "$work/unsharded" --format json > "$work/score-unsharded.json"
"$pwab" score "$work/runs/all" --format json > "$work/score-merged.json"
/usr/bin/python3 - "$work/score-unsharded.json" "$work/score-merged.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["groups"] == b["groups"], (a["groups"], b["groups"])
PY
grep -q "Res Acc\|res_acc\|Function" "$work"/pwab-merge-*.out || fail "the merge job printed no scores"
echo "array + requeue + merge: the merged run equals the unsharded run (unsharded ${unsharded_s} s, 4 shards on Slurm ${sharded_s} s)" >&2

# --- 2. a failing shard leaves the merge unrun, its error in the Slurm log ---------------------------------------
export PWAB_DATA="$work/no-such-data" PWAB_OUT="$work/bad-runs"
bad=$(sbatch --parsable --array=0-1 "$src/scripts/slurm/pwab-array.sbatch")
bad_merge=$(sbatch --parsable --dependency="afterok:$bad" --kill-on-invalid-dep=yes "$src/scripts/slurm/pwab-merge.sbatch")
wait_for 120 finished "${bad}_0" || fail "the failing shard did not end"
[ "$(job_state "${bad}_0")" = FAILED ] || fail "the bad shard ended as $(job_state "${bad}_0"), not FAILED"
grep -q "no-such-data" "$work/pwab-shard-${bad}_0.out" || fail "the shard's log does not name the bad path: $(cat "$work/pwab-shard-${bad}_0.out")"
wait_for 120 finished "$bad_merge" || fail "the merge after a failed shard is still $(job_state "$bad_merge")"
[ "$(job_state "$bad_merge")" = CANCELLED ] || fail "the merge after a failed shard ended as $(job_state "$bad_merge")"
[ ! -e "$work/bad-runs/all" ] || fail "the merge ran after a failed shard"
echo "failing shard: merge cancelled, error in the shard's log" >&2

# --- 3. pwab serve as a Slurm job --------------------------------------------------------------------------------
serve=$(sbatch --parsable --output="$work/serve-%j.out" --wrap "exec '$pwab' serve --data '$data' --port 0 --embedder hashing")
wait_for 60 test -s "$work/serve-$serve.out" || fail "the served job printed no URL (state $(job_state "$serve"))"
url=$(head -1 "$work/serve-$serve.out")
health=$(curl -sf "$url/health") || fail "GET $url/health failed"
echo "$health" | grep -q '"status":"healthy"' || fail "unexpected /health answer: $health"
tasks=$(curl -sf "$url/v1/tasks?limit=2") || fail "GET /v1/tasks failed"
echo "$tasks" | grep -q '"test/1"' || fail "unexpected task list: $tasks"
scancel "$serve"
wait_for 30 finished "$serve" || fail "the served job did not stop on scancel"
echo "pwab serve as a Slurm job answered on $url" >&2

# --- 4. data-parallel PUMA SFT under srun -n 2 ----------------------------------------------------------------------
puma_args="--data $data --train-limit 20 --embedder hashing --sft-epochs 2"
for d in puma-one puma-two; do
  # shellcheck disable=SC2086
  "$pwab" puma prepare $puma_args --out "$work/$d" > "$work/$d-prepare.log" 2>&1 || fail "puma prepare: $(cat "$work/$d-prepare.log")"
done
start=$(date +%s.%N)
# shellcheck disable=SC2086
"$pwab" puma sft $puma_args --out "$work/puma-one" > "$work/puma-one.log" 2>&1 || fail "puma sft: $(cat "$work/puma-one.log")"
one_s=$(echo "$(date +%s.%N) - $start" | bc)
start=$(date +%s.%N)
# shellcheck disable=SC2086
srun -n 2 --output="$work/puma-two-%t.log" "$pwab" puma sft $puma_args --out "$work/puma-two" \
  || fail "srun -n 2 pwab puma sft failed: $(cat "$work"/puma-two-*.log)"
two_s=$(echo "$(date +%s.%N) - $start" | bc)
grep -q "rank 1 of 2 (slurm, gloo)" "$work/puma-two-1.log" || fail "rank 1 did not join as a Slurm rank: $(cat "$work/puma-two-1.log")"
/usr/bin/python3 - "$work/puma-one/sft/train.json" "$work/puma-two/sft/train.json" <<'PY'
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:])
assert one["ranks"] == 1 and two["ranks"] == 2, (one, two)
assert one["steps"] == two["steps"], (one, two)
for key in ("train_loss", "eval_loss"):
    assert abs(one[key] - two[key]) <= 1e-4 * abs(one[key]), (key, one[key], two[key])
PY
echo "srun -n 2 puma sft: the losses of one process (one process ${one_s} s, 2 ranks ${two_s} s)" >&2

# --- 5. data-parallel PUMA RL under srun -n 2, from the same SFT model ----------------------------------------------
rl_args="$puma_args --test-limit 6 --rl-iterations 3 --rl-tasks 4 --rl-group 3 --rl-max-new-tokens 16 --rl-eval-tasks 3"
# The two ranks go first: --reuse-from copies every finished step, and puma-one must not have its RL step yet.
# shellcheck disable=SC2086
srun -n 2 --output="$work/rl-two-%t.log" "$pwab" puma rl $rl_args --out "$work/rl-two" --reuse-from "$work/puma-one" \
  || fail "srun -n 2 pwab puma rl failed: $(cat "$work"/rl-two-*.log)"
# shellcheck disable=SC2086
"$pwab" puma rl $rl_args --out "$work/puma-one" > "$work/rl-one.log" 2>&1 || fail "puma rl: $(cat "$work/rl-one.log")"
grep -q "rank 1: rl starts" "$work/rl-two-1.log" || fail "rank 1 did not join the RL step: $(cat "$work/rl-two-1.log")"
/usr/bin/python3 - "$work/puma-one/rl" "$work/rl-two/rl" <<'PY'
import json, sys
one, two = sys.argv[1:]
a, b = (json.load(open(d + "/train.json")) for d in (one, two))
assert a["ranks"] == 1 and b["ranks"] == 2 and a["iterations"] == b["iterations"] == 3, (a, b)
assert a["episodes"] == b["episodes"], (a, b)
curve = lambda d: [json.loads(l) for l in open(d + "/work/curve.jsonl") if '"train"' in l]
for p, q in zip(curve(one), curve(two)):
    assert abs(p["reward"] - q["reward"]) <= 1e-9 and abs(p["loss"] - q["loss"]) <= 1e-4 * max(1, abs(p["loss"])), (p, q)
assert abs(a["last_eval"]["reward"] - b["last_eval"]["reward"]) <= 1e-6, (a, b)
PY
echo "srun -n 2 puma rl: the rewards, losses and final greedy reward of one process" >&2
echo "PASS" >&2
