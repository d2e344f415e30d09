"""What the side-by-side benchmarks of bench/ecosystem/ share (issue 39, item 2; docs/performance.md): the model
shapes, the common options, threads pinned the same for pwab and the library beside it, the mini dataset and the
random base model both sides start from, and how a result is printed."""

import argparse
import json
import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(SOURCE, "python"), os.path.join(SOURCE, "test", "ecosystem")]

# The model shapes: the tiny preset's decoder (hidden 128, 4 layers, 4 query / 2 key-value heads, SwiGLU 344), one
# of about 100 M parameters, and TinyLlama-1.1B's (0.97 B with the test vocabulary; scripts/gpu-check.sh). The
# vocabulary is the test tokenizer's.
SHAPES = {
    "tiny": dict(hidden=128, layers=4, heads=4, kv_heads=2, intermediate=344),
    "100m": dict(hidden=768, layers=14, heads=12, kv_heads=12, intermediate=2048),
    "1b": dict(hidden=2048, layers=22, heads=32, kv_heads=4, intermediate=5632),
}


def run(cmd, env=None):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def options(description):
    """The options every benchmark takes: --pwab, --work, --threads, --json; add its own and call setup()."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pwab", required=True, help="the pwab binary (build/pytorch/pwab or build/release/pwab)")
    ap.add_argument("--work", required=True, help="a scratch folder, reused between runs")
    ap.add_argument("--threads", type=int, default=2, help="threads on both sides")
    ap.add_argument("--json", help="write the result here too")
    return ap


def python_malloc():
    """The malloc of this process, where the Python side (TRL, transformers) runs: "tcmalloc" when it was preloaded
    (LD_PRELOAD=libtcmalloc_minimal.so.4, as pwab's executables link it: docs/dependencies.md), else "glibc"."""
    try:
        with open("/proc/self/maps") as f:
            return "tcmalloc" if "libtcmalloc" in f.read() else "glibc"
    except OSError:
        return "unknown"


def blas_core_type():
    """The Makefile's OpenBLAS core type for this CPU: SkylakeX with AVX-512, Haswell with AVX2, else none."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(f.read().split())
    except OSError:
        return None
    return "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None


class Setup:
    """Parsed options, the absolute pwab and work paths, and the thread settings, pinned the same for pwab (through
    its environment) and for torch in this process, printed with every result."""

    def __init__(self, ap):
        self.args = ap.parse_args()
        self.pwab, self.work = os.path.abspath(self.args.pwab), os.path.abspath(self.args.work)
        os.makedirs(self.work, exist_ok=True)
        n = str(self.args.threads)
        self.threads = {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n}
        # A pwab built on Debian's libtorch multiplies with OpenBLAS, which misdetects the CPU on some VMs and then
        # runs twice as slow (docs/dependencies.md); the Makefile sets the core type for `make bench`, and so does
        # this for a script run by hand, unless the environment already has one. PyTorch's MKL ignores it.
        core = os.environ.get("OPENBLAS_CORETYPE") or blas_core_type()
        if core:
            self.threads["OPENBLAS_CORETYPE"] = core
        os.environ.update(self.threads)
        import torch
        torch.set_num_threads(self.args.threads)

    def mini_dataset(self):
        """The mini synthetic dataset (seed 5) with its recommender, made once in the work folder."""
        data = os.path.join(self.work, "mini")
        if not os.path.exists(os.path.join(data, ".pwab-rec")):
            run([self.pwab, "data", "synth", "--out", data, "--scale", "mini", "--seed", "5"])
            run([self.pwab, "rec", "train", data, "--epochs", "1", "--eval-every", "0"])
        return data

    def base_model(self, shape):
        """A random LLaMA of the shape written with transformers (seed 3, the test tokenizer), made once."""
        import tiny_models
        base = os.path.join(self.work, "base-" + shape)
        if not os.path.exists(os.path.join(base, "model.safetensors")):
            tiny_models.make_llama(base, seed=3, vocab_size=2000, exact_tokenizer=True, **SHAPES[shape])
        return base

    def report(self, out):
        """Prints the result (with the threads and this process's malloc) and writes it to --json."""
        out.setdefault("threads", self.threads)
        out.setdefault("python_malloc", python_malloc())
        print(json.dumps(out, indent=1))
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump(out, f, indent=1)
