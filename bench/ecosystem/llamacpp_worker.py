"""llama.cpp's side of bench/ecosystem/generate_speed.py --llamacpp (issue 39, item 2). Runs with the opt-in
llamacpp environment's interpreter (scripts/ecosystem/install.sh llamacpp; docs/ecosystem.md), which has
llama-cpp-python (llama.cpp compiled at install), gguf and safetensors, and no torch.

  python llamacpp_worker.py convert --model DIR --out FILE.gguf --dtype f32|f16
      Writes the Hugging Face LLaMA in DIR (config.json, model.safetensors, tokenizer.json) as a GGUF file.
  python llamacpp_worker.py generate --gguf FILE --prompts IDS.json --batch B --new-tokens N --threads T
      Greedy decoding with llama.cpp's KV cache from token-id prompts, B sequences at a time in one llama_batch
      (llama.cpp's own batched decoding, one sequence id per prompt), stopping each at its end-of-generation token.
      Prints one JSON object: the generated ids (EOG left out), the count, and the seconds of loading and generating.

The conversion is written here from GGUF's documented layout (the `gguf` package's constants name the keys and the
tensors): the same weights, float32 or float16 for the matrices (norms stay float32, as llama.cpp expects). One
fact from llama.cpp's converter carries over: llama.cpp's LLaMA applies rotary embeddings to adjacent pairs of a
head's dimensions, Hugging Face's to its two halves, so the rows of the query and key projections are reordered
per head (half i and half i + d/2 become neighbours). The vocabulary goes in as a sentencepiece one with token types
(control, byte, normal): the benchmark hands llama.cpp token ids, so llama.cpp's tokenizer is never used."""

import argparse
import ctypes
import json
import os
import sys
import time


def interleave_rotary_rows(weight, heads):
    """Rows of a [heads * d, in] projection reordered within each head from Hugging Face's halves layout
    (0..d/2-1 | d/2..d-1) to llama.cpp's pairs (0, d/2, 1, d/2+1, ...)."""
    out_dim = weight.shape[0]
    d = out_dim // heads
    return weight.reshape(heads, 2, d // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def convert(model_dir, out, dtype):
    import numpy as np
    import gguf
    from safetensors.numpy import load_file

    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(model_dir, "tokenizer.json")) as f:
        tok = json.load(f)
    if cfg.get("model_type") != "llama":
        raise SystemExit(f"{model_dir}/config.json: model_type {cfg.get('model_type')!r}, only 'llama' is converted")
    weights = load_file(os.path.join(model_dir, "model.safetensors"))
    heads, kv_heads = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hidden, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
    head_dim = cfg.get("head_dim") or hidden // heads

    w = gguf.GGUFWriter(out, "llama")
    w.add_context_length(cfg.get("max_position_embeddings", 2048))
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(cfg.get("rms_norm_eps", 1e-6))
    w.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if dtype == "f32" else gguf.LlamaFileType.MOSTLY_F16)

    # The vocabulary: ids in order, from the BPE model's vocab and the added tokens.
    vocab = dict(tok["model"]["vocab"])
    special = {t["content"]: t["id"] for t in tok.get("added_tokens", [])}
    vocab.update(special)
    size = cfg["vocab_size"]
    tokens, types = [f"[PAD{i}]" for i in range(size)], [gguf.TokenType.UNUSED] * size
    for text, i in vocab.items():
        if i >= size:
            raise SystemExit(f"{model_dir}/tokenizer.json: token {text!r} has id {i}, beyond vocab_size {size}")
        tokens[i] = text
        if text in special:
            types[i] = gguf.TokenType.UNKNOWN if text == "<unk>" else gguf.TokenType.CONTROL
        elif len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
            types[i] = gguf.TokenType.BYTE
        else:
            types[i] = gguf.TokenType.NORMAL
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([-float(i) for i in range(size)])  # merge order stands in for sentencepiece scores
    w.add_token_types(types)
    for key, adder in (("bos_token_id", w.add_bos_token_id), ("eos_token_id", w.add_eos_token_id),
                       ("pad_token_id", w.add_pad_token_id)):
        if cfg.get(key) is not None:
            adder(cfg[key])
    if "<unk>" in special:
        w.add_unk_token_id(special["<unk>"])
    w.add_add_bos_token(False)

    def put(name, array, matrix):
        array = np.ascontiguousarray(array, dtype=np.float16 if (matrix and dtype == "f16") else np.float32)
        w.add_tensor(name, array)

    put("token_embd.weight", weights["model.embed_tokens.weight"], True)
    put("output_norm.weight", weights["model.norm.weight"], False)
    head = weights.get("lm_head.weight", weights["model.embed_tokens.weight"])
    put("output.weight", head, True)
    names = {"self_attn.o_proj": "attn_output", "self_attn.v_proj": "attn_v", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(layers):
        p = f"model.layers.{i}."
        put(f"blk.{i}.attn_norm.weight", weights[p + "input_layernorm.weight"], False)
        put(f"blk.{i}.ffn_norm.weight", weights[p + "post_attention_layernorm.weight"], False)
        put(f"blk.{i}.attn_q.weight", interleave_rotary_rows(weights[p + "self_attn.q_proj.weight"], heads), True)
        put(f"blk.{i}.attn_k.weight", interleave_rotary_rows(weights[p + "self_attn.k_proj.weight"], kv_heads), True)
        for hf, g in names.items():
            put(f"blk.{i}.{g}.weight", weights[p + hf + ".weight"], True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def generate(path, prompts, batch, new_tokens, threads):
    import llama_cpp as L

    quiet = L.llama_log_callback(lambda level, text, data: None)
    L.llama_log_set(quiet, ctypes.c_void_p())
    L.llama_backend_init()
    start = time.perf_counter()
    mparams = L.llama_model_default_params()
    model = L.llama_model_load_from_file(path.encode(), mparams)
    if not model:
        raise SystemExit(f"{path}: llama.cpp could not load it")
    vocab = L.llama_model_get_vocab(model)
    longest = max(len(p) for p in prompts) + new_tokens
    width = min(batch, len(prompts))
    cparams = L.llama_context_default_params()
    cparams.n_seq_max = width
    cparams.n_ctx = width * ((longest + 255) // 256 * 256)
    cparams.n_batch = max(512, sum(sorted(len(p) for p in prompts)[-width:]))
    cparams.n_ubatch = cparams.n_batch
    cparams.n_threads = threads
    cparams.n_threads_batch = threads
    ctx = L.llama_init_from_model(model, cparams)
    if not ctx:
        raise SystemExit(f"{path}: llama.cpp could not make a context")
    sampler = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
    L.llama_sampler_chain_add(sampler, L.llama_sampler_init_greedy())
    load_seconds = time.perf_counter() - start

    tokens_in = L.llama_batch_init(max(cparams.n_batch, width), 0, 1)

    def fill(entries):
        """entries: (token, position, sequence, wants logits)"""
        tokens_in.n_tokens = len(entries)
        for k, (t, pos, seq, out) in enumerate(entries):
            tokens_in.token[k], tokens_in.pos[k] = t, pos
            tokens_in.n_seq_id[k], tokens_in.seq_id[k][0] = 1, seq
            tokens_in.logits[k] = 1 if out else 0

    def decode():
        rc = L.llama_decode(ctx, tokens_in)
        if rc != 0:
            raise SystemExit(f"llama_decode returned {rc}")

    outputs, generated = [], 0
    start = time.perf_counter()
    for first in range(0, len(prompts), width):
        group = prompts[first:first + width]
        L.llama_memory_clear(L.llama_get_memory(ctx), True)
        entries, last = [], []
        for s, ids in enumerate(group):
            for pos, t in enumerate(ids):
                entries.append((t, pos, s, pos == len(ids) - 1))
            last.append(len(entries) - 1)
        fill(entries)
        decode()
        rows = [[] for _ in group]
        active = list(range(len(group)))
        where = {s: last[s] for s in active}
        while active:
            step = []
            for s in list(active):
                t = L.llama_sampler_sample(sampler, ctx, where[s])
                if L.llama_vocab_is_eog(vocab, t):
                    active.remove(s)
                    continue
                rows[s].append(t)
                if len(rows[s]) >= new_tokens:
                    active.remove(s)
                    continue
                step.append((t, len(group[s]) + len(rows[s]) - 1, s, True))
            if not step:
                break
            fill(step)
            decode()
            where = {s: k for k, (_, _, s, _) in enumerate(step)}
        outputs.extend(rows)
        generated += sum(len(r) for r in rows)
    seconds = time.perf_counter() - start
    L.llama_batch_free(tokens_in)
    L.llama_sampler_free(sampler)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return {"ids": outputs, "generated_tokens": generated, "generate_seconds": seconds,
            "load_seconds": load_seconds, "llama_cpp_python": L.__version__ if hasattr(L, "__version__") else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--model", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    g = sub.add_parser("generate")
    g.add_argument("--gguf", required=True)
    g.add_argument("--prompts", required=True, help="a JSON list of token-id lists")
    g.add_argument("--batch", type=int, required=True)
    g.add_argument("--new-tokens", type=int, required=True)
    g.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.command == "convert":
        convert(a.model, a.out, a.dtype)
    else:
        with open(a.prompts) as f:
            prompts = json.load(f)
        if not prompts or any(not p for p in prompts):
            raise SystemExit(f"{a.prompts}: no prompts, or an empty one")
        print(json.dumps(generate(a.gguf, prompts, a.batch, a.new_tokens, a.threads)))


if __name__ == "__main__":
    sys.exit(main())
