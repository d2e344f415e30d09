"""`pwab lm serve` answers the official `openai` Python client (docs/llama.md "pwab lm serve"): chat completions
with tools, raw-text completions, logprobs with the most likely alternatives, several choices, and refusals that
surface as the client's own exception types. The model is a tiny random LLaMA that tiny_models.py saves;
transformers, on the same directory, checks that pwab renders a chat to the same prompt its chat template renders,
tokenizes it to the same ids, and reports the same log-probabilities for the tokens it drew and their most likely
alternatives."""

import os
import subprocess
import tempfile
import threading
import unittest

import openai
import torch

import tiny_models

BINARY = os.environ.get("PWAB_BINARY", "pwab")
TOOLS = [{"type": "function", "function": {
    "name": "search_product_by_query", "description": "Search products by a text query",
    "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "what to find"}},
                   "required": ["query"]}}}]


class LmServe:
    """`pwab lm serve --model DIR --port 0` as a process: its URL is the first line it prints."""

    def __init__(self, model_dir, name="tiny", token=None):
        env = dict(os.environ)
        if token:
            env["PWAB_SERVE_TOKEN"] = token
        self.process = subprocess.Popen([BINARY, "lm", "serve", "--model", model_dir, "--name", name, "--port", "0"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = []
        reader = threading.Thread(target=lambda: line.append(self.process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(120)
        if not line or not line[0].startswith("http"):
            self.process.kill()
            raise RuntimeError(f"pwab lm serve did not start: {self.process.stderr.read()[-2000:]}")
        self.url = line[0].strip()

    def stop(self):
        self.process.terminate()
        self.process.wait(30)
        self.process.stdout.close()
        self.process.stderr.close()


class OpenAIClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tiny-llama-", dir=os.environ.get("PWAB_ECOSYSTEM_SCRATCH"))
        cls.model, cls.tokenizer = tiny_models.make_llama(cls.dir)
        cls.served = LmServe(cls.dir)
        cls.client = openai.OpenAI(base_url=cls.served.url + "/v1", api_key="unused", max_retries=0, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.served.stop()

    def hf_ids(self, text):
        """The ids pwab's model reads for a prompt text: transformers' tokenization of the text, after BOS. (A
        PUMA model always reads BOS first, as it was trained, docs/llama.md "Chat format of pwab lm serve", even
        where the tokenizer's config says add_bos_token false, as this one does.)"""
        return [self.tokenizer.bos_token_id] + self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def hf_prompt_ids(self, messages, tools=None):
        text = self.tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
        return self.hf_ids(text)

    def hf_logprobs(self, prompt_ids, completion_ids):
        """transformers' log-probability of each completion token after the prompt (fp32, no temperature)."""
        ids = torch.tensor([prompt_ids + completion_ids])
        with torch.no_grad():
            logits = self.model(ids).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
        start = len(prompt_ids) - 1
        return [logp[start + i, t].item() for i, t in enumerate(completion_ids)], logp[start:start + len(completion_ids)]

    def test_models_lists_the_served_model(self):
        self.assertEqual([m.id for m in self.client.models.list()], ["tiny"])

    def test_chat_with_tools_renders_as_the_chat_template_and_reports_logprobs(self):
        messages = [
            {"role": "system", "content": "You help shoppers."},
            {"role": "user", "content": "Find me running shoes"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "search_product_by_query", "arguments": "{\"query\": \"running shoes\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "B01: trail runner, B02: road shoe"},
            {"role": "user", "content": "The second one, please."},
        ]
        r = self.client.chat.completions.create(model="tiny", messages=messages, tools=TOOLS, max_tokens=12,
                                                temperature=0, seed=1, logprobs=True, top_logprobs=5,
                                                extra_body={"return_token_ids": True})
        self.assertEqual(r.object, "chat.completion")
        choice = r.choices[0]
        self.assertEqual(choice.message.role, "assistant")
        self.assertIn(choice.finish_reason, ("stop", "length", "tool_calls"))
        extra = choice.model_extra
        # The prompt pwab rendered and tokenized is the one transformers' chat template gives, id for id.
        self.assertEqual(extra["prompt_token_ids"], self.hf_prompt_ids(messages, TOOLS))
        self.assertEqual(r.usage.prompt_tokens, len(extra["prompt_token_ids"]))
        ids = extra["token_ids"]
        self.assertEqual(len(ids), r.usage.completion_tokens)
        self.assertEqual([c.token for c in choice.logprobs.content], [f"token_id:{i}" for i in ids])
        # Greedy: each drawn token is transformers' argmax, with transformers' log-probability.
        expected, logp = self.hf_logprobs(extra["prompt_token_ids"], ids)
        for got, want in zip([c.logprob for c in choice.logprobs.content], expected):
            self.assertAlmostEqual(got, want, delta=1e-4)
        self.assertEqual(ids, logp.argmax(dim=-1).tolist())
        # Each position's 5 most likely tokens are transformers' top 5, with its log-probabilities.
        for position, entry in enumerate(choice.logprobs.content):
            values, top_ids = logp[position].topk(5)
            self.assertEqual([t.token for t in entry.top_logprobs], [f"token_id:{i}" for i in top_ids.tolist()])
            for got, want in zip([t.logprob for t in entry.top_logprobs], values.tolist()):
                self.assertAlmostEqual(got, want, delta=1e-4)
        # The text is the drawn ids decoded (special tokens left out), and it holds no parsable tool call.
        if not choice.message.tool_calls:
            self.assertEqual(choice.message.content, self.tokenizer.decode(ids, skip_special_tokens=True))

    def test_chat_choices_sampling_and_stop(self):
        messages = [{"role": "user", "content": "Recommend something based on my history."}]
        r = self.client.chat.completions.create(model="tiny", messages=messages, max_completion_tokens=6, n=3,
                                                temperature=1.0, seed=5)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2])
        again = self.client.chat.completions.create(model="tiny", messages=messages, max_completion_tokens=6, n=3,
                                                    temperature=1.0, seed=5)
        self.assertEqual([c.message.content for c in r.choices], [c.message.content for c in again.choices])
        text = r.choices[0].message.content
        if len(text) > 2:  # a stop text cuts the same draw where the stop text first begins
            stop = text[2:]
            cut = self.client.chat.completions.create(model="tiny", messages=messages, max_completion_tokens=6,
                                                      n=1, temperature=1.0, seed=5, stop=[stop])
            self.assertEqual(cut.choices[0].message.content, text[:text.find(stop)])
            self.assertEqual(cut.choices[0].finish_reason, "stop")

    def test_completions_with_logprobs_and_token_ids(self):
        prompt = "I want a red kettle for my kitchen."
        r = self.client.completions.create(model="tiny", prompt=prompt, max_tokens=5, temperature=0, logprobs=3,
                                           extra_body={"return_token_ids": True})
        self.assertEqual(r.object, "text_completion")
        choice = r.choices[0]
        extra = choice.model_extra
        self.assertEqual(extra["prompt_token_ids"], self.hf_ids(prompt))
        self.assertEqual(choice.logprobs.tokens, [f"token_id:{i}" for i in extra["token_ids"]])
        expected, logp = self.hf_logprobs(extra["prompt_token_ids"], extra["token_ids"])
        for got, want in zip(choice.logprobs.token_logprobs, expected):
            self.assertAlmostEqual(got, want, delta=1e-4)
        # logprobs=3: the 3 most likely tokens of each position (greedy: the drawn one is the first of them).
        for position, top in enumerate(choice.logprobs.top_logprobs):
            values, top_ids = logp[position].topk(3)
            self.assertEqual(set(top), {f"token_id:{i}" for i in top_ids.tolist()})
            for i, want in zip(top_ids.tolist(), values.tolist()):
                self.assertAlmostEqual(top[f"token_id:{i}"], want, delta=1e-4)
        self.assertEqual(choice.text, self.tokenizer.decode(extra["token_ids"], skip_special_tokens=True))

    def test_refusals_are_the_clients_exceptions(self):
        hi = [{"role": "user", "content": "hi"}]
        with self.assertRaises(openai.NotFoundError) as e:
            self.client.chat.completions.create(model="gpt-4o", messages=hi)
        self.assertIn("serves 'tiny'", str(e.exception))
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.chat.completions.create(model="tiny", messages=hi, top_logprobs=3)
        self.assertIn("top_logprobs", str(e.exception))
        with self.assertRaises(openai.BadRequestError):
            self.client.chat.completions.create(model="tiny", messages=hi, logprobs=True, top_logprobs=21)
        with self.assertRaises(openai.BadRequestError):
            self.client.chat.completions.create(model="tiny", messages=[{"role": "critic", "content": "x"}])
        with self.assertRaises(openai.BadRequestError):
            self.client.chat.completions.create(model="tiny", messages=hi, tool_choice="required", tools=TOOLS)
        with self.assertRaises(openai.BadRequestError):
            self.client.completions.create(model="tiny", prompt="a", max_tokens=0)

    def test_a_token_is_the_clients_api_key(self):
        served = LmServe(self.dir, token="s3cret")
        try:
            wrong = openai.OpenAI(base_url=served.url + "/v1", api_key="nope", max_retries=0)
            with self.assertRaises(openai.AuthenticationError):
                wrong.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}])
            right = openai.OpenAI(base_url=served.url + "/v1", api_key="s3cret", max_retries=0)
            r = right.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                              max_tokens=2)
            self.assertEqual(len(r.choices), 1)
        finally:
            served.stop()


if __name__ == "__main__":
    unittest.main()
