"""pwab.rl's OpenRLHF agent file and pwab's remote reward endpoint against the real OpenRLHF (the `openrlhf`
environment: openrlhf 0.11.2, transformers 5.15, ray, torch; no vLLM, DeepSpeed or flash-attn) and a real
`pwab serve` on the mini synthetic dataset (docs/rl-engines.md, "OpenRLHF").

The code that runs is OpenRLHF's own, called as its rollout actor calls it (openrlhf/trainer/ray/vllm_engine.py,
RolloutRayActor; openrlhf/utils/agent.py):

- the rows of `python3 -m pwab.rl.dataset` become (prompt, label) pairs through OpenRLHF's PromptDataset, with the
  tiny model's chat template (tiny_models.py), as --data.input_key prompt --data.label_key label
  --data.apply_chat_template does;
- `_load_agent_executor` loads python/pwab/rl/openrlhf_agent.py by its path (--train.agent_func_path), and the
  actor's generate_responses -> MultiTurnAgentExecutor.execute -> generate plays whole pwab episodes: reset,
  steps until done, the observations tokenized into the context, the rewards summed with .item();
  SamplesGenerator._process_response_into_experience then turns the result into the Experience PPO trains on;
- SingleTurnAgentExecutor (what --reward.remote_url selects) posts to pwab's /v1/reward with its own HTTP client;
- errors are errors on the agent path: an unknown task or an unreachable server fails the rollout.

Not run: vLLM and Ray. vllm_engine.py imports vllm at its top, and vLLM cannot be installed here (its wheels
need CUDA and pin another torch), so a shim module provides the names it and samples_generator.py import
(`vllm.__version__`, `vllm.inputs.TokensPrompt`, `vllm.utils.random_uuid`, `vllm.SamplingParams`, the last a
plain object with the two fields an executor reads and writes: max_tokens, logprobs). The actor's vLLM engine
(`self.llm`, an AsyncLLMEngine) is a scripted generator that yields fixed texts as the tiny tokenizer's token ids;
the actor is not started as a Ray actor, its methods run in this process.
"""

import asyncio
import copy
import gc
import importlib
import json
import os
import subprocess
import sys
import types
import unittest
import uuid

import pwab
from pwab.rl import config as rl_config

import tiny_models
from episode_world import REVIEW, client, good_search, review_task, scratch, server, sessions
from episode_world import hermes as _hermes

_state = {}
AGENT_FILE = os.path.join(os.path.dirname(os.path.abspath(pwab.__file__)), "rl", "openrlhf_agent.py")


def hermes(name, arguments):
    """A Hermes tool call written on one line."""
    return _hermes(name, arguments, newlines=False)


def tokenizer():
    if "tokenizer" not in _state:
        # exact: decode(encode(text)) == text, as with a chat model's tokenizer, which OpenRLHF's remote reward
        # relies on (the server finds the prompt again at the start of the decoded prompt + response)
        _state["tokenizer"] = tiny_models.make_tokenizer(scratch("tokenizer"), exact=True)
    return _state["tokenizer"]


class SamplingParams:
    """vllm.SamplingParams as OpenRLHF uses it in an executor: it reads logprobs and sets max_tokens."""

    def __init__(self, max_tokens=None, logprobs=None):
        self.max_tokens, self.logprobs = max_tokens, logprobs


def install_vllm_shim():
    """The names vllm_engine.py and samples_generator.py import from vllm, and nothing else (vLLM itself cannot be
    installed here)."""
    if "vllm" in sys.modules:
        return
    vllm = types.ModuleType("vllm")
    vllm.__version__ = "0.0.0+pwab-shim"
    vllm.SamplingParams = SamplingParams
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = dict  # a TypedDict in vLLM: calling it makes a dict
    utils = types.ModuleType("vllm.utils")
    utils.random_uuid = lambda: uuid.uuid4().hex
    vllm.inputs, vllm.utils = inputs, utils
    sys.modules.update({"vllm": vllm, "vllm.inputs": inputs, "vllm.utils": utils})


def vllm_engine_module():
    install_vllm_shim()
    return importlib.import_module("openrlhf.trainer.ray.vllm_engine")


class ScriptedVllm:
    """The actor's vLLM engine (self.llm): generate(prompt, sampling_params, request_id) is an async generator of
    RequestOutput objects. It answers each call with the next text of the script chosen by the prompt's request
    text, as token ids of the tiny tokenizer ending with <|im_end|> (a chat model's end of turn)."""

    def __init__(self, tokenizer, scripts):
        self.tokenizer, self.scripts, self.requests = tokenizer, scripts, []

    async def generate(self, prompt, sampling_params, request_id):
        self.requests.append((prompt, copy.copy(vars(sampling_params)), request_id))
        context = self.tokenizer.decode(prompt["prompt_token_ids"])
        key = next(k for k in self.scripts if k in context)
        script = self.scripts[key]
        done = sum(1 for answer in script if answer in context)  # the turns already in this trajectory's context
        text = script[min(done, len(script) - 1)] + "<|im_end|>"
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        output = types.SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)
        yield types.SimpleNamespace(outputs=[output])


def rollout_actor(executor, tokenizer, scripts):
    """RolloutRayActor's instance without Ray or vLLM: its executor (as __init__ makes it) and a scripted engine."""
    module = vllm_engine_module()
    cls = module.RolloutRayActor.__ray_metadata__.modified_class
    actor = object.__new__(cls)
    actor.executor = executor
    actor.llm = ScriptedVllm(tokenizer, scripts)
    actor._mm_pad_token_ids = None
    return actor


def prompts_and_labels(rows):
    """OpenRLHF's PromptDataset over the rows: --data.input_key prompt --data.label_key label
    --data.apply_chat_template."""
    from openrlhf.datasets.prompts_dataset import PromptDataset

    data = types.SimpleNamespace(input_key="prompt", label_key="label", apply_chat_template=True,
                                 image_key="images")
    strategy = types.SimpleNamespace(args=types.SimpleNamespace(data=data), is_rank_0=lambda: False)
    dataset = PromptDataset(rows, tokenizer(), strategy)
    return [(dataset[i][1], dataset[i][2]) for i in range(len(dataset))]


def row_of(task, track="single"):
    run = subprocess.run([sys.executable, "-m", "pwab.rl.dataset", "--url", server().url, "--split", "train",
                          "--out", "-", "--history-items", "0", "--offset", task.split("/")[1], "--limit", "1",
                          "--track", track], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    row = json.loads(run.stdout.splitlines()[0])
    assert row["label"] == task
    return row


class OpenRlhfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.url = server().url
        os.environ["PWAB_URL"] = cls.url  # as `ray job submit --runtime-env-json` sets it for the rollout workers

    @classmethod
    def tearDownClass(cls):
        os.environ.pop("PWAB_URL", None)
        os.environ.pop("PWAB_TRACK", None)

    def setUp(self):
        self.sessions_before = sessions()

    def assertSessionsBack(self):
        self.assertEqual(sessions(), self.sessions_before, "an episode was left open on the server")

    def run_actor(self, actor, prompt, label, max_length=2048, num_samples=1):
        return asyncio.run(actor.generate_responses(prompt=prompt, label=label, sampling_params=SamplingParams(),
                                                    max_length=max_length, hf_tokenizer=tokenizer(),
                                                    num_samples=num_samples))

    def test_agent_loader_runs_the_agent_file(self):
        from openrlhf.utils.agent import AgentExecutorBase, AgentInstanceBase, MultiTurnAgentExecutor

        module = vllm_engine_module()
        executor = module._load_agent_executor(AGENT_FILE)
        self.assertIsInstance(executor, MultiTurnAgentExecutor)
        self.assertIsInstance(executor, AgentExecutorBase)
        self.assertTrue(issubclass(executor.agent_instance_cls, AgentInstanceBase))

        task, query, reward = good_search()
        other, review_reward = review_task()
        (prompt, label), (other_prompt, other_label) = prompts_and_labels([row_of(task), row_of(other)])
        self.assertEqual(label, task)
        good = hermes("search_product_by_query", {"query": query})
        review = hermes("add_product_review", {"review": REVIEW})
        scripts = {  # a product's details first (the episode goes on), then the answer that ends it
            row_of(task)["prompt"][1]["content"]: [hermes("get_product_details_by_asin", {"asin": "B000"}), good],
            row_of(other)["prompt"][1]["content"]: [review]}
        actor = rollout_actor(executor, tokenizer(), scripts)
        results = self.run_actor(actor, prompt, label, num_samples=2)
        self.assertEqual(len(results), 2)  # n samples of one prompt: an instance (an episode) each
        for result in results:
            self.assertAlmostEqual(result["reward"], reward, places=6)  # sum of float32 tensors' .item()
            self.assertAlmostEqual(result["reward"], client().reward(task, completion=good)["reward"], places=6)
            self.assertAlmostEqual(result["scores"], reward)
            self.assertEqual(len(result["action_ranges"]), 2)
            text = tokenizer().decode(result["observation_tokens"])
            self.assertTrue(text.startswith(prompt))
            self.assertIn("<|im_start|>user\n", text[len(prompt):])  # the observation, in the feedback template
            self.assertEqual(set(result["extra_logs"]), {"pwab_function_acc", "pwab_result_acc"})
            self.assertEqual(result["extra_logs"]["pwab_function_acc"], 1.0)
        self.assertEqual(len(actor.llm.requests), 4)
        self.assertSessionsBack()

        (result,) = self.run_actor(actor, other_prompt, other_label)
        expected = client().reward(other_label, completion=review)
        self.assertAlmostEqual(result["reward"], expected["reward"], places=6)
        self.assertAlmostEqual(result["reward"], review_reward, places=6)
        self.assertEqual(len(result["action_ranges"]), 1)

        # what PPO trains on: OpenRLHF's SamplesGenerator turns the response into an Experience
        install_vllm_shim()
        from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

        experience = SamplesGenerator._process_response_into_experience(None, results[0], max_len=2048)
        self.assertAlmostEqual(experience.rewards.item(), reward, places=6)
        self.assertAlmostEqual(experience.info["pwab_function_acc"].item(), 1.0)
        self.assertEqual(int(experience.action_mask.sum()),
                         sum(end - start for start, end in results[0]["action_ranges"]))
        self.assertSessionsBack()

    def test_multi_turn_track_and_cut_episodes(self):
        task, query, reward = good_search()
        os.environ["PWAB_TRACK"] = "multi"
        try:
            executor = vllm_engine_module()._load_agent_executor(AGENT_FILE)
            row = row_of(task, track="multi")
            ((prompt, label),) = prompts_and_labels([row])
            good = hermes("search_product_by_query", {"query": query})
            scripts = {row["prompt"][1]["content"]: ["Which brand do you like?", good, hermes("stop", {})]}
            actor = rollout_actor(executor, tokenizer(), scripts)
            # room for search results in the context (many tokens of the tiny vocabulary)
            (result,) = self.run_actor(actor, prompt, label, max_length=32768)
        finally:
            os.environ.pop("PWAB_TRACK")
        self.assertEqual(len(result["action_ranges"]), 3)
        self.assertAlmostEqual(result["reward"], reward, places=6)
        self.assertSessionsBack()

        # the token budget (max_length) runs out after the first turn: OpenRLHF stops and drops the instance, and
        # the instance's finalizer ends the unfinished episode
        first = tokenizer().encode(scripts[row["prompt"][1]["content"]][0] + "<|im_end|>", add_special_tokens=False)
        budget = len(tokenizer().encode(prompt, add_special_tokens=False)) + len(first) + 2
        os.environ["PWAB_TRACK"] = "multi"
        try:
            actor = rollout_actor(executor, tokenizer(), scripts)
            (cut,) = self.run_actor(actor, prompt, label, max_length=budget)
        finally:
            os.environ.pop("PWAB_TRACK")
        self.assertEqual(len(cut["action_ranges"]), 1)
        self.assertEqual(cut["reward"], 0.0)
        gc.collect()
        self.assertSessionsBack()

    def test_remote_reward_client_posts_to_pwab(self):
        """--reward.remote_url http://HOST:PORT/v1/reward: the actor's SingleTurnAgentExecutor generates, decodes
        prompt + response and posts {query, prompts, labels} with its own HTTP client; pwab scores the response."""
        from openrlhf.utils.agent import SingleTurnAgentExecutor

        install_vllm_shim()
        from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

        task, query, reward = good_search()
        review, review_reward = review_task()
        third = next(f"train/{i}" for i in range(3) if f"train/{i}" not in (task, review))
        rows = [row_of(task), row_of(review), row_of(third)]
        pairs = prompts_and_labels(rows)
        answers = [hermes("search_product_by_query", {"query": query}),
                   hermes("add_product_review", {"review": REVIEW}),
                   hermes("get_recommendations_by_history", {"product_sequence": ["B000000"]})]
        scripts = {row["prompt"][1]["content"]: [answer] for row, answer in zip(rows, answers)}
        # train_ppo_ray.py splits --reward.remote_url on commas into a list; the actor passes it on
        executor = SingleTurnAgentExecutor([self.url + "/v1/reward"])
        actor = rollout_actor(executor, tokenizer(), scripts)
        rewards = []
        for (prompt, label), answer in zip(pairs, answers):
            (result,) = self.run_actor(actor, prompt, label)
            expected = client().reward(label, completion=answer)
            # the answer of one server, as OpenRLHF's own reward server (openrlhf.cli.serve_rm) gives it: lists,
            # one entry per query posted, which the executor keeps as they are
            self.assertEqual(result["reward"], [expected["reward"]])
            self.assertEqual(result["scores"], [min(1.0, max(0.0, expected["reward"]))])
            self.assertEqual(result["extra_logs"]["function_acc"], [expected["function_acc"]])
            experience = SamplesGenerator._process_response_into_experience(None, result, max_len=2048)
            rewards.append(experience.rewards.flatten().tolist())
        self.assertEqual(len(actor.llm.requests), 3)
        self.assertAlmostEqual(rewards[0][0], reward, places=6)
        self.assertAlmostEqual(rewards[1][0], review_reward, places=6)
        self.assertEqual(rewards[2], [0.0])

    def test_errors_are_errors(self):
        """On the agent path an unknown task or an unreachable server fails the rollout (OpenRLHF's
        MultiTurnAgentExecutor lets the error through). On the --reward.remote_url path OpenRLHF itself catches
        every reward error, logs it and leaves the sample's reward None; pwab answers an unknown label with 404."""
        from openrlhf.utils.agent import SingleTurnAgentExecutor

        executor = vllm_engine_module()._load_agent_executor(AGENT_FILE)
        row = row_of("train/0")
        ((prompt, _),) = prompts_and_labels([row])
        scripts = {row["prompt"][1]["content"]: [hermes("search_product_by_query", {"query": "kettle"})]}
        actor = rollout_actor(executor, tokenizer(), scripts)
        with self.assertRaises(pwab.NotFound):
            self.run_actor(actor, prompt, "train/999999")
        with self.assertRaisesRegex(ValueError, "label"):
            self.run_actor(actor, prompt, "")
        os.environ["PWAB_URL"] = "http://127.0.0.1:9"
        rl_config.configure(retries=0, timeout=2)
        try:
            with self.assertRaises(Exception) as caught:
                self.run_actor(actor, prompt, "train/0")
            self.assertNotIsInstance(caught.exception, AssertionError)
            self.assertIn("127.0.0.1:9", str(caught.exception))
        finally:
            os.environ["PWAB_URL"] = self.url
            rl_config.configure(retries=None, timeout=None)
        self.assertSessionsBack()

        with self.assertRaises(pwab.NotFound):  # what pwab answers OpenRLHF's post for an unknown label
            client().reward("train/999999", completion="x")
        single = rollout_actor(SingleTurnAgentExecutor([self.url + "/v1/reward"]), tokenizer(), scripts)
        (result,) = self.run_actor(single, prompt, "train/999999")
        self.assertIsNone(result["reward"])  # OpenRLHF's own handling: logged, no reward


if __name__ == "__main__":
    unittest.main()
