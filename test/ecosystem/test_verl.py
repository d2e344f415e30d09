"""pwab.rl's verl adapter against the real verl (the `verl` environment: verl 0.9.1, transformers 5.10, ray, torch;
no vLLM or SGLang) and a real `pwab serve` on the mini synthetic dataset (docs/rl-engines.md, "verl").

Every part of verl that runs without a GPU, a Ray cluster or an inference server runs here, as verl's trainer
wires it (verl/trainer/main_ppo.py, verl/experimental/agent_loop/agent_loop.py), from the trainer's own Hydra
config (verl/trainer/config/ppo_trainer.yaml) with the overrides docs/rl-engines.md shows:

- verl's dataset (create_rl_dataset -> RLHFDataset) reads the Parquet file `python3 -m pwab.rl.dataset` writes,
  with a tiny tokenizer (tiny_models.py) and the tool schemas of the tool YAML in its length filter;
- verl's tool registry (load_all_tools) builds PwabTool from the YAML `python3 -m pwab.rl.verl_adapter` prints;
- AgentLoopWorker.generate_sequences, verl's rollout worker, runs the rows: SingleTurnAgentLoop with the reward
  loop's naive manager calling compute_score (custom_reward_function loaded by verl), and ToolAgentLoop playing
  pwab episodes through PwabTool, verl's Hermes parser reading the tool calls, then compute_episode_score over the
  tool rewards verl collected. The scores verl puts in rm_scores equal pwab's own (/v1/reward);
- errors are errors: an unknown task or an unreachable server fails the rollout instead of scoring 0.

Not run (it needs GPUs or a cluster): the LLM. The worker's generation side (the `llm_client` that would talk to a
vLLM/SGLang server) is a scripted stand-in that returns fixed token ids, and the reward loop worker, a Ray actor
in training, is called in this process through a stand-in for its actor handle. Everything between them is verl's.
"""

import asyncio
import json
import os
import subprocess
import sys
import types
import unittest

import pwab
from pwab.rl import config as rl_config
from pwab.rl import verl_adapter

import tiny_models
from episode_world import REVIEW, client, good_search, hermes, review_task, scratch, server, sessions

_state = {}


def model_dir():
    """The tiny LLaMA and its tokenizer (ChatML, Hermes tool calls), saved once: verl reads its config.json and
    tokenizer from actor_rollout_ref.model.path."""
    if "model" not in _state:
        path = scratch("tiny-llama")
        tiny_models.make_llama(path, exact_tokenizer=True)  # decode(encode(text)) == text, as a chat model's
        _state["model"] = path
    return _state["model"]


def run_module(*args):
    """`python3 -m ...` in this environment, as a user runs the commands of docs/rl-engines.md."""
    run = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ))
    if run.returncode != 0:
        raise AssertionError(f"{args}: exit {run.returncode}\n{run.stderr}")
    return run.stdout


def tool_yaml():
    """pwab_tools.yaml, written by the documented command."""
    if "yaml" not in _state:
        path = os.path.join(scratch("tools"), "pwab_tools.yaml")
        with open(path, "w") as f:
            f.write(run_module("pwab.rl.verl_adapter", "--url", server().url, "--track", "single"))
        _state["yaml"] = path
    return _state["yaml"]


def parquet(name, extra_args=(), rows=None):
    """A Parquet file of training rows: written by `python3 -m pwab.rl.dataset --out X.parquet`, or (rows=...)
    rows edited by the test, written with the same function."""
    path = os.path.join(scratch("data"), name + ".parquet")
    if rows is None:
        run_module("pwab.rl.dataset", "--url", server().url, "--split", "train", "--out", path, "--history-items",
                   "2", *extra_args)
    else:
        from pwab.rl.dataset import write_parquet
        write_parquet(rows, path)
    return path


def row_of(task, verl_tools=False):
    """The row `python3 -m pwab.rl.dataset` writes for one train task (no history: short prompts)."""
    args = ["pwab.rl.dataset", "--url", server().url, "--split", "train", "--out", "-", "--history-items", "0",
            "--offset", task.split("/")[1], "--limit", "1"] + (["--verl-tools"] if verl_tools else [])
    row = json.loads(run_module(*args).splitlines()[0])
    assert row["task"] == task, row["task"]
    return row


def verl_config(*overrides):
    """verl's trainer config as main_ppo composes it (Hydra, ppo_trainer.yaml), with these overrides."""
    import verl.trainer
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    config_dir = os.path.join(os.path.dirname(verl.trainer.__file__), "config")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name="ppo_trainer", overrides=[
            f"actor_rollout_ref.model.path={model_dir()}",
            "actor_rollout_ref.rollout.name=vllm",  # named only: no server is started
            "actor_rollout_ref.rollout.prompt_length=2048",
            # room for a search result (up to 4096 characters, many tokens of the tiny vocabulary) in the context
            "actor_rollout_ref.rollout.response_length=8192",
            "data.max_prompt_length=2048",
            "data.filter_overlong_prompts_workers=1",
            "reward.num_workers=1",
            "reward.custom_reward_function.path=pkg://pwab.rl.verl_adapter",
            f"+reward.custom_reward_function.reward_kwargs.url={server().url}",
            *overrides])


class ScriptedLLM:
    """The generation side of AgentLoopWorker (its llm_client, an LLMServerClient talking to vLLM/SGLang in
    training), replaced: generate() answers each call of a trajectory with the next text of a fixed script, as
    token ids of the tiny tokenizer, ending with <|im_end|> as a chat model's turn does. The script is chosen by
    the prompt's request text, so trajectories running concurrently each get their own."""

    def __init__(self, tokenizer, scripts):
        self.tokenizer, self.scripts, self.calls = tokenizer, scripts, {}

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        prompt = self.tokenizer.decode(prompt_ids)
        key = next(k for k in self.scripts if k in prompt)
        turn = self.calls[(key, request_id)] = self.calls.get((key, request_id), -1) + 1
        text = self.scripts[key][min(turn, len(self.scripts[key]) - 1)]
        ids = self.tokenizer.encode(text + "<|im_end|>", add_special_tokens=False)
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids), stop_reason="completed")


class InProcessRewardHandle:
    """What AgentLoopWorker calls on a reward loop worker's Ray actor handle (compute_score.remote(data), awaited),
    served by a RewardLoopWorker in this process."""

    def __init__(self, worker):
        self.compute_score = types.SimpleNamespace(remote=worker.compute_score)


def rollout(config, rows_path, llm_scripts, indices=None):
    """verl's rollout of the rows of rows_path: the dataset, a DataProto batch as the trainer collates it, and
    AgentLoopWorker.generate_sequences with its reward loop. Returns (dataset rows, output DataProto)."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.protocol import DataProto
    from verl.trainer.ppo.utils import create_rl_dataset
    from verl.utils import hf_tokenizer
    from verl.utils.dataset.rl_dataset import collate_fn

    tokenizer = hf_tokenizer(model_dir())
    dataset = create_rl_dataset([rows_path], config.data, tokenizer, None)
    items = [dataset[i] for i in (indices if indices is not None else range(len(dataset)))]
    batch = DataProto.from_single_dict(collate_fn(items))

    async def run():  # the workers keep the event loop they are made on, as a Ray actor's do
        reward_worker = RewardLoopWorker(config)
        worker = AgentLoopWorker(config, llm_client=ScriptedLLM(tokenizer, llm_scripts),
                                 reward_loop_worker_handles=[InProcessRewardHandle(reward_worker)])
        return await worker.generate_sequences(batch)

    return items, asyncio.run(run())


def final_scores(output):
    """The score verl's reward loop put at each sample's last response token (rm_scores), as floats."""
    return [float(row.sum()) for row in output.batch["rm_scores"]]


class VerlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.url = server().url
        rl_config.configure(url=None)  # everything verl runs gets the URL from its own config, as in training

    def setUp(self):
        self.sessions_before = sessions()

    def assertSessionsBack(self):
        self.assertEqual(sessions(), self.sessions_before, "an episode was left open on the server")

    def test_dataset_reads_the_parquet_rows(self):
        from verl.trainer.ppo.utils import create_rl_dataset
        from verl.utils import hf_tokenizer

        path = parquet("train", ["--limit", "4", "--verl-tools"])
        expected = [json.loads(line) for line in run_module(
            "pwab.rl.dataset", "--url", self.url, "--split", "train", "--out", "-", "--history-items", "2",
            "--limit", "4", "--verl-tools").splitlines()]
        config = verl_config(f"data.tool_config_path={tool_yaml()}")
        dataset = create_rl_dataset([path], config.data, hf_tokenizer(model_dir()), None)
        self.assertIsNotNone(dataset.tool_schemas, "verl could not build the tools of the YAML for its filter")
        self.assertEqual(len(dataset), 4)  # none filtered out: the prompts fit with the tool schemas
        for i, row in enumerate(expected):
            item = dataset[i]
            self.assertEqual(item["raw_prompt"], row["prompt"])
            self.assertEqual(item["data_source"], "pwab")
            self.assertEqual(item["reward_model"]["ground_truth"], row["task"])
            self.assertEqual(item["agent_name"], "tool_agent")
            self.assertEqual(item["index"], row["extra_info"]["index"])
            self.assertEqual(item["tools_kwargs"]["search_product_by_query"], {"create_kwargs": {"task": row["task"]}})
            self.assertEqual(set(item["tools_kwargs"]), {"search_product_by_query", "get_recommendations_by_history",
                                                         "add_product_review", "stop"})

    def test_tool_registry_builds_pwab_tools_from_the_yaml(self):
        from verl.tools.base_tool import BaseTool
        from verl.tools.tool_registry import load_all_tools

        tools = load_all_tools(tool_config_path=tool_yaml(), function_tool_path=None)
        self.assertEqual([t.name for t in tools], ["search_product_by_query", "get_recommendations_by_history",
                                                   "add_product_review", "stop"])
        for tool in tools:
            self.assertIsInstance(tool, BaseTool)
            self.assertEqual(type(tool).__name__, "PwabTool")
            self.assertEqual(tool.client.url, self.url)
        schema = tools[0].tool_schema.model_dump(exclude_unset=True, exclude_none=True)
        self.assertEqual(schema["function"]["parameters"]["required"], ["query"])

    def test_reward_loop_calls_compute_score(self):
        """The default path: rows without agent_name run verl's SingleTurnAgentLoop, and the reward loop's naive
        manager calls the custom reward function verl loaded from pkg://pwab.rl.verl_adapter."""
        task, query, reward = good_search()
        review, review_reward = review_task()
        third = next(f"train/{i}" for i in range(3) if f"train/{i}" not in (task, review))
        chosen = [row_of(task), row_of(review), row_of(third)]
        answers = [hermes("search_product_by_query", {"query": query}),
                   hermes("add_product_review", {"review": REVIEW}),
                   hermes("get_recommendations_by_history", {"product_sequence": ["B000000"]})]
        scripts = {row["prompt"][1]["content"]: [answer] for row, answer in zip(chosen, answers)}
        config = verl_config("reward.custom_reward_function.name=compute_score")
        _, output = rollout(config, parquet("single", rows=chosen), scripts)
        expected = [client().reward(row["task"], completion=answer) for row, answer in zip(chosen, answers)]
        for score, answer in zip(final_scores(output), expected):
            self.assertAlmostEqual(score, answer["reward"], places=6)  # rm_scores is float32
        self.assertAlmostEqual(final_scores(output)[0], reward, places=6)
        self.assertAlmostEqual(final_scores(output)[1], review_reward, places=6)
        self.assertNotIn(review_reward, (0.0, 1.0))
        self.assertEqual(list(output.non_tensor_batch["function_acc"]), [e["function_acc"] for e in expected])
        self.assertEqual(output.meta_info["reward_extra_keys"], ["score", "function_acc", "result_acc"])

        chosen[2]["reward_model"] = {"style": "rule", "ground_truth": "train/999999"}
        with self.assertRaises(pwab.NotFound):  # an unknown task fails the rollout: no reward of 0
            rollout(config, parquet("unknown", rows=chosen), scripts)

    def test_tool_agent_loop_plays_pwab_episodes(self):
        """ToolAgentLoop with the tools of the YAML: verl renders the tools into the prompt, parses the scripted
        Hermes tool calls, calls PwabTool (one episode per trajectory on the server), collects the tool rewards,
        and the reward loop calls compute_episode_score on them."""
        from verl.utils import hf_tokenizer

        task, query, reward = good_search()
        review_key, review_reward = review_task()
        good, reviewed = row_of(task, verl_tools=True), row_of(review_key, verl_tools=True)
        review = hermes("add_product_review", {"review": REVIEW})
        scripts = {
            # the good search ends the single-turn episode; the later stop call finds it over (one episode per
            # trajectory, not one per call); then the model stops calling tools
            good["prompt"][1]["content"]: [hermes("search_product_by_query", {"query": query}),
                                           hermes("stop", {}), "All done."],
            reviewed["prompt"][1]["content"]: [review, "Done."]}
        config = verl_config(
            "actor_rollout_ref.rollout.multi_turn.enable=True",
            f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tool_yaml()}",
            "actor_rollout_ref.rollout.multi_turn.format=hermes",
            "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=4096",
            f"data.tool_config_path={tool_yaml()}",
            "reward.custom_reward_function.name=compute_episode_score")
        items, output = rollout(config, parquet("tools", rows=[good, reviewed]), scripts)
        self.assertEqual([i["agent_name"] for i in items], ["tool_agent", "tool_agent"])
        tool_rewards = [list(r) for r in output.non_tensor_batch["tool_rewards"]]
        self.assertEqual(len(tool_rewards[0]), 2)
        self.assertAlmostEqual(tool_rewards[0][0], reward)
        self.assertEqual(tool_rewards[0][1], 0.0)
        text = hf_tokenizer(model_dir()).decode(output.batch["responses"][0])
        self.assertIn("Product 0", text)  # the search results, as verl wrote the tool's answer into the context
        self.assertIn("The episode is over", text)
        expected = [client().reward(task, completion=hermes("search_product_by_query", {"query": query})),
                    client().reward(reviewed["task"], completion=review)]
        self.assertEqual(len(tool_rewards[1]), 1)
        scores = final_scores(output)
        self.assertAlmostEqual(scores[0], expected[0]["reward"], places=6)  # rm_scores is float32
        self.assertAlmostEqual(scores[1], expected[1]["reward"], places=6)
        self.assertAlmostEqual(scores[1], review_reward, places=6)
        self.assertSessionsBack()

    def test_errors_are_errors(self):
        """An unknown task or an unreachable server, inside verl's tool loop: verl shows the model the error and
        counts reward 0 for the call, PwabTool notes it, and compute_episode_score fails the rollout."""
        row = row_of("train/0", verl_tools=True)
        for tool in row["extra_info"]["tools_kwargs"].values():
            tool["create_kwargs"]["task"] = "train/999999"
        scripts = {row["prompt"][1]["content"]: [hermes("search_product_by_query", {"query": "kettle"}), "Done."]}
        config = verl_config(
            "actor_rollout_ref.rollout.multi_turn.enable=True",
            f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tool_yaml()}",
            "actor_rollout_ref.rollout.multi_turn.format=hermes",
            "reward.custom_reward_function.name=compute_episode_score")
        with self.assertRaisesRegex(RuntimeError, "failed on pwab's side.*NotFound"):
            rollout(config, parquet("bad-task", rows=[row]), scripts)

        dead = os.path.join(scratch("tools"), "dead.yaml")
        with open(tool_yaml()) as f, open(dead, "w") as out:
            out.write(f.read().replace(self.url, "http://127.0.0.1:9"))
        row = row_of("train/0", verl_tools=True)
        rl_config.configure(retries=0, timeout=2)
        try:
            config = verl_config(
                "actor_rollout_ref.rollout.multi_turn.enable=True",
                f"actor_rollout_ref.rollout.multi_turn.tool_config_path={dead}",
                "actor_rollout_ref.rollout.multi_turn.format=hermes",
                "reward.custom_reward_function.name=compute_episode_score")
            with self.assertRaisesRegex(RuntimeError, "failed on pwab's side"):
                rollout(config, parquet("dead", rows=[row]), scripts)
        finally:
            rl_config.configure(retries=None, timeout=None)
        # the legacy reward workers give no tool_rewards: compute_episode_score refuses instead of scoring 0
        with self.assertRaisesRegex(ValueError, "tool_rewards"):
            verl_adapter.compute_episode_score("pwab", "x", row["task"], {"index": 0})
        self.assertSessionsBack()


if __name__ == "__main__":
    unittest.main()
