"""pwab's SFT beside TRL's SFTTrainer (transformers), on the same model, rows and settings (issue 39, item 2).

One run does both sides, one after the other, on the mini synthetic dataset:

  pwab   `pwab puma sft --base-model BASE` (the tiny preset's SFT settings: all weights, AdamW as Hugging Face's
         defaults, linear schedule with 5% warm-up, clip 1.0, batch 8, one epoch) on the first --tasks train tasks;
  TRL    SFTTrainer on the very rows pwab trained on (its data/ files with the preset's weights: each function
         example 4 times, each parameter example once), prompt-completion form, loss on the completion only, the
         same optimiser, schedule, clip, batch and epoch, no packing, padding to each batch's longest row.

BASE is a random LLaMA written with transformers (test/ecosystem/tiny_models.py: its tokenizer is trained there),
so both sides start from the same weights. Before timing it checks that both train the same thing: the untrained
model's loss on the rows (pwab `lm score` against transformers' forward), the trainable parameter counts, the
token counts; and after training it prints both sides' mean loss. Threads are pinned the same on both sides
(OMP_NUM_THREADS, torch.set_num_threads) and printed with the figures.

Run with the core environment's interpreter (docs/ecosystem.md):

  PYTHONPATH=test/ecosystem /opt/pwab/ecosystem/core/bin/python bench/ecosystem/trl_sft_speed.py \\
      --pwab build/release/pwab --work /tmp/trl-sft [--shape tiny|100m|1b] [--tasks 40] [--threads 2] [--json OUT]
      [--preset tiny|paper] [--device cpu|cuda]

pwab's executables allocate through tcmalloc (docs/dependencies.md); to give TRL the same allocator, run the whole
command under LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4. The result's "python_malloc" says
which one TRL had.

--preset paper trains a LoRA as the paper preset does (both sides: PEFT's layout, r16, alpha 32, no dropout);
--device cuda runs both on the GPU with bf16 weights (pwab --dtype bfloat16; transformers loads the model in
bfloat16 and trains under bf16 autocast, PEFT keeping the adapter in float32 as pwab does).
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import SHAPES, Setup, options, read_jsonl, run  # noqa: E402

# The presets' SFT settings (src/puma/presets.cpp) that both sides use: tiny (all weights) and paper (LoRA r16,
# alpha 32, on the seven projections, with full copies of the embeddings, output layer and norms: PEFT's
# modules_to_save; one row a micro-batch, 16 accumulated). function_weight: how often each function example
# enters the SFT data (the presets' sft_weights).
PRESETS = {
    "tiny": dict(lr=3e-3, warmup=0.05, batch=8, accumulation=1, max_length=1024, lora=False, function_weight=4),
    "paper": dict(lr=3e-4, warmup=0.1, batch=1, accumulation=16, max_length=1280, lora=True, function_weight=1),
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LORA_SAVED = ["embed_tokens", "lm_head", "input_layernorm", "post_attention_layernorm", "norm"]
CLIP = 1.0


def the_rows(pipeline, function_weight=4):
    """pwab's SFT rows, as its sft step builds them from data/ (the presets' integer weights)."""
    rows = []
    for e in read_jsonl(os.path.join(pipeline, "data", "function_train.jsonl")):
        rows += [{"prompt": e["prompt"], "completion": e["target"]}] * function_weight
    rows += [{"prompt": e["prompt"], "completion": e["target"]}
             for e in read_jsonl(os.path.join(pipeline, "data", "param_train.jsonl"))]
    return rows


def untrained_loss_transformers(model, tokenizer, rows):
    """Mean negative log-likelihood per completion token (EOS included) of `rows` under `model`."""
    import torch
    total, count = 0.0, 0
    with torch.no_grad():
        for r in rows:
            prompt = tokenizer(r["prompt"])["input_ids"]
            full = tokenizer(r["prompt"] + r["completion"])["input_ids"] + [tokenizer.eos_token_id]
            logits = model(torch.tensor([full])).logits[0].float()
            logp = torch.log_softmax(logits[:-1], dim=-1)
            target = torch.tensor(full[1:])
            picked = logp.gather(1, target[:, None])[:, 0][len(prompt) - 1:]
            total -= picked.sum().item()
            count += picked.numel()
    return total / count, count


def untrained_loss_pwab(pwab, base, rows, work):
    pairs = os.path.join(work, "score_pairs.jsonl")
    with open(pairs, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    scores = [json.loads(line) for line in run([pwab, "lm", "score", "--model", base, "--pairs", pairs]).splitlines()
              if line.strip()]
    return -sum(s["logprob"] for s in scores) / sum(s["tokens"] for s in scores), sum(s["tokens"] for s in scores)


def main():
    ap = options(__doc__)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--device", default="cpu")
    setup = Setup(ap)
    a, pwab, work = setup.args, setup.pwab, setup.work
    cfg = PRESETS[a.preset]
    gpu = a.device.startswith("cuda")
    LR, WARMUP, BATCH, MAX_LENGTH = cfg["lr"], cfg["warmup"], cfg["batch"], cfg["max_length"]
    import torch
    data, base = setup.mini_dataset(), setup.base_model(a.shape)

    # pwab: the whole sft step; its own train.json has the loop's seconds, steps, tokens and mean loss.
    pipeline = os.path.join(work, f"pwab-{a.shape}-{a.preset}-{a.tasks}")
    if os.path.exists(pipeline):
        run(["rm", "-rf", pipeline])
    run([pwab, "puma", "sft", "--data", data, "--out", pipeline, "--base-model", base, "--embedder", "hashing",
         "--preset", a.preset, "--accept-deviations", "--device", a.device,
         "--dtype", "bfloat16" if gpu else "float32", "--train-limit", a.tasks, "--test-limit", 2,
         "--sft-epochs", 1, "--sft-batch", BATCH, "--grad-accum", cfg["accumulation"], "--sft-lr", LR,
         "--max-length", MAX_LENGTH,
         # the tiny preset also trains multi-turn examples (puma/dialogue_data.h); the_rows() below are the function
         # and parameter rows, so pwab trains those alone here
         "--sft-weights", "dialogue=0"], env=dict(os.environ))
    with open(os.path.join(pipeline, "sft", "train.json")) as f:
        mine = json.load(f)
    rows = the_rows(pipeline, cfg["function_weight"])

    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    # pwab puts BOS before every prompt; the test tokenizer adds none unless asked.
    tokenizer = AutoTokenizer.from_pretrained(base, add_bos_token=True)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    check_rows = rows[:8]
    theirs_loss, theirs_tokens = untrained_loss_transformers(model, tokenizer, check_rows)
    pwab_loss, pwab_tokens = untrained_loss_pwab(pwab, base, check_rows, work)
    peft_config = None
    if cfg["lora"]:
        from peft import LoraConfig
        peft_config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=LORA_TARGETS,
                                 modules_to_save=LORA_SAVED, task_type="CAUSAL_LM")
    if gpu:
        model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16).to(a.device)

    # pwab's warm-up is floor(ratio × optimizer steps) (src/puma/model.cpp); transformers 5 takes it in steps.
    # SFTConfig's own defaults differ from TrainingArguments' in two ways that change what is computed, both set
    # back here to what pwab does: bf16 autocast (fp32 here: on a CPU without bf16 units it is emulated, ~20×
    # slower) and activation checkpointing (a second forward in every backward; pwab keeps activations).
    batches = (len(rows) + BATCH - 1) // BATCH
    warmup_steps = int(WARMUP * ((batches + cfg["accumulation"] - 1) // cfg["accumulation"]))
    args = SFTConfig(output_dir=os.path.join(work, "trl-out"), per_device_train_batch_size=BATCH,
                     gradient_accumulation_steps=cfg["accumulation"],
                     num_train_epochs=1, learning_rate=LR, lr_scheduler_type="linear", warmup_steps=warmup_steps,
                     max_grad_norm=CLIP, weight_decay=0.0, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
                     logging_steps=1, save_strategy="no", report_to=[], use_cpu=not gpu, seed=1,
                     max_length=MAX_LENGTH, packing=False, completion_only_loss=True, dataloader_num_workers=0,
                     disable_tqdm=True, bf16=gpu, fp16=False, activation_checkpointing=False)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                         peft_config=peft_config)
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    start = time.perf_counter()
    result = trainer.train()
    trl_seconds = time.perf_counter() - start
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]

    if gpu:
        torch.cuda.synchronize()
    out = {
        "shape": a.shape, "preset": a.preset, "device": a.device, "lora": cfg["lora"],
        "parameters": sum(p.numel() for p in model.parameters()), "trainable_trl": trainable,
        "trainable_pwab": mine.get("trainable_parameters"),
        "rows": len(rows), "torch": torch.__version__,
        "untrained_loss": {"pwab": pwab_loss, "transformers": theirs_loss,
                           "completion_tokens": {"pwab": pwab_tokens, "transformers": theirs_tokens}},
        "pwab": {"steps": mine["steps"], "seconds": mine["seconds"], "steps_per_s": mine["steps"] / mine["seconds"],
                 "tokens": mine["tokens"], "mean_loss": mine["train_loss"], "truncated_rows": mine["truncated_rows"]},
        "trl": {"bf16": args.bf16, "activation_checkpointing": args.activation_checkpointing,
                "steps": result.global_step, "seconds": trl_seconds, "steps_per_s": result.global_step / trl_seconds,
                "train_runtime": result.metrics.get("train_runtime"), "mean_loss": sum(losses) / len(losses)},
    }
    if out["trainable_pwab"] != trainable:  # the two sides must train the same tensors (issue 39's check)
        raise SystemExit(f"trainable parameters differ: pwab {out['trainable_pwab']}, TRL {trainable}")
    if mine["steps"] != result.global_step:  # and the same rows, so the same number of batches
        raise SystemExit(f"optimizer steps differ: pwab {mine['steps']}, TRL {result.global_step} ({len(rows)} rows)")
    out["pwab_over_trl"] = out["pwab"]["steps_per_s"] / out["trl"]["steps_per_s"]
    setup.report(out)

if __name__ == "__main__":
    main()
