#!/usr/bin/python3
"""PyTorch-eager anchor for pwab's SFT and DPO training steps (bench/puma/train_speed_bench.cpp).

The same LLaMA-shaped decoder as src/llama (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU), the same
rows (prompt + target token ids, written by the benchmark), the same batch, padding to each batch's longest row,
loss on target tokens only, AdamW (HF defaults), gradient clipping 1.0. Written as a plain, idiomatic PyTorch loop,
the way a researcher would write it; Debian's python3-torch is the same libtorch 1.13 that pwab links.

    eager_sft.py ROWS.json --mode sft|dpo --hidden H --layers L --heads A --kv-heads K --ffn F --vocab V \
                 --batch B --steps N [--threads T]

ROWS.json: {"rows": [[prompt ids], [target ids]], ...} for sft; {"pairs": [[prompt], [chosen], [rejected]], ...}
for dpo. Prints one JSON line: steps, seconds, tokens, tokens_per_s, steps_per_s, final_loss.
"""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F


class RMSNorm(torch.nn.Module):
    def __init__(self, width, eps=1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Layer(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.head = heads, kv_heads, hidden // heads
        self.q_proj = torch.nn.Linear(hidden, heads * self.head, bias=False)
        self.k_proj = torch.nn.Linear(hidden, kv_heads * self.head, bias=False)
        self.v_proj = torch.nn.Linear(hidden, kv_heads * self.head, bias=False)
        self.o_proj = torch.nn.Linear(heads * self.head, hidden, bias=False)
        self.gate_proj = torch.nn.Linear(hidden, ffn, bias=False)
        self.up_proj = torch.nn.Linear(hidden, ffn, bias=False)
        self.down_proj = torch.nn.Linear(ffn, hidden, bias=False)
        self.input_layernorm = RMSNorm(hidden)
        self.post_attention_layernorm = RMSNorm(hidden)

    def forward(self, x, cos, sin, bias):
        b, n, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, n, self.heads, self.head).transpose(1, 2)
        k = self.k_proj(h).view(b, n, self.kv_heads, self.head).transpose(1, 2)
        v = self.v_proj(h).view(b, n, self.kv_heads, self.head).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head) + bias
        out = torch.softmax(scores, dim=-1) @ v
        x = x + self.o_proj(out.transpose(1, 2).reshape(b, n, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(torch.nn.Module):
    def __init__(self, vocab, hidden, layers, heads, kv_heads, ffn):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, hidden)
        self.layers = torch.nn.ModuleList(Layer(hidden, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.lm_head = torch.nn.Linear(hidden, vocab, bias=False)
        head = hidden // heads
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, head, 2).float() / head)))
        for p in self.parameters():
            if p.dim() > 1:
                torch.nn.init.normal_(p, std=0.02)

    def forward(self, ids, mask):
        b, n = ids.shape
        positions = (mask.cumsum(1) - 1).clamp_min(0)
        freqs = positions.float().unsqueeze(-1) * self.inv_freq
        angles = torch.cat((freqs, freqs), dim=-1).unsqueeze(1)
        cos, sin = angles.cos(), angles.sin()
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        allowed = causal.unsqueeze(0) & mask.bool().unsqueeze(1)
        bias = torch.zeros(b, 1, n, n).masked_fill(~allowed.unsqueeze(1), torch.finfo(torch.float32).min)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, bias)
        return self.lm_head(self.norm(x))


def batch(rows, pad):
    length = max(len(p) + len(t) for p, t in rows)
    ids = torch.full((len(rows), length), pad, dtype=torch.long)
    mask = torch.zeros(len(rows), length, dtype=torch.long)
    labels = torch.full((len(rows), length), -100, dtype=torch.long)
    for r, (p, t) in enumerate(rows):
        seq = p + t
        ids[r, : len(seq)] = torch.tensor(seq)
        mask[r, : len(seq)] = 1
        labels[r, len(p) : len(seq)] = torch.tensor(t)
    return ids, mask, labels


def token_logprobs(model, ids, mask, labels):
    logits = model(ids, mask)[:, :-1]
    targets = labels[:, 1:]
    logp = torch.log_softmax(logits, -1).gather(2, targets.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return logp, (targets != -100).float()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows")
    ap.add_argument("--mode", default="sft", choices=["sft", "dpo"])
    for name, default in [("hidden", 64), ("layers", 2), ("heads", 4), ("kv-heads", 2), ("ffn", 172),
                          ("vocab", 2000), ("batch", 8), ("steps", 100), ("threads", 0)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--lr", type=float, default=1e-3)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    data = json.load(open(a.rows))
    model = Llama(a.vocab, a.hidden, a.layers, a.heads, a.kv_heads, a.ffn)
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    pad = 2
    items = data["rows"] if a.mode == "sft" else data["pairs"]
    # rows in a fresh random order every epoch, as a shuffling DataLoader (and pwab's loop) visits them: the rows are
    # stored function examples first, and an unshuffled loop would time batches of short, equally long rows
    shuffle = torch.Generator().manual_seed(1)
    order = []
    tokens, loss_value, start = 0, 0.0, time.perf_counter()
    for step in range(a.steps):
        while len(order) < a.batch:
            order += torch.randperm(len(items), generator=shuffle).tolist()
        chunk, order = [items[i] for i in order[: a.batch]], order[a.batch :]
        if a.mode == "sft":
            ids, mask, labels = batch([(p, t) for p, t in chunk], pad)
            logp, m = token_logprobs(model, ids, mask, labels)
            loss = -(logp * m).sum() / m.sum().clamp_min(1)
        else:
            rows = [(p, c) for p, c, _ in chunk] + [(p, r) for p, _, r in chunk]
            ids, mask, labels = batch(rows, pad)
            logp, m = token_logprobs(model, ids, mask, labels)
            seq = (logp * m).sum(1)
            n = len(chunk)
            # the reference log-probabilities are cached in pwab; a constant here costs the same
            margin = (seq[:n] - seq[n:]) - 0.0
            loss = -F.logsigmoid(0.1 * margin).mean()
        tokens += int(mask.sum())
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        loss_value = loss.item()
    seconds = time.perf_counter() - start
    print(json.dumps({"steps": a.steps, "seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds,
                      "steps_per_s": a.steps / seconds, "final_loss": loss_value,
                      "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
