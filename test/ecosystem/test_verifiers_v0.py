"""pwab against the real verifiers 0.3.1, the last release with the v0 API (SingleTurnEnv, MultiTurnEnv, Rubric)
that pwab.rl.verifiers_adapter serves (docs/rl-engines.md, "v0 (verifiers 0.3)"), in the `verifiers-v0`
environment (0.3 pins mcp<2, the current 0.4 mcp 2: two environments).

verifiers' own `vf-eval pwab -a '{...}'` loads the environment through its legacy loader (pwab.load_environment),
serves it from its env server process, asks a scripted OpenAI-compatible model on loopback (test_verifiers's
ScriptedModel), scores with pwab's rubric and writes results.jsonl; the rewards there must equal pwab's own scores
of the same completions (/v1/reward, or the same actions replayed as a pwab episode)."""

import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

import pwab
from tests import world
from test_verifiers import ScriptedModel, episode_script, hermes, replay_episode, single_turn_script

BIN = os.path.dirname(sys.executable)
KEY_VAR = "PWAB_TEST_MODEL_KEY"


def vf_eval(env_args, model_url, out, examples, timeout=300):
    """verifiers 0.3's `vf-eval pwab` with these environment arguments; returns (the completed process, the rows
    of the results.jsonl it saved)."""
    command = [os.path.join(BIN, "vf-eval"), "pwab", "-a", json.dumps(env_args), "-m", "scripted", "-b", model_url,
               "-k", KEY_VAR, "--api-client-type", "openai_chat_completions", "-n", str(examples), "-r", "1",
               "-c", "2", "-s", "-d", "-o", out]
    run = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=out,
                         env=dict(os.environ, **{KEY_VAR: "unused"}))
    rows = []
    for path in glob.glob(os.path.join(out, "**", "results.jsonl"), recursive=True):
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    return run, rows


class VerifiersV0Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import verifiers
        cls.version = verifiers.__version__
        cls.server = world.server()
        cls.client = pwab.Client(cls.server.url)
        cls.scratch = tempfile.mkdtemp(prefix="vf0-", dir=os.environ.get("PWAB_ECOSYSTEM_SCRATCH"))
        # The first test task whose instruction, as a search query, scores above 0 (the reward endpoint says which;
        # the test never reads a target): vf-eval runs from there, so that a known reward is not 0.
        tasks = cls.client.tasks("test", 0, 60)["tasks"]
        scored = cls.client.rewards([{"task": t["task"], "function": "search_product_by_query",
                                      "parameter": t["instruction"]} for t in tasks])
        good = [i for i, answer in enumerate(scored) if answer["reward"] > 0]
        if not good:
            raise AssertionError("none of the first 60 test tasks scores its instruction above 0")
        cls.offset = good[0]
        cls.tasks = tasks[cls.offset:cls.offset + 3]

    def out(self, name):
        return tempfile.mkdtemp(prefix=name + "-", dir=self.scratch)

    def env_args(self, **more):
        return {"url": self.server.url, "split": "test", "offset": self.offset, "limit": 3, "eval_split": "test",
                "eval_limit": 3, "history_items": 2, **more}

    def test_installed_verifiers_has_the_v0_api(self):
        import verifiers as vf
        self.assertEqual(self.version, "0.3.1")
        self.assertTrue(hasattr(vf, "SingleTurnEnv") and hasattr(vf, "MultiTurnEnv") and hasattr(vf, "Rubric"))

    def test_load_environment_in_both_modes(self):
        import verifiers as vf
        from pwab.rl import verifiers_adapter
        single = pwab.load_environment(**self.env_args(max_turns=4))  # accepted, one turn whatever it says
        self.assertIsInstance(single, vf.SingleTurnEnv)
        self.assertEqual(single.dataset["answer"], [t["task"] for t in self.tasks])
        self.assertEqual(single.dataset["info"][0]["pwab_task"], self.tasks[0]["task"])
        self.assertIn("<tool_call>", json.dumps(single.dataset["prompt"][0]))
        episode = verifiers_adapter.load_environment(**self.env_args(multi_turn=True, max_turns=6))
        self.assertIsInstance(episode, vf.MultiTurnEnv)
        self.assertEqual(episode.max_turns, 6)
        # verifiers' own legacy loader finds pwab by its environment id
        loaded = vf.load_environment("pwab", **self.env_args())
        self.assertIsInstance(loaded, vf.SingleTurnEnv)

    def test_vf_eval_single_turn_rewards_are_pwabs(self):
        """Three tasks answered with a Hermes text call, a structured tool call and a review in plain text."""
        t0, t1, t2 = self.tasks
        plan, completions = single_turn_script(t0, t1, t2)
        model = ScriptedModel(plan)
        try:
            run, rows = vf_eval(self.env_args(), model.url, self.out("single"), 3)
        finally:
            model.close()
        self.assertEqual(run.returncode, 0, run.stderr[-4000:])
        self.assertEqual(sorted(r["answer"] for r in rows), sorted(t["task"] for t in self.tasks), run.stderr[-3000:])
        expected = dict(zip(completions, self.client.rewards(
            [{"task": key, "completion": text} for key, text in completions.items()])))
        self.assertGreater(expected[t0["task"]]["reward"], 0)
        for row in rows:
            self.assertIsNone(row["error"], row["error"])
            want = expected[row["answer"]]
            self.assertAlmostEqual(row["reward"], want["reward"], places=6)
            self.assertAlmostEqual(row["pwab_reward"], want["reward"], places=6)
            self.assertAlmostEqual(row["pwab_function_acc"], want["function_acc"], places=6)
        self.assertEqual(len(model.requests), 3)

    def test_vf_eval_episode_scores_as_a_pwab_episode(self):
        """multi_turn=True: ask the user, search, stop; the reward is the episode's score, equal to the same actions
        played through pwab's episode routes, and no episode stays open."""
        task = self.tasks[0]
        plan, actions = episode_script(task)
        sessions = self.client.health()["sessions"]
        model = ScriptedModel(plan)
        try:
            run, rows = vf_eval(self.env_args(multi_turn=True, limit=1, eval_limit=1, max_turns=6), model.url,
                                self.out("episode"), 1)
        finally:
            model.close()
        self.assertEqual(run.returncode, 0, run.stderr[-4000:])
        self.assertEqual(len(rows), 1, run.stderr[-3000:])
        self.assertIsNone(rows[0]["error"], rows[0]["error"])
        self.assertEqual(len(model.requests), 3)
        answer = replay_episode(self.client, task, actions)
        self.assertTrue(answer["done"])
        self.assertGreater(answer["reward"], 0)
        self.assertAlmostEqual(rows[0]["reward"], answer["reward"], places=6)
        self.assertEqual(self.client.health()["sessions"], sessions, "an episode was left open")

    def test_outage_is_an_errored_rollout(self):
        """The pwab server goes away while the model answers: verifiers records the rollout's error, which names
        /v1/reward (the reward is not a silent 0 of a working rubric)."""
        doomed = pwab.launch(world.data_dir(), args=["--embedder", "hashing"])
        task = self.tasks[0]

        def plan(messages):
            doomed.stop()
            return {"content": hermes("search_product_by_query", {"query": task["instruction"]})}

        model = ScriptedModel(plan)
        try:
            run, rows = vf_eval(dict(self.env_args(limit=1, eval_limit=1), url=doomed.url), model.url,
                                self.out("outage"), 1)
        finally:
            model.close()
            doomed.stop()
        self.assertEqual(len(rows), 1, run.stderr[-4000:])
        self.assertIsNotNone(rows[0]["error"])
        self.assertIn("/v1/reward refused the answer", json.dumps(rows[0]["error"]))


if __name__ == "__main__":
    unittest.main()
