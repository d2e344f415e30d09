"""pwab.rl against a real `pwab serve`: each adapter called exactly as its engine calls it (docs/rl-engines.md has the
contracts and versions), with rewards checked against POST /v1/reward and every episode checked to end.

TRL's and verl's calls need no engine import, so they are made directly. verifiers, verl and OpenRLHF are tested
against the real packages in test/ecosystem/ (test_verifiers.py, test_verl.py, test_openrlhf.py); here the verl
adapter's calls are still made as verl makes them, and the OpenRLHF agent and the verifiers reward functions run
as their doctests."""

import asyncio
import doctest
import importlib
import inspect
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import types
import typing
import unittest

import pwab
import pwab.rl
from pwab.rl import config as rl_config
from pwab.rl import dataset as rl_dataset
from pwab.rl import openrlhf_agent, trl_adapter, verifiers_adapter, verl_adapter
from pwab.rl.parse import parse_action_text
from tests import world

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)

_cache = {}


def client():
    return world.server().client()


def sessions():
    return client().health()["sessions"]


def known_answers():
    """Search tasks whose instruction, used as the query, scores above 0 (the client never sees a target: the
    reward endpoint itself says which answers are good)."""
    if "good" not in _cache:
        tasks = client().tasks("train", 0, 40)["tasks"]
        items = [{"task": t["task"], "function": "search_product_by_query", "parameter": t["instruction"]}
                 for t in tasks]
        scored = client().rewards(items)
        good = [(item, answer) for item, answer in zip(items, scored) if answer["reward"] > 0]
        assert good, "no search task among the first 40 scores its instruction above 0"
        good.sort(key=lambda pair: pair[1]["reward"] >= 1.0)  # a reward below 1 first: unlike function_acc
        _cache["good"] = good
    return _cache["good"]


def hermes(name, arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def good_completion():
    """(task, the first known good answer as a Hermes tool call, its reward)."""
    item, answer = known_answers()[0]
    return item["task"], hermes("search_product_by_query", {"query": item["parameter"]}), answer["reward"]


class RlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.url = world.server().url
        rl_config.configure(url=cls.url)

    @classmethod
    def tearDownClass(cls):
        rl_config.configure(url=None, track=None, user_sim=None, max_steps=None)

    def setUp(self):
        self.sessions_before = sessions()

    def assertSessionsBack(self):
        self.assertEqual(sessions(), self.sessions_before, "an episode was left open on the server")


class ClientAndParseTest(RlTest):
    def test_the_client_covers_the_openenv_and_reward_routes(self):
        c = client()
        self.assertEqual(c.metadata()["name"], "pwab")
        self.assertIn("action", c.schema())
        listed = c.tasks("train", 0, 2, history=True)["tasks"]
        self.assertIn("history", listed[0])
        self.assertNotIn("history", c.tasks("train", 0, 1)["tasks"][0])
        started = c.env_reset(task="train/1", history=False)
        episode = started["observation"]["episode_id"]
        self.assertIsNone(started["reward"])
        self.assertEqual(c.env_state(episode)["steps"], 0)
        answer = c.env_step(episode, {"name": "stop", "arguments": {}})
        self.assertTrue(answer["done"])
        with self.assertRaises(pwab.NotFound):  # a finished episode is ended at once
            c.env_state(episode)
        with self.assertRaises(pwab.Unprocessable) as caught:  # 422: an unknown field, named
            c._call("POST", "/reset", {"task": "train/1", "bogus": 1})
        self.assertIn("bogus", str(caught.exception))
        self.assertIsInstance(caught.exception, pwab.BadRequest)
        with self.assertRaises(pwab.NotFound):
            c.reward("train/999999", completion="x")
        with self.assertRaises(pwab.NotFound) as caught:  # an item of a batch, named by its task
            c.rewards([{"task": "train/0", "completion": "x"}, {"task": "train/999999", "completion": "x"}])
        self.assertIn("train/999999", str(caught.exception))
        many = [{"task": "train/0", "completion": "search_product_by_query\n" + "w" * 2000}] * 40
        self.assertEqual(len(c.rewards(many, max_body=16 * 1024)), 40)  # split into several bodies
        self.assertSessionsBack()

    def test_parse_action_text_reads_as_the_reward_endpoint_reads(self):
        texts = [
            hermes("search_product_by_query", {"query": "red kettle"}),
            '  {"name": "add_product_review", "parameters": {"review": "Solid."}}  ',
            hermes("get_recommendations_by_history", {"product_sequence": ["B01", "B02"]}),
            "search_product_by_query\nusb cable",
            "Thinking...\n### Tool:\n  add_product_review  \n### Tool Parameter:\n Great pan, heats evenly. ",
            "get_recommendations_by_history\nB01, B02,, B03 ",
            "### Tool:\nsearch_product_by_query\nfirst\nsecond line",
            "<tool_call>{not json}</tool_call>\nsearch_product_by_query",
            "",
        ]
        endpoint = client().rewards([{"task": "train/0", "completion": t} for t in texts])
        for text, answer in zip(texts, endpoint):
            with self.subTest(text=text):
                name, arguments = parse_action_text(text)
                self.assertEqual(name, answer["function"] or "(no function)")
                if isinstance(arguments, dict) and arguments:
                    value = next(iter(arguments.values()))
                    expected = answer["parameter"]
                    if isinstance(value, list):  # the server splits a sequence on commas when it runs it
                        value = ", ".join(value)
                        expected = ", ".join(p.strip() for p in expected.split(",") if p.strip())
                    self.assertEqual(value, expected)
        self.assertEqual(parse_action_text("search_product_by_query\nSay: which colour?"),
                         ("respond", {"content": "which colour?"}))
        self.assertEqual(parse_action_text("add_product_review\nstop"), ("stop", {}))
        self.assertEqual(parse_action_text("respond\nAny budget?"), ("respond", {"content": "Any budget?"}))
        self.assertEqual(parse_action_text("hello there"), ("hello there", {}))
        with self.assertRaises(TypeError):
            parse_action_text({"name": "stop"})

    def test_the_same_text_scores_the_same_as_an_episode(self):
        task, good, good_reward = good_completion()
        for text in (good, "add_product_review\nLovely.", "search_product_by_query\nzzzz qqqq"):
            with self.subTest(text=text[:40]):
                expected = client().reward(task, completion=text)["reward"]
                started = client().env_reset(task=task, history=False)
                name, arguments = parse_action_text(text)
                answer = client().env_step(started["observation"]["episode_id"],
                                           {"name": name, "arguments": arguments})
                self.assertTrue(answer["done"])
                self.assertAlmostEqual(answer["reward"], expected, places=9)
        self.assertGreater(good_reward, 0)
        self.assertSessionsBack()

    def test_doctests_of_every_module_run(self):
        for name in ("pwab.rl", "pwab.rl.config", "pwab.rl.parse", "pwab.rl.dataset", "pwab.rl.trl_adapter",
                     "pwab.rl.verl_adapter", "pwab.rl.verifiers_adapter", "pwab.rl.openrlhf_agent"):
            with self.subTest(module=name):
                result = doctest.testmod(importlib.import_module(name), extraglobs={"URL": self.url},
                                         verbose=False)
                self.assertGreater(result.attempted, 0)
                self.assertEqual(result.failed, 0)
        rl_config.configure(url=self.url, track=None)
        verl_adapter._TRAJECTORIES.pop((self.url, "trajectory-1"))
        self.assertSessionsBack()

    def test_importing_the_adapters_imports_no_engine(self):
        for module in (trl_adapter, verl_adapter, verifiers_adapter, openrlhf_agent):
            self.assertTrue(module.__doc__)
        run = subprocess.run([sys.executable, "-c", "import sys, pwab.rl.trl_adapter, pwab.rl.verl_adapter, "
                              "pwab.rl.verifiers_adapter, pwab.rl.openrlhf_agent, pwab.rl.dataset; print(sorted("
                              "{'trl', 'verl', 'verifiers', 'openrlhf', 'torch', 'datasets', 'transformers'} & "
                              "set(sys.modules)))"], env=dict(os.environ, PYTHONPATH=PACKAGE), capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(run.stdout.strip(), "[]", run.stderr)

    def test_no_server_url_is_a_clear_error(self):
        rl_config.configure(url=None)
        saved = os.environ.pop("PWAB_URL", None)
        try:
            with self.assertRaisesRegex(RuntimeError, "PWAB_URL"):
                trl_adapter.PwabEnv()
        finally:
            rl_config.configure(url=self.url)
            if saved is not None:
                os.environ["PWAB_URL"] = saved


class DatasetTest(RlTest):
    def test_rows_carry_the_task_key_under_every_engine_name(self):
        rows = rl_dataset.task_rows(self.url, "test", limit=3, offset=2, history_items=2)
        self.assertEqual([r["task"] for r in rows], ["test/2", "test/3", "test/4"])
        for row in rows:
            key = row["task"]
            self.assertEqual((row["label"], row["ground_truth"], row["reward_model"]["ground_truth"]), (key,) * 3)
            self.assertEqual(row["data_source"], "pwab")
            self.assertEqual(row["extra_info"]["task"], key)
            system, user = row["prompt"]
            self.assertEqual((system["role"], user["role"]), ("system", "user"))
            self.assertIn("My request: ", user["content"])
            self.assertLessEqual(user["content"].count("\n- "), 2)
        listed = client().tasks("test", 2, 1, history=True)["tasks"][0]
        self.assertIn(listed["instruction"], rows[0]["prompt"][1]["content"])
        if listed.get("history"):
            self.assertIn(listed["history"][-1]["asin"], rows[0]["prompt"][1]["content"])
        bare = rl_dataset.task_rows(self.url, "test", limit=1, history_items=0, instruction=False)[0]
        self.assertEqual(bare["prompt"][1]["content"], "")
        multi = rl_dataset.task_rows(self.url, "train", limit=1, track="multi", verl_tools=True)[0]
        self.assertIn("respond", multi["prompt"][0]["content"])
        self.assertEqual(multi["agent_name"], "tool_agent")
        self.assertEqual(multi["extra_info"]["tools_kwargs"]["search_product_by_query"],
                         {"create_kwargs": {"task": "train/0"}})
        total = client().tasks("test", 0, 1)["total"]
        self.assertEqual(len(rl_dataset.task_rows(self.url, "test", offset=total - 2)), 2)

    def test_the_command_writes_jsonl(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "rows.jsonl")
            run = subprocess.run([sys.executable, "-m", "pwab.rl.dataset", "--url", self.url, "--split", "train",
                                  "--out", out, "--limit", "3", "--history-items", "2", "--verl-tools"],
                                 env=dict(os.environ, PYTHONPATH=PACKAGE), capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            with open(out, encoding="utf-8") as f:
                rows = [json.loads(line) for line in f]
        self.assertEqual([r["label"] for r in rows], ["train/0", "train/1", "train/2"])
        self.assertIn("3 rows", run.stderr)


class TrlTest(RlTest):
    """Calls as grpo_trainer.py makes them: reward functions with keyword arguments only (every column but the
    prompt, plus trainer_state, log_extra, log_metric); the factory with no arguments, reset(**row) with the whole
    row, tools with the parsed arguments, get_reward() once per finished rollout."""

    def trl_kwargs(self, rows, completions, logged):
        kwargs = {key: [row[key] for row in rows] for key in rows[0] if key not in ("prompt", "completion")}
        kwargs.update(trainer_state=object(), log_extra=lambda column, values: logged.append((column, values)),
                      log_metric=lambda name, value: logged.append((name, value)))
        return dict(prompts=[row["prompt"] for row in rows], completions=completions,
                    completion_ids=[[1, 2, 3]] * len(completions), **kwargs)

    def test_reward_function_matches_the_reward_endpoint(self):
        task, good, good_reward = good_completion()
        row = rl_dataset.task_rows(self.url, "train", limit=1, offset=int(task.split("/")[1]))[0]
        texts = [good, "get_recommendations_by_history\nB01, B02", hermes("add_product_review", {"review": "ok"}),
                 "no tool at all"]
        rows = [row] * len(texts)
        expected = [a["reward"] for a in client().rewards([{"task": task, "completion": t} for t in texts])]
        logged = []
        standard = trl_adapter.pwab_reward(**self.trl_kwargs(rows, texts, logged))
        self.assertEqual(standard, expected)
        self.assertTrue(all(isinstance(r, float) for r in standard))
        self.assertAlmostEqual(standard[0], good_reward)
        self.assertEqual(standard[1:], [0.0, 0.0, 0.0])  # a wrong function scores 0
        self.assertIn("pwab/function_acc", [entry[0] for entry in logged])
        conversational = [[{"role": "assistant", "content": t}] for t in texts]
        conversational[0] = [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
            "name": "search_product_by_query", "arguments": json.loads(good[11:-12])["arguments"]}}]}]
        self.assertEqual(trl_adapter.pwab_reward(**self.trl_kwargs(rows, conversational, [])), expected)
        function_acc = trl_adapter.pwab_function_acc(**self.trl_kwargs(rows, texts, []))
        self.assertEqual(function_acc, [1.0, 0.0, 0.0, 0.0])
        copy = pickle.loads(pickle.dumps(trl_adapter.pwab_reward))  # AsyncGRPOTrainer pickles reward functions
        self.assertEqual(copy(**self.trl_kwargs(rows, texts, [])), expected)
        self.assertEqual(getattr(trl_adapter.pwab_reward, "__name__"), "pwab_reward")

    def test_reward_function_errors_are_clear(self):
        rows = [{"prompt": "p", "task": "train/999999"}]
        with self.assertRaises(pwab.NotFound) as caught:
            trl_adapter.pwab_reward(**self.trl_kwargs(rows, ["x"], []))
        self.assertIn("train/999999", str(caught.exception))
        with self.assertRaisesRegex(KeyError, "task keys"):
            trl_adapter.pwab_reward(prompts=["p"], completions=["x"], completion_ids=[[1]], trainer_state=None)

    def tools_of(self, env):
        """The tools TRL takes from an environment (grpo_trainer.py: bound methods, not reset/get_reward/_*)."""
        methods = {}
        for name, member in inspect.getmembers(env, predicate=inspect.ismethod):
            if name not in ("reset", "get_reward") and not name.startswith("_"):
                methods[name] = member
        return methods

    def assert_tool_schema_rules(self, method):
        """transformers' get_json_schema rules: a docstring, a type hint for every argument and the return, and
        a description of every argument in a Google-style Args: block."""
        doc = inspect.getdoc(method)
        self.assertTrue(doc, f"{method.__name__} has no docstring")
        hints = typing.get_type_hints(method)
        self.assertIn("return", hints)
        block = re.search(r"\n\s*Args:\n\s*(.*?)[\n\s]*(Returns:|Raises:|\Z)", "\n" + doc, re.DOTALL)
        described = dict(re.findall(r"(\w+):\s*(.+)", block.group(1))) if block else {}
        for parameter in inspect.signature(method).parameters:
            self.assertIn(hints.get(parameter), (str, int, float, bool, list[str]), parameter)
            self.assertIn(parameter, described, f"{method.__name__}: no description of {parameter}")

    def test_environment_plays_an_episode_per_rollout(self):
        task, good, good_reward = good_completion()
        query = json.loads(good[11:-12])["arguments"]["query"]
        env = trl_adapter.PwabEnv()  # the factory: no arguments
        tools = self.tools_of(env)
        self.assertEqual(set(tools), {"search_product_by_query", "get_recommendations_by_history",
                                      "add_product_review", "stop"})
        for method in tools.values():
            self.assert_tool_schema_rules(method)
        row = rl_dataset.task_rows(self.url, "train", limit=1, offset=int(task.split("/")[1]),
                                   instruction=False)[0]
        observation = env.reset(**row)  # the whole row, prompt included
        self.assertTrue(observation.startswith("\n\nUSER "))
        self.assertEqual(sessions(), self.sessions_before + 1)
        output = tools["search_product_by_query"](**{"query": query})
        self.assertIsInstance(output, str)
        self.assertIn("Product 0", output)
        self.assertEqual(sessions(), self.sessions_before)  # single-turn: the first task function ends it
        with self.assertRaisesRegex(RuntimeError, "episode is over"):
            tools["stop"]()
        self.assertAlmostEqual(env.get_reward(), good_reward)
        self.assertEqual(env.score["result_acc"], env.get_reward())
        # The pool reuses instances: the next reset starts afresh, and an unfinished episode is ended.
        env.reset(**row)
        self.assertEqual(env.get_reward(), 0.0)
        env.reset(**row)
        env.add_product_review(review="Fine.")
        self.assertEqual(env.get_reward(), 0.0)  # wrong function
        env.reset(prompt=[{"role": "user", "content": ""}])  # TRL's placeholder row: no task, a random one
        self.assertTrue(env.task.startswith("train/"))
        self.assertEqual(env.get_reward(), 0.0)
        self.assertSessionsBack()

    def test_multi_turn_environment_and_environment_rewards(self):
        task, good, good_reward = good_completion()
        query = json.loads(good[11:-12])["arguments"]["query"]
        env = trl_adapter.PwabMultiTurnEnv()
        tools = self.tools_of(env)
        self.assertIn("respond", tools)
        self.assert_tool_schema_rules(tools["respond"])
        env.reset(task=task, prompt=[{"role": "user", "content": "x"}])
        reply = env.respond(content="Which brand do you prefer?")
        self.assertIsInstance(reply, str)
        self.assertTrue(reply)
        env.search_product_by_query(query=query)  # an attempt; the conversation goes on
        self.assertEqual(sessions(), self.sessions_before + 1)
        env.stop()
        self.assertEqual(sessions(), self.sessions_before)
        self.assertAlmostEqual(env.get_reward(), good_reward)
        unfinished = trl_adapter.PwabMultiTurnEnv()
        unfinished.reset(task=task)
        unfinished.search_product_by_query(query=query)
        # environment_rewards reads TRL's environments=; an open episode is ended (scored on its attempts).
        rewards = trl_adapter.environment_rewards(prompts=["p"] * 3, completions=["c"] * 3, environments=[
            env, unfinished, object()], trainer_state=None)
        self.assertEqual(rewards[2], None)
        self.assertAlmostEqual(rewards[0], good_reward)
        self.assertAlmostEqual(rewards[1], good_reward)
        self.assertSessionsBack()

        class Weighted(trl_adapter.PwabEnv):
            get_reward = None  # TRL then adds no reward of its own; environment_rewards carries it

        self.assertNotIn("get_reward", dict(inspect.getmembers(Weighted(), predicate=inspect.ismethod)))

    def test_a_dropped_environment_ends_its_episode(self):
        env = trl_adapter.PwabMultiTurnEnv()
        env.reset(task="train/2")
        self.assertEqual(sessions(), self.sessions_before + 1)
        del env
        self.assertSessionsBack()


class VerlTest(RlTest):
    """Calls as verl makes them: compute_score per sample with keywords (reward loop, naive manager), the plural
    batch form, and PwabTool built as tool_registry builds it and driven as ToolAgentLoop._call_tool drives it
    (create(create_kwargs=...), execute(instance_id, args, agent_data=...), release(instance_id) per call)."""

    def test_compute_score_matches_the_reward_endpoint(self):
        task, good, good_reward = good_completion()
        texts = [good, "get_recommendations_by_history\nB01", "<tool_call>{broken"]
        expected = client().rewards([{"task": task, "completion": t} for t in texts])
        scores = []
        for text in texts:
            scores.append(verl_adapter.compute_score(data_source="pwab", solution_str=text, ground_truth=task,
                                                     extra_info={"index": 0, "num_turns": 1}))
        for score, answer in zip(scores, expected):
            self.assertEqual(set(score), {"score", "function_acc", "result_acc"})  # the same keys every time
            self.assertEqual(score["score"], answer["reward"])
            self.assertEqual(score["function_acc"], answer["function_acc"])
        self.assertAlmostEqual(scores[0]["score"], good_reward)
        self.assertEqual(scores[1]["score"], 0.0)
        batch = verl_adapter.compute_score_batch(data_sources=["pwab"] * 3, solution_strs=texts,
                                                 ground_truths=[task] * 3, extra_infos=[{}] * 3)
        self.assertEqual(batch, scores)
        with self.assertRaises(pwab.NotFound):
            verl_adapter.compute_score(data_source="pwab", solution_str="x", ground_truth="test/999999")
        self.assertEqual(verl_adapter.compute_episode_score("pwab", "", task, {"tool_rewards": [0.0, 0.25]}), 0.25)
        self.assertEqual(verl_adapter.compute_episode_score("pwab", "", task, {"tool_rewards": []}), 0.0)
        with self.assertRaisesRegex(ValueError, "tool_rewards"):  # the legacy reward workers pass none: no 0
            verl_adapter.compute_episode_score("pwab", "", task, {"index": 0})
        with self.assertRaisesRegex(RuntimeError, "failed on pwab's side"):
            verl_adapter.compute_episode_score("pwab", "", task, {"tool_rewards": [0.0],
                                                                  "pwab_errors": ["stop: NotFound: no task"]})

    def make_tool(self, name, **config):
        return verl_adapter.tool_class()(config={"type": "native", "name": name, **config}, tool_schema=None)

    async def call(self, tool, request_id, arguments, task, agent_data=None):
        """ToolAgentLoop._call_tool: one create/execute/release per call, the trajectory in agent_data."""
        agent_data = agent_data or types.SimpleNamespace(request_id=request_id, tools_kwargs={}, extra_fields={},
                                                         messages=[])
        instance_id, _ = await tool.create(create_kwargs={"task": task})
        try:
            return await tool.execute(instance_id, arguments, agent_data=agent_data)
        finally:
            await tool.release(instance_id)

    def test_tool_keeps_one_episode_per_trajectory(self):
        task, good, good_reward = good_completion()
        query = json.loads(good[11:-12])["arguments"]["query"]
        search = self.make_tool("search_product_by_query")
        self.assertEqual(search.name, "search_product_by_query")
        dumped = search.tool_schema.model_dump(exclude_unset=True, exclude_none=True)
        self.assertEqual(dumped["function"]["parameters"]["required"], ["query"])
        stop = self.make_tool("stop")
        self.assertEqual(stop.tool_schema.model_dump()["function"]["parameters"],
                         {"type": "object", "properties": {}, "required": []})

        async def trajectory():
            response, reward, metrics = await self.call(search, "traj-a", {"query": query}, task)
            again = await self.call(stop, "traj-a", {}, task)  # the single-turn episode has finished
            return response, reward, metrics, again

        response, reward, metrics, again = asyncio.run(trajectory())
        self.assertIn("Product 0", response.text)
        self.assertAlmostEqual(reward, good_reward)
        self.assertAlmostEqual(reward, client().reward(task, completion=good)["reward"])
        self.assertTrue(metrics["done"])
        self.assertIn("episode is over", again[0].text)
        self.assertEqual(again[1], 0.0)
        self.assertSessionsBack()

        respond = self.make_tool("respond", track="multi")
        search_multi = self.make_tool("search_product_by_query", track="multi")
        stop_multi = self.make_tool("stop", track="multi")

        async def conversation():
            rewards = []
            for tool, arguments in ((respond, {"content": "Which brand?"}), (search_multi, {"query": query}),
                                    (stop_multi, {})):
                response, reward, _ = await self.call(tool, "traj-b", arguments, task)
                rewards.append(reward)
                if tool is respond:
                    self.assertEqual(sessions(), self.sessions_before + 1)
            return rewards

        rewards = asyncio.run(conversation())
        self.assertEqual(rewards[:2], [0.0, 0.0])
        self.assertAlmostEqual(verl_adapter.compute_episode_score(
            "pwab", "", task, {"tool_rewards": rewards}), good_reward)
        self.assertSessionsBack()

    def test_tool_needs_agent_data_and_ends_idle_episodes(self):
        task = "train/1"
        respond = self.make_tool("respond", track="multi", idle_s=0.2)

        async def before_verl_07():  # execute() without agent_data: the trajectory is unknown
            instance_id, _ = await respond.create(create_kwargs={"task": task})
            try:
                return await respond.execute(instance_id, {"content": "Hello?"})
            finally:
                await respond.release(instance_id)

        with self.assertRaisesRegex(RuntimeError, "verl >= 0.7"):
            asyncio.run(before_verl_07())
        self.assertSessionsBack()

        async def idle():
            await self.call(respond, "slow", {"content": "Hi"}, task)
            self.assertEqual(sessions(), self.sessions_before + 1)
            await asyncio.sleep(0.3)
            await self.call(respond, "other", {"content": "Hi"}, task)  # ends the idle episode first
            self.assertEqual(sessions(), self.sessions_before + 1)
            late = await self.call(respond, "slow", {"content": "Still there?"}, task)
            await asyncio.sleep(0.3)
            await self.call(respond, "third", {"content": "Hi"}, task)
            return late

        late = asyncio.run(idle())
        self.assertIn("ended after 0.2 s", late[0].text)
        for key in ("third", "other", "slow"):
            entry = verl_adapter._TRAJECTORIES.pop((self.url, key))
            if entry is not None and entry.episode_id:
                client().end(entry.episode_id)
        self.assertSessionsBack()

    def test_tool_errors_are_clear(self):
        search = self.make_tool("search_product_by_query")
        with self.assertRaisesRegex(ValueError, "tools_kwargs"):
            asyncio.run(search.execute("id", {"query": "x"}, agent_data=types.SimpleNamespace(
                request_id="no-task", tools_kwargs={})))
        with self.assertRaisesRegex(ValueError, "no tool"):
            self.make_tool("teleport")
        agent_data = types.SimpleNamespace(request_id="bad-task", tools_kwargs={}, extra_fields={})
        with self.assertRaises(pwab.NotFound):
            asyncio.run(self.call(search, "bad-task", {"query": "x"}, "train/999999", agent_data))
        # verl shows the model the error and counts 0 for the call: the note makes the episode's reward fail
        self.assertEqual(len(agent_data.extra_fields["pwab_errors"]), 1)
        self.assertIn("NotFound", agent_data.extra_fields["pwab_errors"][0])
        with self.assertRaisesRegex(RuntimeError, "failed on pwab's side"):
            verl_adapter.compute_episode_score("pwab", "", "train/999999",
                                               {"tool_rewards": [0.0], **agent_data.extra_fields})
        verl_adapter._TRAJECTORIES.pop((self.url, "no-task"))
        verl_adapter._TRAJECTORIES.pop((self.url, "bad-task"))
        self.assertSessionsBack()

    def test_tool_yaml(self):
        text = verl_adapter.tool_yaml(client(), track="multi")
        entries = [line for line in text.splitlines() if line.startswith("  - class_name: ")]
        self.assertEqual(len(entries), 5)
        self.assertTrue(all(line.endswith("pwab.rl.verl_adapter.PwabTool") for line in entries))
        schemas = [json.loads(line.split(": ", 1)[1]) for line in text.splitlines() if "tool_schema:" in line]
        names = [s["function"]["name"] for s in schemas]
        self.assertEqual(names, ["search_product_by_query", "get_recommendations_by_history", "add_product_review",
                                 "respond", "stop"])
        for schema in schemas:
            self.assertEqual(set(schema["function"]["parameters"]), {"type", "properties", "required"})
        configs = [json.loads(line.split(": ", 1)[1]) for line in text.splitlines() if "config:" in line]
        self.assertEqual(configs[0], {"type": "native", "url": self.url, "track": "multi"})
        self.assertIs(verl_adapter.PwabTool, verl_adapter.tool_class())
        run = subprocess.run([sys.executable, "-m", "pwab.rl.verl_adapter", "--url", self.url],
                             env=dict(os.environ, PYTHONPATH=PACKAGE), capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("  - class_name: pwab.rl.verl_adapter.PwabTool\n", run.stdout)
        try:
            import yaml
        except ImportError:
            return
        tools = yaml.safe_load(run.stdout)["tools"]  # what OmegaConf.load reads
        self.assertEqual([t["tool_schema"]["function"]["name"] for t in tools],
                         ["search_product_by_query", "get_recommendations_by_history", "add_product_review", "stop"])


if __name__ == "__main__":
    unittest.main()
