"""pwab.rl.trl_adapter against the real TRL (the `core` environment: trl 1.16.0, transformers 5.24, peft, datasets)
and a real `pwab serve` on the mini synthetic dataset (docs/rl-engines.md, "TRL").

- GRPOTrainer trains with reward_funcs=[pwab_reward, pwab_function_acc]; every reward TRL logged equals pwab's
  own score of the same completion, from POST /v1/reward and from `pwab puma fast-test`.
- GRPOTrainer trains with environment_factory=PwabEnv and PwabMultiTurnEnv: TRL renders the tools, parses the
  model's tool calls with its own response parser and runs its multi-turn loop; the reward TRL logged for each
  rollout equals the score of that episode's record, written by the server (`pwab serve --out`).
- SFTTrainer and DPOTrainer train on `pwab puma export --format trl` as written.
- configure() reaches processes started afterwards (AsyncGRPOTrainer spawns its rollout worker); an unreachable
  server or an unknown task raises, never a reward of 0.

A random tiny model almost never writes a well-formed tool call, so its generation is steered: TRL generates with
GRPOConfig.generation_kwargs holding a transformers `sequence_bias` that favours one fixed Hermes tool call (a good
search of one task; tiny_models.steering_bias). It is still the real model sampled by TRL at temperature 1, so
some answers break off into noise, and the rewards checked span good, wrong and unparseable answers. The tokenizer
uses TRL's Qwen2.5 chat template, one whose tool calls TRL's response parser knows (tiny_models.retemplate)."""

import json
import multiprocessing
import os
import pickle
import subprocess
import sys
import unittest
import warnings

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import pwab  # noqa: E402
from pwab.rl import config as rl_config  # noqa: E402
from pwab.rl import dataset as rl_dataset  # noqa: E402
from pwab.rl import trl_adapter  # noqa: E402
from tests import world  # noqa: E402

import tiny_models  # noqa: E402
from episode_world import client, hermes, scratch, server, sessions  # noqa: E402
from episode_world import good_search as _good_search  # noqa: E402

_state = {}
F32 = 1e-6  # TRL keeps rewards in a float32 tensor: what it logs is pwab's float rounded to float32


def good_search():
    """The first train search task its own instruction solves: the steered model must write its query exactly,
    which the tiny tokenizer does for that instruction's characters."""
    return _good_search(partial=False)


def rows(tasks, instruction=True, track="single"):
    """pwab.rl.dataset's rows of these train tasks, reduced to the columns TRL needs (prompt, task)."""
    out = []
    for task in tasks:
        row = rl_dataset.task_rows(server().url, "train", limit=1, offset=int(task.split("/")[1]), history_items=2,
                                   instruction=instruction, track=track)[0]
        out.append({"prompt": row["prompt"], "task": row["task"]})
    return out


def tiny_model():
    """The directory of a random tiny LLaMA whose tokenizer uses TRL's Qwen2.5 chat template (one whose tool calls
    TRL knows how to parse; tiny_models.retemplate)."""
    if "model" not in _state:
        from trl.chat_template_utils import qwen2_5_chat_template
        directory = scratch("model")
        # Long enough for a prompt with the tools, ten products in a tool reply and the answers around it.
        tiny_models.make_llama(directory, seed=1, max_positions=16384)
        tiny_models.retemplate(directory, qwen2_5_chat_template)
        _state["model"] = directory
    return _state["model"]


def steering(target, later=None):
    """GRPOConfig.generation_kwargs that make the tiny model answer `target` (most of the time: see
    tiny_models.steering_bias) after the generation prompt of the Qwen2.5 template, and `later` (if given) in the
    turn after a tool reply."""
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(tiny_model())
    kwargs = tiny_models.steering_bias(tokenizer, target, "<|im_start|>assistant\n")
    if later is not None:
        after_tool = "</tool_response><|im_end|>\n<|im_start|>assistant\n"
        kwargs["sequence_bias"] += tiny_models.steering_bias(tokenizer, later, after_tool, bias=25.0,
                                                             anchored=True)["sequence_bias"]
    return kwargs


def single_target():
    task, query, _ = good_search()
    return hermes("search_product_by_query", {"query": query})


def multi_target():
    return hermes("respond", {"content": "Which one do you mean?"})


def grpo_args(out, **overrides):
    from trl import GRPOConfig
    settings = dict(output_dir=out, max_steps=2, per_device_train_batch_size=4, num_generations=4,
                    max_completion_length=48, learning_rate=1e-4, logging_steps=1, save_strategy="no",
                    report_to="none", use_cpu=True, bf16=False, seed=0, disable_tqdm=True, temperature=1.0,
                    dataloader_num_workers=0, shuffle_dataset=False)
    settings.update(overrides)
    return GRPOConfig(**settings)


def logging_callback(store):
    """A TrainerCallback copying, after every optimizer step, what TRL logged for the rollouts of that step: the
    prompts, completions and each reward function's per-rollout rewards (GRPOTrainer._logs)."""
    from transformers import TrainerCallback

    class Keep(TrainerCallback):
        trainer = None

        def on_step_end(self, args, state, control, **kwargs):
            logs = self.trainer._logs
            store.append({"prompt": list(logs["prompt"]), "completion": list(logs["completion"]),
                          "rewards": {name: list(values) for name, values in logs["rewards"].items()}})

    return Keep()


def train(trainer_class, callback, **kwargs):
    trainer = trainer_class(**kwargs, callbacks=[callback])
    callback.trainer = trainer
    trainer.train()
    return trainer


def assistant_text(completion):
    """The first assistant message's text, as TRL passes it to a reward function (conversational rows)."""
    if isinstance(completion, str):
        return completion
    return next(m.get("content") or "" for m in completion if m["role"] == "assistant")


class TrlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.url = server().url
        rl_config.configure(url=cls.url)

    @classmethod
    def tearDownClass(cls):
        rl_config.configure(url=None, track=None)

    def setUp(self):
        self.sessions_before = sessions()

    def assertSessionsBack(self):
        self.assertEqual(sessions(), self.sessions_before, "an episode was left open on the server")


class GrpoRewardFunctions(TrlTest):
    def test_logged_rewards_equal_pwab_scores(self):
        from datasets import Dataset
        from trl import GRPOTrainer
        from transformers import AutoModelForCausalLM, AutoTokenizer

        task, query, good_reward = good_search()
        directory = tiny_model()
        data = rows([task, "train/1"])
        by_prompt = {json.dumps(r["prompt"]): r["task"] for r in data}
        logged = []
        train(GRPOTrainer, logging_callback(logged),
              model=AutoModelForCausalLM.from_pretrained(directory),
              processing_class=AutoTokenizer.from_pretrained(directory, padding_side="left"),
              reward_funcs=[trl_adapter.pwab_reward, trl_adapter.pwab_function_acc],
              train_dataset=Dataset.from_list(data * 2),
              args=grpo_args(scratch("grpo-reward"), reward_weights=[1.0, 0.1], max_completion_length=192,
                             generation_kwargs=steering(single_target())))
        self.assertEqual(len(logged), 2)
        items, trl_rewards, trl_function = [], [], []
        for step in logged:
            self.assertEqual(len(step["completion"]), 4)
            for prompt, completion, reward, function in zip(step["prompt"], step["completion"],
                                                            step["rewards"]["pwab_reward"],
                                                            step["rewards"]["pwab_function_acc"]):
                items.append({"task": by_prompt[json.dumps(prompt)], "completion": assistant_text(completion)})
                trl_rewards.append(reward)
                trl_function.append(function)
        scored = client().rewards(items)
        for item, answer, reward, function in zip(items, scored, trl_rewards, trl_function):
            self.assertAlmostEqual(reward, answer["reward"], delta=F32, msg=item)
            self.assertAlmostEqual(function, answer["function_acc"], delta=F32, msg=item)
        # The steered model wrote the good search at least once, and something else too: the check is not vacuous.
        self.assertTrue(any(r > 0 for r in trl_rewards), items)
        self.assertTrue(any(query in item["completion"] for item in items), (query, items))
        # The same answers through `pwab puma fast-test` (the original's test.py), keyed by instruction: the
        # function and parameter /v1/reward parsed, and the known good answer of the search task.
        instructions = {t["task"]: t["instruction"] for t in client().tasks("train", 0, 40)["tasks"]}
        picked = {}
        for item, answer in zip(items, scored):  # one answer per task: fast-test keys its files by instruction
            picked.setdefault(item["task"], answer)
        picked[task] = client().reward(task, function="search_product_by_query", parameter=query)
        self.assertAlmostEqual(picked[task]["reward"], good_reward)
        fast = fast_test({instructions[k]: (a["function"], a["parameter"]) for k, a in picked.items()})
        for key, answer in picked.items():
            self.assertAlmostEqual(fast[key], answer["result_acc"], delta=1e-9, msg=key)
        self.assertSessionsBack()

    def test_direct_call_with_good_tool_calls(self):
        """The reward function as TRL calls it, on known good, wrong and structured (parsed) tool calls."""
        task, query, good_reward = good_search()
        good = hermes("search_product_by_query", {"query": query})
        texts = [good, hermes("add_product_review", {"review": "Fine."}), "<tool_call>{broken", ""]
        structured = [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
            "name": "search_product_by_query", "arguments": {"query": query}}}]}]
        completions = [[{"role": "assistant", "content": t}] for t in texts] + [structured]
        metrics = []
        rewards = trl_adapter.pwab_reward(prompts=[[]] * 5, completions=completions, completion_ids=[[1]] * 5,
                                          trainer_state=None, task=[task] * 5,
                                          log_metric=lambda n, v: metrics.append((n, v)))
        self.assertAlmostEqual(rewards[0], good_reward)
        self.assertEqual(rewards[1:4], [0.0, 0.0, 0.0])
        self.assertEqual(rewards[4], rewards[0])
        expected = [a["reward"] for a in client().rewards([{"task": task, "completion": t} for t in texts])]
        self.assertEqual(rewards[:4], expected)
        self.assertIn("pwab/result_acc", dict(metrics))


class GrpoEnvironment(TrlTest):
    """environment_factory: TRL's own tool rendering, response parsing and multi-turn loop on pwab episodes. A server
    of its own with --out writes every episode's record (each rollout is a trial of its own), against which the
    rewards TRL logged are checked."""

    @classmethod
    def setUpClass(cls):
        cls.run_dir = os.path.join(scratch("served"), "run")
        cls.recording = pwab.launch(world.data_dir(), out=cls.run_dir, args=["--embedder", "hashing"])
        cls.url = cls.recording.url
        rl_config.configure(url=cls.url)

    @classmethod
    def tearDownClass(cls):
        rl_config.configure(url=None, track=None)
        cls.recording.stop()

    def setUp(self):
        self.sessions_before = self.recording.client().health()["sessions"]

    def assertSessionsBack(self):
        self.assertEqual(self.recording.client().health()["sessions"], self.sessions_before,
                         "an episode was left open on the server")

    def records(self, track):
        path = os.path.join(self.run_dir, track, "results.jsonl")
        found = {}
        with open(path) as f:
            for line in f:
                record = json.loads(line)
                if "task" in record and "trial" in record:
                    found[(record["task"], record["trial"])] = record
        return found

    def play(self, env_class, track, steer, completion_length, iterations):
        from datasets import Dataset
        from trl import GRPOTrainer
        from transformers import AutoModelForCausalLM, AutoTokenizer

        task, query, good_reward = good_search()
        directory = tiny_model()
        episodes = []  # per rollout, in TRL's order: (task, trial) of its episode, read before TRL's get_reward

        def episodes_seen(environments=None, completions=None, **kwargs):
            episodes.extend((env.task, env.trial) for env in environments)
            return [0.0] * len(completions)

        logged = []
        trainer = train(GRPOTrainer, logging_callback(logged),
                        model=AutoModelForCausalLM.from_pretrained(directory),
                        processing_class=AutoTokenizer.from_pretrained(directory, padding_side="left"),
                        reward_funcs=[episodes_seen], environment_factory=env_class,
                        train_dataset=Dataset.from_list(rows([task, "train/1"], instruction=False, track=track)),
                        args=grpo_args(scratch("grpo-" + track), reward_weights=[0.0],
                                       max_completion_length=completion_length, max_tool_calling_iterations=iterations,
                                       generation_kwargs=steer))
        self.assertIn("search_product_by_query", [t.__name__ for t in trainer.tools])
        self.assertNotIn("get_reward", [t.__name__ for t in trainer.tools])
        records = self.records(track)
        rewards = [r for step in logged for r in step["rewards"][env_class.__name__]]
        completions = [c for step in logged for c in step["completion"]]
        self.assertEqual(len(rewards), len(episodes))
        self.assertEqual(len(set(episodes)), len(episodes), "two rollouts shared an episode")
        scores = [record_score(records[key]) for key in episodes]
        for reward, score in zip(rewards, scores):
            self.assertAlmostEqual(reward, score, delta=F32, msg=(episodes, rewards, scores,
                                                                   [[m.get("tool_calls") for m in c] for c in completions]))
        # TRL parsed real tool calls out of the generated text and ran them in pwab's episodes.
        calls = [call["function"]["name"] for completion in completions for message in completion
                 if message["role"] == "assistant" for call in message.get("tool_calls") or []]
        tool_replies = [m for completion in completions for m in completion if m["role"] == "tool"]
        self.assertIn("search_product_by_query", calls)
        self.assertTrue(any(r > 0 for r in rewards), rewards)
        self.assertSessionsBack()
        return calls, records, episodes, tool_replies

    def test_single_turn_episodes(self):
        # A search's reply (ten products) runs to thousands of tokens: past this completion budget TRL drops it from
        # the completion (its overlong rule) after the tool has run, and generates no further turn.
        calls, records, episodes, _ = self.play(trl_adapter.PwabEnv, "single", steering(single_target()), 192, 1)
        for key in episodes:
            self.assertLessEqual(len(records[key]["actions"]), 1)  # single-turn: the first task function ends it

    def test_multi_turn_episodes(self):
        # Turn 1 asks the user (a short reply TRL appends as a tool message), turn 2 searches.
        calls, records, episodes, replies = self.play(trl_adapter.PwabMultiTurnEnv, "multi",
                                                      steering(multi_target(), later=single_target()), 320, 2)
        self.assertIn("respond", calls)
        self.assertIn("respond", [m["name"] for m in replies])
        played = [[a["name"] for a in records[key]["actions"]] for key in episodes]
        self.assertIn(["respond", "search_product_by_query"], played)


class SftAndDpoOnPumaExport(unittest.TestCase):
    """`pwab puma export --format trl` output, loaded as written, trains TRL's SFTTrainer and DPOTrainer."""

    def test_sft_and_dpo_train_on_the_export(self):
        from datasets import load_dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

        exported = puma_export()
        directory = scratch("sft-base")
        tiny_models.make_llama(directory, seed=2)
        tokenizer = AutoTokenizer.from_pretrained(directory)
        sft = load_dataset("json", data_files={"train": os.path.join(exported, "sft_train.jsonl"),
                                               "test": os.path.join(exported, "sft_test.jsonl")})
        self.assertEqual(set(sft["train"].column_names), {"prompt", "completion"})
        common = dict(max_steps=3, per_device_train_batch_size=2, learning_rate=1e-3, logging_steps=1,
                      save_strategy="no", report_to="none", use_cpu=True, bf16=False, seed=0, disable_tqdm=True)
        trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(directory), processing_class=tokenizer,
                             train_dataset=sft["train"], eval_dataset=sft["test"],
                             args=SFTConfig(output_dir=scratch("sft"), max_length=2048, **common))
        before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
        result = trainer.train()
        self.assertEqual(result.global_step, 3)
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        self.assertEqual(len(losses), 3)
        self.assertTrue(all(l == l and l > 0 for l in losses), losses)
        self.assertTrue(any(not p.equal(before[n]) for n, p in trainer.model.named_parameters()))
        sft_model = os.path.join(scratch("sft-model"), "m")
        trainer.save_model(sft_model)

        dpo = load_dataset("json", data_files={"train": os.path.join(exported, "dpo_train.jsonl")})["train"]
        self.assertEqual(set(dpo.column_names), {"prompt", "chosen", "rejected"})
        self.assertGreater(len(dpo), 0)
        trainer = DPOTrainer(model=AutoModelForCausalLM.from_pretrained(sft_model), processing_class=tokenizer,
                             train_dataset=dpo, args=DPOConfig(output_dir=scratch("dpo"), max_length=2048, beta=0.1,
                                                               **common))
        result = trainer.train()
        self.assertEqual(result.global_step, 3)
        logged = [entry for entry in trainer.state.log_history if "loss" in entry]
        self.assertEqual(len(logged), 3)
        self.assertAlmostEqual(logged[0]["loss"], 0.6931, delta=0.01)  # policy = reference at the first step


def start_puma():
    """Starts, in the background (a minute here), pwab's own pipeline up to the scored preference pairs on the mini
    dataset: tiny preset, a few tasks, prepare, sampling from the untrained model and scoring, no SFT epochs."""
    if "puma" not in _state:
        run = os.path.join(scratch("puma"), "run")
        command = [world.binary(), "puma", "score", "--data", world.data_dir(), "--out", run, "--embedder",
                   "hashing", "--train-limit", "24", "--test-limit", "6", "--sft-epochs", "0", "--samples", "4",
                   "--max-new-tokens", "12", "--dpo-eval-tasks", "2"]
        log = open(os.path.join(os.path.dirname(run), "puma.log"), "w+")
        _state["puma"] = (run, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log)
    return _state["puma"]


def setUpModule():
    start_puma()


def tearDownModule():
    run, process, log = _state.pop("puma", (None, None, None))
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()
    if log is not None:
        log.close()


def puma_export():
    """The pipeline's SFT examples and pairs, written by `pwab puma export --format trl`."""
    run, process, log = start_puma()
    code = process.wait(timeout=600)
    log.seek(0)
    assert code == 0, log.read()[-3000:]
    out = os.path.join(scratch("export"), "trl")
    done = subprocess.run([world.binary(), "puma", "export", "--out", run, "--to", out, "--format", "trl"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


class Configuration(TrlTest):
    """What reaches the processes an engine starts, and what an outage or a bad task does."""

    def test_configure_reaches_a_spawned_process_and_a_pickled_copy(self):
        saved = os.environ.pop("PWAB_URL", None)
        try:
            rl_config.configure(url=None)
            rl_config.configure(url=self.url)
            task, query, good_reward = good_search()
            # AsyncGRPOTrainer starts its rollout worker with multiprocessing's "spawn": a fresh interpreter that
            # unpickles the reward functions and the environment class and never ran configure().
            context = multiprocessing.get_context("spawn")
            with context.Pool(1) as pool:
                answer = pool.apply(child_scores, (trl_adapter.pwab_reward, trl_adapter.PwabEnv, task, query))
            self.assertEqual(answer["url"], self.url)
            self.assertAlmostEqual(answer["reward"], good_reward)
            self.assertAlmostEqual(answer["episode"], good_reward)
            # A pickled copy carries the server even to a process whose environment names none.
            blob = pickle.dumps(trl_adapter.pwab_reward)
            code = ("import pickle, sys; f = pickle.loads(sys.stdin.buffer.read()); "
                    f"print(f(prompts=['p'], completions=[{single_target()!r}], completion_ids=[[1]], "
                    f"trainer_state=None, task=[{task!r}])[0])")
            env = {k: v for k, v in os.environ.items() if not k.startswith("PWAB_URL")}
            done = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, env=env, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertAlmostEqual(float(done.stdout), good_reward)
            rl_config.configure(url=None)
            self.assertNotIn("PWAB_URL", os.environ)  # cleared: back to the environment as it was
        finally:
            rl_config.configure(url=self.url)
            if saved is not None:
                os.environ["PWAB_URL"] = saved
        self.assertSessionsBack()

    def test_an_outage_or_a_bad_task_raises(self):
        with self.assertRaises(pwab.NotFound):
            trl_adapter.pwab_reward(prompts=["p"], completions=["x"], completion_ids=[[1]], trainer_state=None,
                                    task=["train/999999"])
        env = trl_adapter.PwabEnv()
        with self.assertRaises(pwab.NotFound):
            env.reset(task="train/999999")
        # The server dropped the episode (here: ended behind the adapter's back): no reward, a warning, a count.
        env.reset(task="train/1")
        client().end(env._episode)
        lost = trl_adapter.PwabEnv.lost_episodes
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertIsNone(env.get_reward())
        self.assertIn("expired", str(caught[0].message))
        self.assertEqual(trl_adapter.PwabEnv.lost_episodes, lost + 1)
        self.assertSessionsBack()
        # A server that is down: every call raises Unreachable, never a 0.
        with socket_closed() as dead:
            unreachable = trl_adapter.PwabReward(url=dead)
            rl_config.configure(retries=0, timeout=2)
            try:
                with self.assertRaises(pwab.Unreachable):
                    unreachable(prompts=["p"], completions=["x"], completion_ids=[[1]], trainer_state=None,
                                task=["train/1"])
                env = trl_adapter.PwabEnv()
                env.reset(task="train/1")
                env._client = rl_config.client(dead)  # the server goes away in the middle of the rollout
                with self.assertRaises(pwab.Unreachable):
                    env.search_product_by_query(query="kettle")
                with self.assertRaises(pwab.Unreachable):
                    env.get_reward()
                with self.assertRaises(pwab.Unreachable):
                    trl_adapter.environment_rewards(environments=[env])
            finally:
                rl_config.configure(retries=None, timeout=None)
        client().end(env._episode)

    def test_get_reward_is_hidden_from_trl_before_1_8(self):
        import inspect
        import trl

        task, query, good_reward = good_search()
        self.assertFalse(trl_adapter.get_reward_is_a_tool())  # 1.16: TRL reads get_reward as the reward
        real = trl.__version__
        trl.__version__ = "1.7.0"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                env = trl_adapter.PwabEnv()
            self.assertTrue(any("environment_rewards" in str(w.message) for w in caught))
        finally:
            trl.__version__ = real
        # TRL 1.7 takes every bound method of the instance but reset as a tool (grpo_trainer.py, v1.7.0).
        tools = [n for n, _ in inspect.getmembers(env, predicate=inspect.ismethod) if n != "reset"
                 and not n.startswith("_")]
        self.assertEqual(sorted(tools), ["add_product_review", "get_recommendations_by_history",
                                         "search_product_by_query", "stop"])
        env.reset(task=task)
        env.search_product_by_query(query=query)
        self.assertAlmostEqual(trl_adapter.environment_rewards(environments=[env])[0], good_reward)
        self.assertSessionsBack()


def child_scores(reward, env_class, task, query):
    """Runs in a spawned interpreter: the unpickled reward function and a new environment, configured by nothing
    but what the parent passed down."""
    env = env_class()
    env.reset(task=task)
    env.search_product_by_query(query=query)
    text = "<tool_call>" + json.dumps({"name": "search_product_by_query", "arguments": {"query": query}}) + \
        "</tool_call>"
    return {"url": os.environ.get("PWAB_URL"), "episode": env.get_reward(),
            "reward": reward(prompts=["p"], completions=[text], completion_ids=[[1]], trainer_state=None,
                             task=[task])[0]}


class socket_closed:
    """A loopback URL where nothing listens (a port bound, then released)."""

    def __enter__(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc):
        return False


def record_score(record):
    """The result score of an episode record (results.jsonl), by the benchmark's rule (score_task in
    src/metrics/aggregate.cpp): the best R among the attempts that called the task's own tool (f = 1), else 0. A
    search answering a recommend task may find the target (r = 1) and still score 0."""
    return max((r for f, r in record.get("attempts") or [] if f == 1), default=0.0)


def fast_test(answers):
    """`pwab puma fast-test` of {instruction: (function, parameter)} on the train split: {task key: R}."""
    directory = scratch("fast-test")
    functions = os.path.join(directory, "functions.json")
    params = os.path.join(directory, "params.json")
    out = os.path.join(directory, "fast.json")
    with open(functions, "w") as f:
        json.dump({k: [fn] for k, (fn, _) in answers.items()}, f)
    with open(params, "w") as f:
        json.dump({k: [p] for k, (_, p) in answers.items()}, f)
    run = subprocess.run([world.binary(), "puma", "fast-test", "--data", world.data_dir(), "--functions", functions,
                          "--params", params, "--json", out, "--embedder", "hashing", "--split", "train"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    with open(out) as f:
        report = json.load(f)
    return fast_test_scores(report)


def fast_test_scores(report):
    return {row["task"]: row["r"] for row in report["tasks"]}


if __name__ == "__main__":
    unittest.main()
