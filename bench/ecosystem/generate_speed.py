"""pwab's sampling with a KV cache beside transformers' `generate`, on the same model and prompts (issue 39, item 2).

Both sides decode greedily, with their KV caches, the same random LLaMA (test/ecosystem/tiny_models.py, the tiny
preset's shape or one of about 100 M parameters) from the same PUMA prompts (the mini dataset's function prompts,
BOS first), up to --new-tokens tokens each, stopping at EOS; at batch 1 (the prompts one at a time) and at batch 32
(all at once; transformers pads on the left with an attention mask, pwab batches prompts of different lengths its
own way). The figure is generated tokens per second of generation, the prompt's forward included, the model's
loading not: pwab's from `pwab lm generate --stats`, transformers' from timing `model.generate` after one
warm-up call. Before timing it checks that both wrote the same continuations (greedy on the same weights) and
counts the tokens each generated. Threads are pinned the same on both sides and printed with the figures.

With --llamacpp, llama.cpp runs beside them in the same run (the opt-in llamacpp environment, which compiles
llama.cpp at install: scripts/ecosystem/install.sh llamacpp): the same weights converted to GGUF at float32 and at
float16 (bench/ecosystem/llamacpp_worker.py), the same token ids, greedy with llama.cpp's KV cache, one sequence
id per prompt in one llama_batch at batch 32, with the same threads; its continuations are checked against pwab's
too. Its figure is timed as pwab's: generation only, loading and context creation left out.

Run with the core environment's interpreter (docs/ecosystem.md):

  PYTHONPATH=test/ecosystem /opt/pwab/ecosystem/core/bin/python bench/ecosystem/generate_speed.py \\
      --pwab build/pytorch/pwab --work /tmp/gen-speed [--shape tiny|100m] [--new-tokens 64] [--repeat 3]
      [--threads 2] [--json OUT] [--llamacpp]
"""

import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import SHAPES, SOURCE, Setup, options, read_jsonl, run  # noqa: E402

BATCHES = {1: 8, 32: 32}  # batch → how many prompts are generated at it


def pwab_generate(pwab, base, prompts, batch, new_tokens, work):
    path = os.path.join(work, f"prompts-{len(prompts)}.jsonl")
    with open(path, "w") as f:
        for p in prompts:
            f.write(json.dumps({"prompt": p}) + "\n")
    done = subprocess.run([pwab, "lm", "generate", "--model", base, "--prompts", path, "--batch", str(batch),
                           "--max-new-tokens", str(new_tokens), "--stats"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pwab lm generate failed ({done.returncode}):\n{done.stderr[-3000:]}")
    stats = json.loads(done.stderr.strip().splitlines()[-1])
    texts = [json.loads(line)["completions"][0] for line in done.stdout.splitlines() if line.strip()]
    return texts, stats


def transformers_generate(model, tokenizer, prompts, batch, new_tokens):
    import torch
    texts, generated = [], 0
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(prompts), batch):
            enc = tokenizer(prompts[i:i + batch], return_tensors="pt", padding=True)
            out = model.generate(**enc, max_new_tokens=new_tokens, do_sample=False, num_beams=1,
                                 pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
            for row in out[:, enc["input_ids"].shape[1]:].tolist():
                if tokenizer.eos_token_id in row:  # counted as pwab counts: the tokens written, EOS left out
                    row = row[:row.index(tokenizer.eos_token_id)]
                generated += len(row)
                texts.append(tokenizer.decode(row, skip_special_tokens=True))
    return texts, generated, time.perf_counter() - start


WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llamacpp_worker.py")


def llamacpp_python():
    """The llamacpp environment's interpreter (scripts/ecosystem/install.sh llamacpp), or an error saying how to
    make it."""
    root = subprocess.run(["bash", os.path.join(SOURCE, "scripts", "ecosystem", "install.sh"), "--path"],
                          capture_output=True, text=True).stdout.strip()
    python = os.path.join(root, "llamacpp", "bin", "python")
    check = subprocess.run(["bash", os.path.join(SOURCE, "scripts", "ecosystem", "install.sh"), "--check", "llamacpp"],
                           capture_output=True, text=True)
    if check.returncode != 0 or not os.path.exists(python):
        raise SystemExit("--llamacpp needs the llamacpp environment: scripts/ecosystem/install.sh llamacpp "
                         f"(compiles llama.cpp; {check.stderr.strip()})")
    return python


def llamacpp_generate(python, gguf, ids, batch, new_tokens, threads, work):
    path = os.path.join(work, f"prompt-ids-{len(ids)}.json")
    with open(path, "w") as f:
        json.dump(ids, f)
    out = run([python, WORKER, "generate", "--gguf", gguf, "--prompts", path, "--batch", batch,
               "--new-tokens", new_tokens, "--threads", threads])
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = options(__doc__)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--llamacpp", action="store_true", help="llama.cpp too, at f32 and f16 (the llamacpp environment)")
    setup = Setup(ap)
    a, pwab, work = setup.args, setup.pwab, setup.work
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    data, base = setup.mini_dataset(), setup.base_model(a.shape)
    prepared = os.path.join(work, "prepared-" + a.shape)
    if not os.path.exists(os.path.join(prepared, "data", "function_train.jsonl")):
        run([pwab, "puma", "prepare", "--data", data, "--out", prepared, "--base-model", base, "--embedder", "hashing",
             "--train-limit", max(BATCHES.values()), "--test-limit", 2])
    prompts = [e["prompt"] for e in read_jsonl(os.path.join(prepared, "data", "function_train.jsonl"))]
    if len(prompts) < max(BATCHES.values()):
        raise SystemExit(f"{prepared}: {len(prompts)} prompts, fewer than {max(BATCHES.values())}")

    tokenizer = AutoTokenizer.from_pretrained(base, add_bos_token=True, padding_side="left")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32).eval()
    transformers_generate(model, tokenizer, prompts[:2], 2, 4)  # warm-up: first-call costs left out
    ggufs = {}
    if a.llamacpp:
        python = llamacpp_python()
        for dtype in ("f32", "f16"):
            ggufs[dtype] = os.path.join(work, f"base-{a.shape}-{dtype}.gguf")
            if not os.path.exists(ggufs[dtype]):
                run([python, WORKER, "convert", "--model", base, "--out", ggufs[dtype], "--dtype", dtype])

    out = {"shape": a.shape, "parameters": sum(p.numel() for p in model.parameters()), "new_tokens": a.new_tokens,
           "torch": torch.__version__, "batches": {}}
    for batch, count in BATCHES.items():
        asked = prompts[:count]
        mine, theirs = [], []
        for _ in range(a.repeat):
            texts_p, stats = pwab_generate(pwab, base, asked, batch, a.new_tokens, work)
            texts_t, generated_t, seconds_t = transformers_generate(model, tokenizer, asked, batch, a.new_tokens)
            mine.append(stats["generated_tokens"] / stats["generate_seconds"])
            theirs.append(generated_t / seconds_t)
        same = sum(p == t for p, t in zip(texts_p, texts_t))
        row = {"prompts": count, "prompt_tokens": stats["prompt_tokens"],
               "generated_tokens": {"pwab": stats["generated_tokens"], "transformers": generated_t},
               "same_continuations": f"{same}/{count}",
               "pwab_tokens_per_s": statistics.median(mine), "transformers_tokens_per_s": statistics.median(theirs),
               "runs": {"pwab": mine, "transformers": theirs}}
        row["pwab_over_transformers"] = row["pwab_tokens_per_s"] / row["transformers_tokens_per_s"]
        if ggufs:
            ids = [tokenizer(p)["input_ids"] for p in asked]
            for dtype, gguf in ggufs.items():
                runs = [llamacpp_generate(python, gguf, ids, batch, a.new_tokens, a.threads, work)
                        for _ in range(a.repeat)]
                texts_l = [tokenizer.decode(r, skip_special_tokens=True) for r in runs[-1]["ids"]]
                name = f"llamacpp_{dtype}"
                row["generated_tokens"][name] = runs[-1]["generated_tokens"]
                row[f"same_continuations_{name}"] = f"{sum(p == t for p, t in zip(texts_p, texts_l))}/{count}"
                row["runs"][name] = [r["generated_tokens"] / r["generate_seconds"] for r in runs]
                row[f"{name}_tokens_per_s"] = statistics.median(row["runs"][name])
                row[f"pwab_over_{name}"] = row["pwab_tokens_per_s"] / row[f"{name}_tokens_per_s"]
        out["batches"][str(batch)] = row
        print(f"batch {batch}: pwab {row['pwab_tokens_per_s']:.1f} tokens/s, transformers "
              f"{row['transformers_tokens_per_s']:.1f}: {row['pwab_over_transformers']:.2f}x "
              f"(same continuations {row['same_continuations']})", file=sys.stderr)
        for dtype in ggufs:
            name = f"llamacpp_{dtype}"
            print(f"batch {batch}: llama.cpp {dtype} {row[name + '_tokens_per_s']:.1f} tokens/s: pwab "
                  f"{row['pwab_over_' + name]:.2f}x (same continuations {row['same_continuations_' + name]})",
                  file=sys.stderr)
    setup.report(out)


if __name__ == "__main__":
    main()
