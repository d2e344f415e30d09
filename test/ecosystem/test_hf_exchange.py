"""Hugging Face exchange with the real libraries (issue 37 item 3; docs/llama.md, docs/tokenizer.md).

- transformers loads the models pwab saves (a from-scratch `pwab puma sft`, and the merged model of a LoRA run on a
  transformers-made base) and computes pwab's logits: fp32, max |difference| <= 1e-5 at every position;
- PEFT loads the LoRA adapter pwab trains, and pwab (`pwab lm logits|score|generate --adapter`) loads adapters that
  PEFT made and that TRL's SFTTrainer trained: the same logits;
- pwab's tokenizer.json reader gives the ids of Hugging Face's fast tokenizer on the same file, and its
  tokenizer.model reader those of PyPI's sentencepiece and of transformers' conversion of the file.

Everything is tiny (tiny_models.py) and made here; pwab is the binary CTest names (PWAB_BINARY)."""

import json
import os
import shutil
import tempfile
import unittest

import torch

import tiny_models
from pwab_cli import binary, pwab

TOLERANCE = 1e-5
PROMPTS = [
    "I want a red kettle for my kitchen.",
    "<|im_start|>user\nFind me running shoes, size 42 <tool_call> ok<|im_end|>\n<|im_start|>assistant\n",
    "Search results follow: B0 products, rating 5 — très bien, 很好 🎧",
]


def jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def pwab_logits(model, prompts, adapter=None):
    """pwab's ids (BOS added) and next-token logits of each prompt, as tensors."""
    scratch = tempfile.mkdtemp(dir=ROOT)
    args = ["lm", "logits", "--model", model, "--prompts", jsonl(os.path.join(scratch, "p.jsonl"),
                                                                  [{"prompt": p} for p in prompts])]
    if adapter:
        args += ["--adapter", adapter]
    out = []
    for line in pwab(*args).splitlines():
        row = json.loads(line)
        logits = torch.tensor(row["logits"], dtype=torch.float32)
        assert logits.shape == (len(row["ids"]), row["vocab"]), logits.shape
        out.append((row["ids"], logits))
    assert len(out) == len(prompts)
    return out


def hf_logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0].float()


def load_hf(directory):
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()


ROOT = None
BASE = None  # a tiny LlamaForCausalLM + tokenizer.json made by transformers


def setUpModule():
    global ROOT, BASE
    binary()
    ROOT = tempfile.mkdtemp(prefix="hf-exchange-", dir=os.environ.get("PWAB_ECOSYSTEM_SCRATCH"))
    BASE = os.path.join(ROOT, "base")
    tiny_models.make_llama(BASE, seed=3)


def tearDownModule():
    if ROOT:
        shutil.rmtree(ROOT, ignore_errors=True)


class Logits(unittest.TestCase):
    def assert_same_logits(self, hf_model, pwab_rows, what):
        worst = 0.0
        for ids, logits in pwab_rows:
            theirs = hf_logits(hf_model, ids)
            self.assertEqual(theirs.shape, logits.shape, what)
            worst = max(worst, (theirs - logits).abs().max().item())
        print(f"  {what}: max |logit difference| {worst:.3g} over {sum(len(i) for i, _ in pwab_rows)} positions")
        self.assertLessEqual(worst, TOLERANCE, what)
        return worst


class TransformersModels(Logits):
    def test_transformers_base_in_pwab(self):
        """The base transformers wrote: pwab's forward pass gives its logits, and pwab reads its tokenizer.json into
        the same ids."""
        rows = pwab_logits(BASE, PROMPTS)
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(BASE)
        for prompt, (ids, _) in zip(PROMPTS, rows):
            self.assertEqual(ids, [tok.bos_token_id] + tok(prompt, add_special_tokens=False)["input_ids"], prompt)
        self.assert_same_logits(load_hf(BASE), rows, "transformers base read by pwab")

    def test_batched_generation_and_its_stats(self):
        """`pwab lm generate --batch` over prompts of different lengths writes what transformers' generate writes
        for the same batch (left-padded, greedy), and `--stats` counts the prompt and generated tokens
        (bench/ecosystem/generate_speed.py times with it)."""
        import subprocess
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(BASE, padding_side="left")
        scratch = tempfile.mkdtemp(dir=ROOT)
        prompts = jsonl(os.path.join(scratch, "p.jsonl"), [{"prompt": p} for p in PROMPTS])
        done = subprocess.run([binary(), "lm", "generate", "--model", BASE, "--prompts", prompts, "--batch", "3",
                               "--max-new-tokens", "12", "--stats"], capture_output=True, text=True, timeout=600)
        self.assertEqual(done.returncode, 0, done.stderr)
        mine = [json.loads(line)["completions"][0] for line in done.stdout.splitlines()]
        stats = json.loads(done.stderr.strip().splitlines()[-1])
        ids = [[tok.bos_token_id] + tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
        width = max(map(len, ids))
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        batch = torch.tensor([[pad] * (width - len(i)) + i for i in ids])
        mask = torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in ids])
        with torch.no_grad():
            out = load_hf(BASE).generate(input_ids=batch, attention_mask=mask, max_new_tokens=12, do_sample=False,
                                         eos_token_id=tok.eos_token_id, pad_token_id=pad)
        generated = 0
        for row, text in zip(out[:, width:].tolist(), mine):
            if tok.eos_token_id in row:
                row = row[:row.index(tok.eos_token_id)]  # pwab counts the tokens written, EOS left out
            generated += len(row)
            self.assertEqual(text, tok.decode(row, skip_special_tokens=True))
        self.assertEqual(stats["prompts"], len(PROMPTS))
        self.assertEqual(stats["prompt_tokens"], sum(map(len, ids)))
        self.assertEqual(stats["generated_tokens"], generated)
        self.assertGreater(stats["generate_seconds"], 0)
        self.assertGreater(stats["load_seconds"], 0)
        self.assertAlmostEqual(stats["generated_tokens_per_s"], generated / stats["generate_seconds"], places=6)

    def test_pwab_trained_model_in_transformers(self):
        """A model pwab trained from scratch and saved (`pwab puma sft`, tiny preset: its own sentencepiece
        tokenizer, all weights trained) loads in transformers with pwab's logits."""
        out = puma_run("scratch")
        model_dir = os.path.join(out, "sft", "model")
        self.assertTrue(os.path.exists(os.path.join(model_dir, "model.safetensors")), os.listdir(model_dir))
        self.assert_same_logits(load_hf(model_dir), pwab_logits(model_dir, PROMPTS), "pwab puma sft (tiny) model")


class Adapters(Logits):
    def test_pwab_lora_in_peft(self):
        """`pwab puma sft --preset paper --base-model BASE` trains a LoRA (PEFT layout, merged model beside it): PEFT loads the
        adapter onto the transformers base and gives pwab's logits; transformers loads the merged model too."""
        from peft import PeftModel
        # The paper preset is the one that fine-tunes a given base with LoRA (docs/puma.md); its MiniLM and LLM labels
        # are beside the point here, hence --accept-deviations. A high rate makes the few steps move the adapter.
        out = puma_run("lora", "--base-model", BASE, "--preset", "paper", "--accept-deviations", "--sft-lr", 0.03,
                       "--grad-accum", 4)
        adapter = os.path.join(out, "sft", "adapter")
        with open(os.path.join(adapter, "adapter_config.json")) as f:
            self.assertEqual(json.load(f)["peft_type"], "LORA")
        peft_model = PeftModel.from_pretrained(load_hf(BASE), adapter).eval()
        # The adapter must have moved away from its zero start, or the comparison would prove nothing.
        lora_b = [p for n, p in peft_model.named_parameters() if "lora_B" in n]
        self.assertTrue(lora_b and any(p.abs().max().item() > 0 for p in lora_b))
        rows = pwab_logits(BASE, PROMPTS, adapter=adapter)
        self.assert_same_logits(peft_model, rows, "pwab LoRA adapter in PEFT")
        merged = os.path.join(out, "sft", "model")
        self.assert_same_logits(load_hf(merged), pwab_logits(merged, PROMPTS), "pwab merged LoRA model in transformers")

    def test_peft_adapter_in_pwab(self):
        """A PEFT LoRA (random, non-zero B, modules_to_save on lm_head) saved by PEFT loads
        in pwab: logits, `lm score` and greedy `lm generate` equal PEFT's."""
        from peft import LoraConfig, get_peft_model
        torch.manual_seed(11)
        base = load_hf(BASE)
        config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                                "up_proj", "down_proj"],
                            modules_to_save=["lm_head"], init_lora_weights=False, lora_dropout=0.0)
        model = get_peft_model(base, config).eval()
        with torch.no_grad():  # make the saved copy of lm_head differ from the base's
            for n, p in model.named_parameters():
                if "modules_to_save" in n:
                    p.add_(0.05 * torch.randn_like(p))
        adapter = os.path.join(ROOT, "peft-adapter")
        model.save_pretrained(adapter)
        rows = pwab_logits(BASE, PROMPTS, adapter=adapter)
        self.assert_same_logits(model, rows, "PEFT adapter read by pwab")
        self.check_score_and_generate(model, adapter)

    def test_trl_trained_adapter_in_pwab(self):
        """TRL's SFTTrainer trains a LoRA for a few steps; pwab loads what it saved and gives PEFT's logits."""
        from datasets import Dataset
        from peft import LoraConfig, PeftModel
        from transformers import AutoTokenizer
        from trl import SFTConfig, SFTTrainer
        tok = AutoTokenizer.from_pretrained(BASE)
        data = Dataset.from_list([{"prompt": p, "completion": c} for p, c in [
            ("Find me running shoes", " search_product_by_query"), ("Recommend something", " get_recommendations_by_history"),
            ("Write a review", " add_product_review"), ("I want a red kettle", " search_product_by_query")]])
        out = os.path.join(ROOT, "trl")
        args = SFTConfig(output_dir=out, max_steps=3, per_device_train_batch_size=2, learning_rate=5e-2,
                         logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, seed=0, bf16=False,
                         fp16=False)
        trainer = SFTTrainer(model=load_hf(BASE), args=args, train_dataset=data, processing_class=tok,
                             peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0,
                                                    task_type="CAUSAL_LM"))
        trainer.train()
        adapter = os.path.join(out, "adapter")
        trainer.save_model(adapter)
        model = PeftModel.from_pretrained(load_hf(BASE), adapter).eval()
        lora_b = [p for n, p in model.named_parameters() if "lora_B" in n]
        self.assertTrue(any(p.abs().max().item() > 0 for p in lora_b), "TRL's steps left the adapter at zero")
        self.assert_same_logits(model, pwab_logits(BASE, PROMPTS, adapter=adapter), "TRL-trained adapter in pwab")
        self.check_score_and_generate(model, adapter)

    def check_score_and_generate(self, model, adapter):
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(BASE)
        prompt, completion = PROMPTS[0], " search_product_by_query"
        score = json.loads(pwab("lm", "score", "--model", BASE, "--adapter", adapter, "--prompt", prompt,
                                "--completion", completion))
        p_ids = [tok.bos_token_id] + tok(prompt, add_special_tokens=False)["input_ids"]
        t_ids = tok(completion, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        logp = torch.log_softmax(hf_logits(model, p_ids + t_ids), dim=-1)
        theirs = sum(logp[len(p_ids) - 1 + i, t].item() for i, t in enumerate(t_ids))
        self.assertEqual(score["tokens"], len(t_ids))
        self.assertAlmostEqual(score["logprob"], theirs, delta=1e-4)
        text = pwab("lm", "generate", "--model", BASE, "--adapter", adapter, "--prompt", prompt,
                    "--max-new-tokens", 6).rstrip("\n")
        with torch.no_grad():
            gen = model.generate(input_ids=torch.tensor([p_ids]), attention_mask=torch.ones(1, len(p_ids), dtype=torch.long),
                                 max_new_tokens=6, do_sample=False, eos_token_id=tok.eos_token_id,
                                 pad_token_id=tok.pad_token_id)
        self.assertEqual(text, tok.decode(gen[0, len(p_ids):], skip_special_tokens=True))


TEXTS = [
    "I want a red kettle for my kitchen.",
    "",
    " leading space and  two spaces",
    "new\nlines\n\nand\ttabs",
    "Écoutez: très bien, naïve café",
    "中文的评论：很好用，推荐！",
    "emoji 🎧🔥👍🏽 and a ZWJ family 👨‍👩‍👧",
    "<|im_start|>user\nsearch <tool_call>{\"name\": \"x\"}</tool_call><|im_end|>",
    "literal <s> and </s> inside text",
    "B0ABC12345, rating 5/5 (2023-01-01) [x] {y} _z_ ~!@#$%^&*",
    "Search results follow: " * 40,
]


class Tokenizers(unittest.TestCase):
    def test_tokenizer_json_ids(self):
        """pwab's tokenizer.json BPE gives the ids of transformers' fast tokenizer (tokenizers), with the directory's
        special-token defaults and bare."""
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(BASE)
        path = jsonl(os.path.join(ROOT, "texts.jsonl"), [{"text": t} for t in TEXTS])
        ours = [json.loads(line)["ids"] for line in pwab("lm", "tokenize", "--model", BASE, "--texts", path).splitlines()]
        bare = [json.loads(line)["ids"] for line in
                pwab("lm", "tokenize", "--model", BASE, "--texts", path, "--bare").splitlines()]
        for text, a, b in zip(TEXTS, ours, bare):
            self.assertEqual(a, tok(text)["input_ids"], text)
            self.assertEqual(b, tok(text, add_special_tokens=False)["input_ids"], text)
        self.assertEqual(len(ours), len(TEXTS))

    def test_tokenizer_json_with_bos(self):
        """LLaMA-2's layout: a TemplateProcessing post-processor that prepends <s> in tokenizer.json (what
        transformers applies) and add_bos_token true in tokenizer_config.json (what pwab reads): the same ids."""
        from transformers import AutoTokenizer
        d = os.path.join(ROOT, "bos")
        shutil.copytree(BASE, d)
        with open(os.path.join(d, "tokenizer_config.json")) as f:
            config = json.load(f)
        config["add_bos_token"] = True
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(config, f)
        with open(os.path.join(d, "tokenizer.json")) as f:
            spec = json.load(f)
        bos = {"SpecialToken": {"id": "<s>", "type_id": 0}}
        spec["post_processor"] = {
            "type": "TemplateProcessing", "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, bos, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [spec["model"]["vocab"]["<s>"]], "tokens": ["<s>"]}}}
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            json.dump(spec, f)
        tok = AutoTokenizer.from_pretrained(d)
        path = jsonl(os.path.join(ROOT, "texts-bos.jsonl"), [{"text": t} for t in TEXTS])
        ours = [json.loads(line)["ids"] for line in pwab("lm", "tokenize", "--model", d, "--texts", path).splitlines()]
        self.assertEqual(len(ours), len(TEXTS))
        for text, a in zip(TEXTS, ours):
            self.assertEqual(a, tok(text)["input_ids"], text)
            self.assertEqual(a[0], tok.bos_token_id)


class SentencePieceFiles(unittest.TestCase):
    """tokenizer.model files: pwab (sentencepiece 0.1.97 built from source) gives the ids of PyPI's sentencepiece on
    the same file, for the tokenizer `pwab puma` trains and for models sentencepiece's own trainer makes (BPE, and
    unigram with NFKC normalization); and the ids transformers gives from the file (its conversion to a fast
    tokenizer, LLaMA-2's tokenizer_config.json) except where that conversion departs from sentencepiece itself
    (SENTENCEPIECE_ONLY; docs/tokenizer.md)."""

    # transformers' Metaspace adds the "▁" prefix only to a text that does not already begin with whitespace, and
    # it splits "<s>"/"</s>" written in the text as special tokens; sentencepiece (and pwab) do neither.
    SENTENCEPIECE_ONLY = {" leading space and  two spaces", "literal <s> and </s> inside text"}

    @classmethod
    def setUpClass(cls):
        import sentencepiece as spm
        cls.spm = spm
        cls.dir = os.path.join(ROOT, "spm")
        os.makedirs(cls.dir, exist_ok=True)
        cls.texts = jsonl(os.path.join(cls.dir, "texts.jsonl"), [{"text": t} for t in TEXTS])
        corpus = os.path.join(cls.dir, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(tiny_models.CORPUS + TEXTS))
        # hard_vocab_limit off: the small corpus decides how many pieces it can fill.
        common = dict(input=corpus, minloglevel=2, num_threads=1, byte_fallback=True, hard_vocab_limit=False)
        spm.SentencePieceTrainer.train(model_prefix=os.path.join(cls.dir, "unigram"), model_type="unigram",
                                       vocab_size=500, **common)
        spm.SentencePieceTrainer.train(model_prefix=os.path.join(cls.dir, "bpe"), model_type="bpe", vocab_size=600,
                                       **common)

    def pwab_ids(self, model, bare):
        args = ["lm", "tokenize", "--model", model, "--texts", self.texts] + (["--bare"] if bare else [])
        ours = [json.loads(line)["ids"] for line in pwab(*args).splitlines()]
        self.assertEqual(len(ours), len(TEXTS))
        return ours

    def assert_sentencepiece_ids(self, model_file):
        sp = self.spm.SentencePieceProcessor(model_file=model_file)
        for text, ours in zip(TEXTS, self.pwab_ids(model_file, bare=True)):
            self.assertEqual(ours, sp.encode(text), f"{model_file}: {text!r}")
        return sp

    def test_pwab_trained_tokenizer_model(self):
        """`pwab puma sft` (tiny preset) trains its tokenizer.model: sentencepiece's ids, and transformers' ids from a
        directory with that file and LLaMA-2's tokenizer_config.json."""
        model = os.path.join(puma_run("scratch"), "sft", "model", "tokenizer.model")
        self.assertTrue(os.path.exists(model))
        self.assert_sentencepiece_ids(model)
        from transformers import AutoTokenizer
        d = os.path.join(self.dir, "llama2-layout")
        os.makedirs(d, exist_ok=True)
        shutil.copy(model, os.path.join(d, "tokenizer.model"))
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "add_eos_token": False,
                       "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "legacy": False}, f)
        tok = AutoTokenizer.from_pretrained(d)
        sp = self.spm.SentencePieceProcessor(model_file=model)
        compared = 0
        for bare in (False, True):
            for text, ours in zip(TEXTS, self.pwab_ids(d, bare)):
                theirs = tok(text, add_special_tokens=not bare)["input_ids"]
                if text in self.SENTENCEPIECE_ONLY:
                    self.assertEqual(ours, ([] if bare else [sp.bos_id()]) + sp.encode(text), text)
                    continue
                self.assertEqual(ours, theirs, f"bare={bare}: {text!r}")
                compared += 1
        self.assertEqual(compared, 2 * (len(TEXTS) - len(self.SENTENCEPIECE_ONLY)))

    def test_sentencepiece_trained_bpe(self):
        self.assert_sentencepiece_ids(os.path.join(self.dir, "bpe.model"))

    def test_sentencepiece_trained_unigram_with_nfkc(self):
        sp = self.assert_sentencepiece_ids(os.path.join(self.dir, "unigram.model"))
        self.assertEqual(sp.encode("ﬁ"), sp.encode("fi"))  # the NFKC rule of sentencepiece's default is in force


_PUMA = {}


def mini_data():
    if "data" not in _PUMA:
        data = os.path.join(ROOT, "mini")
        pwab("data", "synth", "--out", data, "--scale", "mini", "--seed", "4")
        pwab("rec", "train", data, "--epochs", "1", "--eval-every", "0")
        _PUMA["data"] = data
    return _PUMA["data"]


def puma_run(name, *extra):
    """`pwab puma sft` on the mini dataset, a few tasks, one epoch (the model pwab itself trains); once per name."""
    out = os.path.join(ROOT, "puma-" + name)
    if ("run", name) not in _PUMA:
        pwab("puma", "sft", "--data", mini_data(), "--out", out, "--embedder", "hashing", "--train-limit", 6,
             "--test-limit", 2, "--sft-epochs", 1, *extra, timeout=900)
        _PUMA[("run", name)] = out
    return out


if __name__ == "__main__":
    unittest.main()
