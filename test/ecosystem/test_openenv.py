"""`pwab serve` against the real OpenEnv package (`openenv`, huggingface/OpenEnv, the openenv environment): its own
clients (GenericEnvClient over the WebSocket, its request/response models over HTTP, MCPToolClient in its MCP
production mode: a session made over POST /mcp, shared with the WebSocket), `openenv validate --url`, and as many
concurrent sessions as TRL's OpenEnv guide asks of a server (one per generation: `max_concurrent_envs=64`). Every
reward is checked against pwab's own scoring of the same actions (docs/serve.md, docs/rl-engines.md)."""

import asyncio
import importlib.metadata
import json
import subprocess
import sys
import time
import unittest

import httpx
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation, ListToolsAction, ListToolsObservation
from openenv.core.env_server.types import ResetRequest, ResetResponse, State, StepRequest, StepResponse
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

from tests import world

# TRL's OpenEnv guide (docs/source/openenv.md, "Server concurrency"): the trainer opens one WebSocket session per
# generation, and the server's max_concurrent_envs should be at least generation_batch_size; its example sets 64.
TRL_CONCURRENT_SESSIONS = 64


def search(query):
    return {"name": "search_product_by_query", "arguments": {"query": query}}


class OpenEnvTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = world.server()
        cls.url = cls.server.url
        cls.api = cls.server.client()
        cls.train = cls.api.tasks(split="train", limit=TRL_CONCURRENT_SESSIONS)["tasks"]

    def expected(self, task, query):
        """pwab's own scoring of a search with `query` as the answer to `task` (POST /v1/reward, what `pwab puma
        fast-test` gives): (function accuracy, reward). The fast test scores a wrong function 0, and so does an
        episode whose one attempt it is (metrics::score_task counts right-function attempts only)."""
        got = self.api.reward(task, function="search_product_by_query", parameter=query)
        return got["function_acc"], got["reward"]

    def check_attempt(self, step_reward, f, r, msg=None):
        """A step's own accuracies against the fast test's: the same function accuracy, and with the right
        function the same result accuracy (a wrong function's result accuracy is the tool's, which the fast
        test does not report)."""
        self.assertEqual(step_reward["function_acc"], f, msg)
        if f == 1:
            self.assertAlmostEqual(step_reward["result_acc"], r, places=12, msg=msg)

    def test_openenv_validate_passes(self):
        out = subprocess.run([sys.executable, "-m", "openenv.cli", "validate", "--url", self.url, "--json"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        report = json.loads(out.stdout)
        self.assertTrue(report["passed"], out.stdout)
        self.assertEqual(report["mode"], "simulation")
        self.assertEqual({c["id"] for c in report["criteria"] if not c["passed"]}, set())
        self.assertGreaterEqual(len(report["criteria"]), 6)

    def test_generic_client_over_the_websocket(self):
        task = self.train[0]
        query = task["instruction"][:80]
        with GenericEnvClient(base_url=self.url).sync() as env:
            reset = env.reset(task=task["task"], track="multi", seed=3)
            self.assertFalse(reset.done)
            self.assertIn(task["instruction"][:30], reset.observation["text"])
            asked = env.step({"name": "respond", "arguments": {"content": "Which brand do you like?"}})
            self.assertEqual(asked.reward, 0.0)
            self.assertTrue(asked.observation["text"])  # the scripted user's answer
            searched = env.step(search(query))
            self.assertTrue(searched.observation["scored"])
            self.assertEqual(env.state()["step_count"], 2)
            stopped = env.step({"name": "stop"})
            self.assertTrue(stopped.done)
            self.assertEqual(stopped.observation["ending"], "stop")
            # The episode's reward is the benchmark's score of its one attempt: pwab's own scoring of the search.
            f, r = self.expected(task["task"], query)
            self.check_attempt(searched.observation["step_reward"], f, r)
            self.assertAlmostEqual(stopped.reward, r, places=12)
            # Errors are errors: a step after the end is refused, and the client raises.
            with self.assertRaises(RuntimeError):
                env.step({"name": "stop"})
            with self.assertRaisesRegex(RuntimeError, "unknown_task|no task"):
                env.reset(task="train/999999")

    def test_http_routes_with_openenv_models(self):
        task = self.train[1]
        query = task["instruction"][:80]
        with httpx.Client(base_url=self.url, timeout=60) as http:
            reset = http.post("/reset", json=ResetRequest(seed=5, task=task["task"]).model_dump(exclude_none=True))
            self.assertEqual(reset.status_code, 200, reset.text)
            reset = ResetResponse.model_validate(reset.json())
            episode = reset.observation["episode_id"]
            step = http.post("/step", json=StepRequest(action=search(query), episode_id=episode).model_dump(
                exclude_none=True))
            self.assertEqual(step.status_code, 200, step.text)
            step = StepResponse.model_validate(step.json())
            self.assertTrue(step.done)  # single-turn: the first task function ends the episode
            f, r = self.expected(task["task"], query)
            self.check_attempt(step.observation["step_reward"], f, r)
            self.assertAlmostEqual(step.reward, r, places=12)
            # A second episode: its state in OpenEnv's State model, and a refused step.
            other = ResetResponse.model_validate(http.post("/reset", json={"task": task["task"]}).json())
            other_id = other.observation["episode_id"]
            state = State.model_validate(http.get("/state", params={"episode_id": other_id}).json())
            self.assertEqual((state.episode_id, state.step_count), (other_id, 0))
            # A refused request is FastAPI's 422 with its detail, as OpenEnv's own servers answer.
            bad = http.post("/step", json=StepRequest(action={"name": 7}, episode_id=other_id).model_dump())
            self.assertEqual(bad.status_code, 422, bad.text)
            self.assertIn("detail", bad.json())
            gone = http.get("/state", params={"episode_id": episode})  # finished episodes are ended at once
            self.assertEqual(gone.status_code, 404, gone.text)
            self.assertTrue({"action", "observation", "state"} <= set(http.get("/schema").json()))

    def test_mcp_tool_client_production_mode(self):
        task = self.train[2]
        query = task["instruction"][:80]

        async def go():
            async with MCPToolClient(base_url=self.url) as env:
                # No episode yet: a tool call is a clear error, raised by the client.
                with self.assertRaisesRegex(RuntimeError, "no episode"):
                    await env.call_tool("stop")
                reset = await env.reset(task=task["task"], track="multi", seed=2)
                self.assertIn(task["instruction"][:30], reset.observation.text)
                tools = {t.name: t for t in await env.list_tools()}
                self.assertIn("search_product_by_query", tools)
                self.assertNotIn("episode_id", tools["search_product_by_query"].input_schema["properties"])
                searched = await env.call_tool("search_product_by_query", query=query)
                step = searched["structuredContent"]
                self.assertTrue(step["scored"])
                self.assertFalse(step["done"])
                state = await env.state()
                self.assertEqual(state.step_count, 1)  # the WebSocket's episode took the /mcp step
                # The step API with OpenEnv's MCP actions, on the same episode.
                listed = await env.step(ListToolsAction())
                self.assertIsInstance(listed.observation, ListToolsObservation)
                self.assertEqual({t.name for t in listed.observation.tools}, set(tools))
                asked = await env.step(CallToolAction(tool_name="respond", arguments={"content": "Any brand?"}))
                self.assertIsInstance(asked.observation, CallToolObservation)
                self.assertTrue(asked.observation.result)
                stopped = await env.call_tool("stop")
                with self.assertRaisesRegex(RuntimeError, "unknown tool"):
                    await env.call_tool("dance")
                return step, stopped["structuredContent"]

        step, stopped = asyncio.run(go())
        self.assertTrue(stopped["done"])
        self.assertEqual(stopped["ending"], "stop")
        f, r = self.expected(task["task"], query)
        self.check_attempt(step["step_reward"], f, r)
        self.assertAlmostEqual(stopped["reward"], r, places=12)
        # The client closed its session (the WebSocket first, then openenv/session/close): nothing stays open.
        deadline = time.monotonic() + 10
        while self.api.health()["mcp_sessions"] and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.api.health()["mcp_sessions"], 0)

    def test_concurrent_sessions_as_trl_asks(self):
        tasks = self.train[:TRL_CONCURRENT_SESSIONS]
        self.assertEqual(len(tasks), TRL_CONCURRENT_SESSIONS)
        opened = asyncio.Event()
        counts = []

        async def rollout(task, ready, all_open):
            query = task["instruction"][:60]
            async with GenericEnvClient(base_url=self.url) as env:
                reset = await env.reset(task=task["task"], track="single")
                ready.append(1)
                if len(ready) == len(tasks):
                    counts.append(self.api.health()["websockets"])
                    all_open.set()
                await all_open.wait()  # every session is open at once before any steps
                result = await env.step(search(query))
                return task["task"], query, reset, result

        async def go():
            ready = []
            return await asyncio.gather(*(rollout(t, ready, opened) for t in tasks))

        started = time.monotonic()
        results = asyncio.run(go())
        elapsed = time.monotonic() - started
        self.assertGreaterEqual(counts[0], TRL_CONCURRENT_SESSIONS)
        expected = [self.expected(task, query) for task, query, _, _ in results]
        episodes = set()
        for (task, query, reset, result), (f, r) in zip(results, expected):
            episodes.add(reset.observation["episode_id"])
            self.assertTrue(result.done, task)
            self.check_attempt(result.observation["step_reward"], f, r, msg=task)
            self.assertAlmostEqual(result.reward, r, places=12, msg=task)
        self.assertEqual(len(episodes), TRL_CONCURRENT_SESSIONS)  # isolated sessions, one episode each
        self.assertGreater(sum(r for _, r in expected), 0)  # some searches scored: not a comparison of zeros
        print(f"\n{TRL_CONCURRENT_SESSIONS} concurrent OpenEnv sessions (GenericEnvClient, openenv "
              f"{importlib.metadata.version('openenv')}): {elapsed:.2f} s for connect + reset + step + close",
              file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
