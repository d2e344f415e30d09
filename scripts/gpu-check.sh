#!/usr/bin/env bash
# What a user with an NVIDIA GPU and a CUDA PyTorch checks first (issue 39, item 3; docs/llama.md "On a GPU"):
#   1. the machine: nvidia-smi, and that the PyTorch sees the GPUs;
#   2. pwab built on that PyTorch's libtorch (make TORCH=..., in build/pytorch);
#   3. the torch tests, with the CUDA ones (test/llama/cuda_test.cpp) required to run, not to skip;
#   4. data-parallel SFT on two NCCL ranks (a GPU each) ends with the loss of one process (needs two GPUs);
#   5. the paper preset's LoRA SFT on a random 1B LLaMA in bf16, pwab against transformers + PEFT (TRL's
#      SFTTrainer) on the same rows and shapes (bench/ecosystem/trl_sft_speed.py --shape 1b --preset paper).
# Everything it prints also goes to OUT/gpu-check.log; each stage's result is one line "check: NAME: ok|FAILED|
# skipped (why)", and the exit status is 1 when any stage failed.
#   scripts/gpu-check.sh [--torch DIR] [--python PY] [--out DIR] [--tasks N] [--skip-build]
# --torch: the torch/ folder of a CUDA PyTorch 2.x (default: PY's torch, PY defaulting to the pinned ecosystem's
# core interpreter when installed, else python3). The comparison with transformers + PEFT needs transformers,
# peft, trl and datasets in PY (the pinned ecosystem has them: scripts/ecosystem/install.sh core).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(dirname "$here")"
cd "$source_dir"

torch_dir="" python="" out="${TMPDIR:-/tmp}/pwab-gpu-check" tasks=16 build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) torch_dir="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --tasks) tasks="$2"; shift 2 ;;
    --skip-build) build=0; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
exec > >(tee -a "$out/gpu-check.log") 2>&1
failed=0
result() {  # result NAME STATUS [why]
  echo "check: $1: $2${3:+ ($3)}"
  [ "$2" = FAILED ] && failed=1
  return 0
}

echo "== pwab gpu-check, $(date -u +%FT%TZ), $(git rev-parse --short HEAD 2>/dev/null || echo 'no git')"
# 1. The machine and the PyTorch.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L; then
  result machine FAILED "no nvidia-smi or no GPU: this check is for a machine with an NVIDIA GPU"
  exit 1
fi
if [ -z "$python" ]; then
  core="$(scripts/ecosystem/install.sh --path 2>/dev/null)/core/bin/python"
  if [ -x "$core" ]; then python="$core"; else python=python3; fi
fi
gpus=$("$python" -c 'import torch; assert torch.cuda.is_available(), "torch sees no GPU"; print(torch.cuda.device_count())') ||
  { result machine FAILED "$python: no torch, or it sees no GPU (a CPU-only wheel, or the driver is older than its CUDA)"; exit 1; }
"$python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "GPUs", torch.cuda.device_count(), torch.cuda.get_device_name(0), "bf16", torch.cuda.is_bf16_supported())'
[ -n "$torch_dir" ] || torch_dir=$("$python" -c 'import torch, os; print(os.path.dirname(torch.__file__))')
result machine ok "$gpus GPU(s), torch in $torch_dir"

# 2. The build.
if [ "$build" = 1 ]; then
  if make TORCH="$torch_dir"; then result build ok; else result build FAILED "make TORCH=$torch_dir"; exit 1; fi
fi
pwab="$source_dir/build/pytorch/pwab"
"$pwab" version --verbose || { result build FAILED "build/pytorch/pwab does not start"; exit 1; }

# 3. The torch tests; the CUDA ones must run here.
if ctest --test-dir build/pytorch -L torch --output-on-failure; then result torch-tests ok; else result torch-tests FAILED; fi
cuda_log="$out/cuda-tests.log"
if (cd build/pytorch/test/llama && ./test_llama --gtest_filter='Cuda.*') > "$cuda_log" 2>&1; then
  if grep -q '\[  SKIPPED \]' "$cuda_log"; then
    result cuda-tests FAILED "the CUDA tests skipped: this build's libtorch sees no GPU"
  else
    result cuda-tests ok "$(grep -c '\[       OK \]' "$cuda_log") tests on the GPU"
  fi
else
  cat "$cuda_log"
  result cuda-tests FAILED "$cuda_log"
fi

# 4. Two NCCL ranks against one process: the tiny preset's SFT on the mini dataset, through `pwab puma sft`.
if [ "$gpus" -ge 2 ]; then
  mini="$out/mini"
  [ -f "$mini/user_instructions.json" ] || "$pwab" data synth --out "$mini" --scale mini --seed 5 > /dev/null
  [ -d "$mini/.pwab-rec" ] || "$pwab" rec train "$mini" --epochs 1 --eval-every 0 > /dev/null 2>&1
  rm -rf "$out/one" "$out/two"
  common=(--data "$mini" --train-limit 60 --embedder hashing --sft-epochs 1 --device cuda)
  "$pwab" puma sft "${common[@]}" --out "$out/one" > "$out/one.log" 2>&1
  port=$((29000 + RANDOM % 1000))
  for r in 1 0; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      "$pwab" puma sft "${common[@]}" --out "$out/two" > "$out/rank$r.log" 2>&1 &
  done
  wait
  verdict=$("$python" - "$out/one/sft/train.json" "$out/two/sft/train.json" <<'PY'
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:3])
ok = two.get("ranks") == 2 and abs(one["train_loss"] - two["train_loss"]) <= 1e-3 * abs(one["train_loss"])
print(("ok" if ok else "FAILED") + f" one process: loss {one['train_loss']:.6f}, {one['tokens_per_s']:.0f} tokens/s;"
      f" {two.get('ranks')} ranks: loss {two['train_loss']:.6f}, {two['tokens_per_s']:.0f} tokens/s")
PY
  ) || verdict="FAILED no train.json (see $out/one.log, $out/rank0.log, $out/rank1.log)"
  result nccl-ranks "${verdict%% *}" "${verdict#* }"
else
  result nccl-ranks skipped "one GPU: NCCL puts each rank on a GPU of its own"
fi

# 5. The paper preset's LoRA SFT on a random 1B LLaMA in bf16: pwab against transformers + PEFT.
if "$python" -c 'import transformers, peft, trl, datasets' 2>/dev/null; then
  if PYTHONPATH=test/ecosystem "$python" bench/ecosystem/trl_sft_speed.py --pwab "$pwab" --work "$out/lora-1b" \
       --shape 1b --preset paper --device cuda --tasks "$tasks" --json "$out/lora-1b.json"; then
    result lora-1b ok "$("$python" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(f"pwab {d["pwab"]["steps_per_s"]:.3f} steps/s, TRL + PEFT {d["trl"]["steps_per_s"]:.3f}: {d["pwab_over_trl"]:.2f}x")' "$out/lora-1b.json")"
  else
    result lora-1b FAILED "bench/ecosystem/trl_sft_speed.py"
  fi
else
  result lora-1b skipped "$python has no transformers/peft/trl/datasets: scripts/ecosystem/install.sh core"
fi
echo "== the log: $out/gpu-check.log"
exit $failed
