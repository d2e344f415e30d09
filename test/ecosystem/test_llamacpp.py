"""llama.cpp beside pwab (issue 39; bench/ecosystem/generate_speed.py --llamacpp): the benchmark's conversion to GGUF
and its batched greedy decoding (bench/ecosystem/llamacpp_worker.py) compute what transformers computes on the same
random LLaMA, so that the speed figures compare the same computation: every token llama.cpp picks is the argmax of
transformers' logits on llama.cpp's own sequence, up to the two libraries' float rounding (llama.cpp's float32
logits differ from transformers' by about 5e-3 on this model, its float16 ones by about 1.5e-2, so a near-tie may
go either way), and most whole continuations are transformers' own.

The llamacpp environment is opt-in (scripts/ecosystem/install.sh llamacpp compiles llama.cpp from PyPI's source
package): without it every test here skips, printing the install command, even in CI. Runs with the core
environment's interpreter (transformers, the reference side) and calls the llamacpp one as a subprocess."""

import json
import os
import subprocess
import tempfile
import unittest

import torch

import tiny_models

SOURCE = os.environ.get("PWAB_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORKER = os.path.join(SOURCE, "bench", "ecosystem", "llamacpp_worker.py")
INSTALL = os.path.join(SOURCE, "scripts", "ecosystem", "install.sh")
ROOT = os.environ.get("PWAB_ECOSYSTEM_SCRATCH") or tempfile.mkdtemp()


def llamacpp_python():
    if subprocess.run(["bash", INSTALL, "--check", "llamacpp"], capture_output=True).returncode != 0:
        return None
    root = subprocess.run(["bash", INSTALL, "--path"], capture_output=True, text=True).stdout.strip()
    return os.path.join(root, "llamacpp", "bin", "python")


PYTHON = llamacpp_python()
SKIP = "llamacpp environment not installed (opt-in: scripts/ecosystem/install.sh llamacpp)"


def worker(*args):
    done = subprocess.run([PYTHON, WORKER, *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"llamacpp_worker {' '.join(map(str, args))} failed:\n{done.stderr[-3000:]}")
    return done.stdout


@unittest.skipIf(PYTHON is None, SKIP)
class LlamaCpp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(ROOT, "base")
        # Grouped-query heads (4 query, 2 key/value) so that the rotary reordering of both projections is checked.
        cls.model, cls.tokenizer = tiny_models.make_llama(cls.dir, hidden=64, layers=2, heads=4, kv_heads=2,
                                                          intermediate=128, seed=11, vocab_size=400,
                                                          exact_tokenizer=True)
        # Sharper logits than the random init's, so that greedy tokens do not hang on float rounding.
        with torch.no_grad():
            cls.model.lm_head.weight.mul_(40.0)
        cls.model.save_pretrained(cls.dir, safe_serialization=True)
        prompts = ["I want a red kettle for my kitchen.", "Recommend something based on my history.",
                   "search_product_by_query wireless headphones", "The user bought B0 products before: title"]
        cls.ids = [[cls.tokenizer.bos_token_id] + cls.tokenizer(p, add_special_tokens=False)["input_ids"]
                   for p in prompts]
        cls.new_tokens = 12
        cls.expected = []
        with torch.no_grad():
            for ids in cls.ids:
                out = cls.model.generate(torch.tensor([ids]), max_new_tokens=cls.new_tokens, do_sample=False,
                                         num_beams=1, eos_token_id=cls.tokenizer.eos_token_id,
                                         pad_token_id=cls.tokenizer.pad_token_id)
                row = out[0, len(ids):].tolist()
                if cls.tokenizer.eos_token_id in row:
                    row = row[:row.index(cls.tokenizer.eos_token_id)]
                cls.expected.append(row)
        cls.prompts = os.path.join(ROOT, "ids.json")
        with open(cls.prompts, "w") as f:
            json.dump(cls.ids, f)

    def generate(self, dtype, batch):
        gguf = os.path.join(ROOT, f"base-{dtype}.gguf")
        if not os.path.exists(gguf):
            worker("convert", "--model", self.dir, "--out", gguf, "--dtype", dtype)
        out = json.loads(worker("generate", "--gguf", gguf, "--prompts", self.prompts, "--batch", batch,
                                "--new-tokens", self.new_tokens, "--threads", 2))
        self.assertEqual(out["generated_tokens"], sum(len(r) for r in out["ids"]))
        self.assertGreater(out["generate_seconds"], 0)
        return out["ids"]

    def assert_greedy_under_transformers(self, rows, tolerance):
        """Each row: every token is within `tolerance` of the best of transformers' logits at its position (on the
        prompt and llama.cpp's earlier tokens), and a row shorter than --new-tokens ended where transformers' EOS
        logit is as close to the best; and at least 3 of the 4 rows are transformers' own continuation."""
        self.assertEqual(len(rows), len(self.ids))
        eos = self.tokenizer.eos_token_id
        for ids, row in zip(self.ids, rows):
            with torch.no_grad():
                logits = self.model(torch.tensor([ids + row])).logits[0]
            picks = row + ([eos] if len(row) < self.new_tokens else [])
            for k, token in enumerate(picks):
                at = logits[len(ids) + k - 1]
                self.assertGreaterEqual(float(at[token]), float(at.max()) - tolerance,
                                        f"row {ids}: token {k} ({token}) is not transformers' greedy pick")
        self.assertGreaterEqual(sum(r == e for r, e in zip(rows, self.expected)), 3, (rows, self.expected))

    def test_f32_one_at_a_time_is_transformers_greedy(self):
        self.assert_greedy_under_transformers(self.generate("f32", 1), 0.02)

    def test_f32_in_one_batch_is_transformers_greedy(self):
        rows = self.generate("f32", 4)
        self.assert_greedy_under_transformers(rows, 0.02)
        self.assertEqual(rows, self.generate("f32", 1))  # batching changes nothing on llama.cpp's side

    def test_f16_is_transformers_greedy_within_its_rounding(self):
        self.assert_greedy_under_transformers(self.generate("f16", 4), 0.06)

    def test_a_model_that_is_not_llama_is_refused(self):
        bad = os.path.join(ROOT, "not-llama")
        os.makedirs(bad, exist_ok=True)
        with open(os.path.join(self.dir, "config.json")) as f:
            config = json.load(f)
        config["model_type"] = "mistral"
        with open(os.path.join(bad, "config.json"), "w") as f:
            json.dump(config, f)
        for name in ("tokenizer.json", "model.safetensors"):
            os.symlink(os.path.join(self.dir, name), os.path.join(bad, name))
        done = subprocess.run([PYTHON, WORKER, "convert", "--model", bad, "--out", os.path.join(ROOT, "x.gguf")],
                              capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("only 'llama' is converted", done.stderr)


if __name__ == "__main__":
    unittest.main()
