"""The attention of one decoding step, three ways, on PyTorch's CPU operators (issue 39; docs/performance.md,
"Sampling with a KV cache"): why src/llama/model.cpp folds grouped query heads into the fused attention's queries
when each row brings one new token.

For each batch size it builds a step's tensors as pwab's KV cache holds them (keys and values a narrowed view of a
longer buffer, an additive mask row) and times, after a warm-up, the mean of --calls calls of:
  grouped   scaled_dot_product_attention with enable_gqa (what pwab did before, and what transformers calls);
  folded    the query heads of each key/value head passed as that head's queries, no enable_gqa (what pwab does);
  matmul    scores by matmul, the mask added, softmax, matmul (pwab's path for 16-bit types and for libtorch 1.13).
It checks first that the three agree (largest difference printed). Threads are pinned as in the side-by-side
benchmarks. Run it with any PyTorch 2.x, e.g. the pinned core environment:

  /opt/pwab/ecosystem/core/bin/python bench/ecosystem/decode_attention.py [--rows 32 8 1] [--cached 230] [--repeat 3]
"""

import argparse
import json
import os
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[32, 8, 1], help="batch sizes (sequences decoding)")
    p.add_argument("--cached", type=int, default=230, help="positions in the cache, the new one included")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-width", type=int, default=32)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    if a.heads % a.kv_heads:
        raise SystemExit("--heads must be a multiple of --kv-heads")
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(a.threads)
    import torch  # after the thread variables, which it reads when it loads

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    groups, d, total = a.heads // a.kv_heads, a.head_width, a.cached
    scale = d ** -0.5
    sdpa = torch.nn.functional.scaled_dot_product_attention
    results = []
    for rows in a.rows:
        # The cache's buffers hold room for more positions than are filled (pwab reserves the new tokens up front).
        k = torch.randn(rows, a.kv_heads, total + 64, d).narrow(2, 0, total)
        v = torch.randn(rows, a.kv_heads, total + 64, d).narrow(2, 0, total)
        q = torch.randn(rows, a.heads, 1, d)
        mask = torch.zeros(rows, 1, 1, total)
        mask[rows // 2:, :, :, : total // 10] = torch.finfo(torch.float32).min  # some rows left-padded

        def grouped():
            return sdpa(q, k, v, attn_mask=mask, scale=scale, enable_gqa=True)

        def folded():
            return sdpa(q.reshape(rows, a.kv_heads, groups, d), k, v, attn_mask=mask, scale=scale).view(
                rows, a.heads, 1, d)

        def by_hand():
            scores = torch.matmul(q.reshape(rows, a.kv_heads, groups, d) * scale, k.transpose(-1, -2)) + mask
            return torch.matmul(torch.softmax(scores, -1), v).view(rows, a.heads, 1, d)

        ways = {"grouped": grouped, "folded": folded, "matmul": by_hand}
        reference = grouped()
        row = {"rows": rows, "largest_difference": {n: (f() - reference).abs().max().item() for n, f in ways.items()}}
        for name, f in ways.items():
            times = []
            for _ in range(a.repeat):
                for _ in range(20):
                    f()
                start = time.perf_counter()
                for _ in range(a.calls):
                    f()
                times.append((time.perf_counter() - start) / a.calls * 1e6)
            row[name + "_us"] = times
        results.append(row)
        print(f"rows {rows}: " + ", ".join(f"{n} {min(row[n + '_us']):.1f}-{max(row[n + '_us']):.1f} us"
                                           for n in ways) +
              f" (largest difference against grouped: {max(row['largest_difference'].values()):.1e})")
    print(json.dumps({"torch": torch.__version__, "threads": a.threads, "heads": a.heads, "kv_heads": a.kv_heads,
                      "head_width": d, "cached": total, "calls": a.calls, "results": results}, indent=1))


if __name__ == "__main__":
    main()
