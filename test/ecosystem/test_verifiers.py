"""pwab against the real verifiers (0.4: its v1 API; docs/rl-engines.md, section verifiers), in the `verifiers`
environment (no torch there).

Everything verifiers does is its own code: `vf-eval` resolves pwab's plugin (pwab_verifiers, i.e.
pwab.rl.verifiers_v1), loads the taskset from a real `pwab serve`, runs the policy's program in a subprocess
runtime behind its interception server, and scores the traces. The model is an OpenAI-compatible endpoint on
loopback: a scripted server of this test (stdlib http.server) that answers each task with a planned reply
(Hermes <tool_call> text, a structured tool_calls message, or plain text), so that the rewards are known to pwab
and not all 0; and `pwab lm serve`'s /v1/chat/completions with a tiny random model (made by
tiny_models.py with the core environment's interpreter, since this environment has no torch). The rewards
vf-eval reports must equal pwab's own scores of the same completions (/v1/reward, or the same actions replayed
as a pwab episode)."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pwab
from pwab.rl.parse import completion_text, parse_action_text
from tests import world

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
# The core environment beside this one (run.sh names this one in PWAB_ECOSYSTEM_ENV): it has torch for tiny_models.
CORE_PYTHON = os.path.join(os.path.dirname(os.environ.get("PWAB_ECOSYSTEM_ENV", os.path.dirname(BIN))), "core", "bin",
                           "python")
KEY_VAR = "PWAB_TEST_MODEL_KEY"


def hermes(name, arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


class ScriptedModel:
    """An OpenAI-compatible chat endpoint on loopback. `plan(messages)` gives the next assistant message (a dict
    with content and/or tool_calls) for the conversation the request carries; every request is kept."""

    def __init__(self, plan):
        self.plan, self.requests = plan, []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                owner.requests.append((self.path, body))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self.answer(404, {"error": {"message": f"no route {self.path}"}})
                try:
                    message = owner.plan(body["messages"])
                except Exception as e:  # noqa: BLE001 - a planning slip must show in the test, not hang it
                    return self.answer(500, {"error": {"message": f"scripted model: {e!r}"}})
                message = {"role": "assistant", "content": None, **message}
                self.answer(200, {"id": f"chatcmpl-{len(owner.requests)}", "object": "chat.completion",
                                  "created": 0, "model": body.get("model", "scripted"),
                                  "choices": [{"index": 0, "message": message,
                                               "finish_reason": "tool_calls" if message.get("tool_calls") else
                                               "stop"}],
                                  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    return self.answer(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
                self.answer(404, {"error": {"message": "not found"}})

            def answer(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def first_user_text(messages):
    for message in messages:
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    return ""


def single_turn_script(t0, t1, t2):
    """Three tasks answered with a Hermes text call, a structured tool call, and a plain-text review: the scripted
    model's plan, and each task's completion as pwab scores it (task key -> text)."""
    replies = {
        t0["instruction"]: {"content": hermes("search_product_by_query", {"query": t0["instruction"]})},
        t1["instruction"]: {"tool_calls": [{"id": "call_0", "type": "function", "function": {
            "name": "search_product_by_query", "arguments": json.dumps({"query": t1["instruction"]})}}]},
        t2["instruction"]: {"content": "add_product_review\nLovely, works as described."},
    }

    def plan(messages):
        text = first_user_text(messages)
        return next(reply for instruction, reply in replies.items() if instruction in text)

    completions = {t0["task"]: replies[t0["instruction"]]["content"],
                   t1["task"]: hermes("search_product_by_query", {"query": t1["instruction"]}),
                   t2["task"]: replies[t2["instruction"]]["content"]}
    return plan, completions


def episode_script(task):
    """Multi-turn track: ask the user, search with the instruction, stop. The scripted model's plan (one action per
    assistant turn) and the actions."""
    actions = ["Which brand do you like?", hermes("search_product_by_query", {"query": task["instruction"]}),
               hermes("stop", {})]

    def plan(messages):
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return {"content": actions[min(turn, len(actions) - 1)]}

    return plan, actions


def replay_episode(client, task, actions):
    """The same actions played through pwab's own episode routes; the last answer (done, with the reward)."""
    started = client.env_reset(task=task["task"], track="multi", history=False)
    episode_id = started["observation"]["episode_id"]
    for text in actions:
        name, arguments = parse_action_text(text, fallback="respond")
        answer = client.env_step(episode_id, {"name": name, "arguments": arguments or {}})
        if answer["done"]:
            break
    return answer


def vf_eval(taskset_args, model_url, out, model="scripted", extra=(), timeout=240):
    """Runs verifiers' own `vf-eval` on pwab's plugin; returns (the completed process, the episodes it wrote to
    traces.jsonl, each with the one trace of its one seat as "trace")."""
    command = [os.path.join(BIN, "vf-eval"), "pwab_verifiers", *taskset_args, "--model", model,
               "--client.base-url", model_url, "--client.api-key-var", KEY_VAR, "--no-push", "--no-rich",
               "--max-concurrent", "2", "-o", out, *extra]
    env = dict(os.environ, **{KEY_VAR: "unused"})
    run = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=out)
    episodes = []
    for path in glob.glob(os.path.join(out, "**", "traces.jsonl"), recursive=True):
        with open(path) as f:
            episodes += [json.loads(line) for line in f if line.strip()]
    for episode in episodes:
        assert len(episode["traces"]) <= 1, "pwab's environment has one seat"
        episode["trace"] = episode["traces"][0] if episode["traces"] else {}
    return run, episodes


def reward_of(episode, name="pwab_reward"):
    found = (episode["trace"].get("rewards") or {}).get(name)
    return None if found is None else found["score"]


class VerifiersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import verifiers
        cls.version = verifiers.__version__
        cls.server = world.server()
        cls.client = pwab.Client(cls.server.url)
        cls.scratch = tempfile.mkdtemp(prefix="vf-", dir=os.environ.get("PWAB_ECOSYSTEM_SCRATCH"))
        # Search tasks whose instruction, as the query, scores above 0: answers with a known, non-trivial reward
        # (the reward endpoint itself says which are good; the test never reads a target).
        tasks = cls.client.tasks("test", 0, 60)["tasks"]
        items = [{"task": t["task"], "function": "search_product_by_query", "parameter": t["instruction"]}
                 for t in tasks]
        scored = cls.client.rewards(items)
        good = [(t, a) for t, a in zip(tasks, scored) if a["reward"] > 0]
        if len(good) < 3:
            raise AssertionError("fewer than 3 of the first 60 test tasks score their instruction above 0")
        cls.good = good[:3]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def out(self, name):
        return tempfile.mkdtemp(prefix=name + "-", dir=self.scratch)

    def test_installed_verifiers_is_v1(self):
        """0.4 ships only the v1 API (verifiers.v1); the v0 classes the old adapter targets are gone."""
        import verifiers
        import verifiers.v1 as vf
        self.assertEqual(self.version, "0.4.0")
        self.assertFalse(hasattr(verifiers, "SingleTurnEnv"))
        self.assertTrue(issubclass(vf.Env, object) and hasattr(vf, "Taskset"))

    def test_load_environment_single_and_episode(self):
        import verifiers.v1 as vf
        from pwab.rl import verifiers_v1
        keys = [t["task"] for t, _ in self.good[:2]]
        for mode in ("single", "episode"):
            with self.subTest(mode=mode):
                env = pwab.load_environment(url=self.server.url, tasks=keys, mode=mode, history_items=2)
                self.assertIsInstance(env, vf.Env)
                self.assertIsInstance(env, verifiers_v1.PwabEnv)
                tasks = list(env.taskset)
                self.assertEqual([t.key for t in tasks], keys)
                self.assertEqual(tasks[0].data.mode, mode)
                self.assertIn("My request:", tasks[0].data.prompt)
                self.assertIn("<tool_call>", tasks[0].data.system_prompt)
                if mode == "episode":
                    self.assertEqual(tasks[0].data.track, "multi")
                    self.assertIn("respond", tasks[0].data.system_prompt)
        # verifiers' own loader finds the plugin by its id, with the v0-era keyword max_turns as a seat setting
        config = vf.resolve_env_config({"taskset": {"id": "pwab_verifiers", "url": self.server.url,
                                                    "limit": 3}, "agent": {"max_turns": 4}})
        env = vf.load_environment(config)
        self.assertIsInstance(env, verifiers_v1.PwabEnv)
        self.assertEqual(len(list(env.taskset)), 3)
        self.assertEqual(config.agent.max_turns, 4)
        env = pwab.load_environment(url=self.server.url, limit=1, max_turns=3)  # no TypeError in either mode
        self.assertEqual(env.config.agent.max_turns, 3)

    def test_unknown_task_and_bad_settings_are_errors(self):
        env = pwab.load_environment(url=self.server.url, tasks=["test/999999"])
        with self.assertRaisesRegex(ValueError, "unknown task 'test/999999'"):
            list(env.taskset)
        with self.assertRaises(ValueError):
            pwab.load_environment(url=self.server.url, mode="bogus")
        with self.assertRaisesRegex(TypeError, "eval_split"):
            pwab.load_environment(url=self.server.url, eval_split="test", eval_limit=3)

    def test_vf_eval_single_turn_rewards_are_pwabs(self):
        """vf-eval on three tasks: a Hermes text call, a structured tool call, and a plain-text answer."""
        (t0, _), (t1, _), (t2, _) = self.good
        plan, completions = single_turn_script(t0, t1, t2)
        model = ScriptedModel(plan)
        try:
            run, traces = vf_eval(["--env.taskset.url", self.server.url, "--env.taskset.tasks",
                                   json.dumps([t0["task"], t1["task"], t2["task"]])], model.url, self.out("single"))
        finally:
            model.close()
        self.assertEqual(run.returncode, 0, run.stderr[-4000:])
        self.assertEqual(len(traces), 3, run.stderr[-4000:])
        expected = {key: answer for key, answer in zip(completions, self.client.rewards(
            [{"task": key, "completion": text} for key, text in completions.items()]))}
        self.assertGreater(expected[t0["task"]]["reward"], 0)
        self.assertGreater(expected[t1["task"]]["reward"], 0)
        for episode in traces:
            key = episode["task"]["key"]
            self.assertTrue(episode["ok"] and episode["trace"]["ok"], episode["errors"] or episode["trace"]["errors"])
            self.assertAlmostEqual(reward_of(episode), expected[key]["reward"], places=6)
            self.assertAlmostEqual(episode["trace"]["metrics"]["pwab_function_acc"], expected[key]["function_acc"],
                                   places=6)
        # one model call per task: the first answer is the one scored
        self.assertEqual(len(model.requests), 3)

    def test_vf_eval_episodes_score_as_pwab_episodes(self):
        """Multi-turn track: ask the user, search, stop; the reward is the episode's score, equal to the score of
        the same actions played through pwab's own episode routes."""
        task, _ = self.good[0]
        plan, actions = episode_script(task)
        sessions = self.client.health()["sessions"]
        model = ScriptedModel(plan)
        try:
            run, traces = vf_eval(["--env.taskset.url", self.server.url, "--env.taskset.mode", "episode",
                                   "--env.taskset.tasks", json.dumps([task["task"]]),
                                   "--env.agent.max-turns", "6"], model.url, self.out("episode"))
        finally:
            model.close()
        self.assertEqual(run.returncode, 0, run.stderr[-4000:])
        self.assertEqual(len(traces), 1, run.stderr[-4000:])
        episode = traces[0]
        self.assertTrue(episode["ok"] and episode["trace"]["ok"], episode["errors"] or episode["trace"]["errors"])
        self.assertEqual(len(model.requests), 3)
        answer = replay_episode(self.client, task, actions)  # the same three actions, played directly
        self.assertTrue(answer["done"])
        self.assertGreater(answer["reward"], 0)
        self.assertAlmostEqual(reward_of(episode), answer["reward"], places=6)
        self.assertEqual(self.client.health()["sessions"], sessions, "an episode was left open")

    def test_outage_is_an_errored_rollout_not_reward_0(self):
        """The pwab server goes away while the model answers: the rollout is errored, its reward absent."""
        doomed = pwab.launch(world.data_dir(), args=["--embedder", "hashing"])
        task, _ = self.good[0]

        def plan(messages):
            doomed.stop()
            return {"content": hermes("search_product_by_query", {"query": task["instruction"]})}

        model = ScriptedModel(plan)
        try:
            run, traces = vf_eval(["--env.taskset.url", doomed.url, "--env.taskset.tasks",
                                   json.dumps([task["task"]])], model.url, self.out("outage"))
        finally:
            model.close()
            doomed.stop()
        self.assertEqual(len(traces), 1, run.stderr[-4000:])
        episode = traces[0]
        self.assertFalse(episode["ok"])
        self.assertFalse(episode["trace"]["ok"])
        self.assertIsNone(reward_of(episode))
        self.assertIn("pwab: /v1/reward refused the answer", json.dumps(episode["trace"]["errors"]))

    def test_vf_eval_against_pwab_lm_serve(self):
        """The issue's endpoint: `pwab lm serve` with a tiny random model. Its replies are noise, so the check is
        that every reward vf-eval reports is pwab's /v1/reward of the same reply."""
        if not os.path.exists(CORE_PYTHON):
            why = f"no core environment ({CORE_PYTHON}) to make the tiny model with (it needs torch)"
            if os.environ.get("PWAB_REQUIRE_ECOSYSTEM") == "1":
                self.fail(why)
            self.skipTest(why)
        model_dir = os.path.join(self.scratch, "tiny")
        made = subprocess.run([CORE_PYTHON, "-c", "import sys, tiny_models; tiny_models.make_llama(sys.argv[1])",
                               model_dir], cwd=HERE, capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, PYTHONPATH=HERE))
        self.assertEqual(made.returncode, 0, made.stderr[-3000:])
        lm = subprocess.Popen([world.binary(), "lm", "serve", "--model", model_dir, "--port", "0", "--name", "tiny",
                               "--chat-max-tokens", "24"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        try:
            url = lm.stdout.readline().strip()
            self.assertTrue(url.startswith("http"), lm.stderr.read() if lm.poll() is not None else url)
            keys = [t["task"] for t, _ in self.good[:2]]
            run, traces = vf_eval(["--env.taskset.url", self.server.url, "--env.taskset.tasks", json.dumps(keys),
                                   "--env.taskset.history-items", "0", "--sampling.max-tokens", "24"],
                                  url + "/v1", self.out("lm"), model="tiny")
        finally:
            lm.terminate()
            lm.wait(timeout=30)
            lm.stdout.close()
            lm.stderr.close()
        self.assertEqual(run.returncode, 0, run.stderr[-4000:])
        self.assertEqual(len(traces), 2, run.stderr[-4000:])
        for episode in traces:
            self.assertTrue(episode["ok"] and episode["trace"]["ok"], episode["errors"] or episode["trace"]["errors"])
            reply = [n["message"] for n in episode["trace"]["nodes"] if n.get("sampled")][0]
            expected = self.client.reward(episode["task"]["key"], completion=completion_text(reply))
            self.assertAlmostEqual(reward_of(episode), expected["reward"], places=6)


if __name__ == "__main__":
    unittest.main()
