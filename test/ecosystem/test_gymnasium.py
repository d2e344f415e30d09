"""pwab's Gymnasium environment (python/pwab/env.py) against the real gymnasium: registered ids that
gymnasium.make builds (with and without importing pwab first), Gymnasium's own env checker, and whole episodes
through make's wrappers against a real `pwab serve` on a mini synthetic dataset (docs/python.md)."""

import json
import subprocess
import sys
import unittest
import warnings

import gymnasium
from gymnasium.utils.env_checker import check_env

import pwab
import pwab.errors
from tests import world


class GymnasiumTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.url = world.server().url

    def test_ids_are_registered_and_make_builds_them(self):
        for env_id, track in (("pwab/PersonalWAB-v0", "single"), ("pwab/PersonalWAB-multi-v0", "multi")):
            self.assertIn(env_id, gymnasium.registry)
            env = gymnasium.make(env_id, server=self.url)
            try:
                self.assertIsInstance(env.unwrapped, pwab.Env)
                obs, info = env.reset(seed=2)
                self.assertIsInstance(obs, str)
                self.assertEqual(info["track"], track)
                self.assertIn(obs, env.observation_space)
            finally:
                env.close()

    def test_make_imports_pwab_itself(self):
        # "module:id" makes Gymnasium import pwab.env, which registers the ids: no `import pwab` in the user's code.
        code = ("import gymnasium\n"
                f"env = gymnasium.make('pwab.env:pwab/PersonalWAB-v0', server={self.url!r})\n"
                "obs, info = env.reset(seed=1)\n"
                "print(type(env.unwrapped).__module__, info['track'])\n"
                "env.close()\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["pwab.env", "single"])

    def test_gymnasiums_env_checker_passes(self):
        for env_id in ("pwab/PersonalWAB-v0", "pwab/PersonalWAB-multi-v0"):
            env = gymnasium.make(env_id, server=self.url, disable_env_checker=True)
            try:
                with warnings.catch_warnings(record=True) as seen:
                    warnings.simplefilter("always")
                    check_env(env.unwrapped)
                # The checker reports soft problems as warnings: none is expected.
                self.assertEqual([str(w.message) for w in seen], [])
            finally:
                env.close()

    def test_an_episode_through_makes_wrappers(self):
        env = gymnasium.make("pwab/PersonalWAB-v0", server=self.url)
        try:
            obs, info = env.reset(options={"task": "test/0"})
            self.assertEqual(info["task"], "test/0")
            obs, reward, terminated, truncated, info = env.step(
                {"name": "search_product_by_query", "arguments": {"query": obs[:200]}})
            self.assertTrue(terminated)
            self.assertFalse(truncated)
            self.assertEqual(reward, info["score"]["r"])
            self.assertEqual(info["record"]["task"], "test/0")
            self.assertTrue(0.0 <= reward <= 1.0)
            # A policy's text that is no tool call is answered, not a crash and not a server step.
            env.reset(options={"task": "test/1"})
            obs, reward, terminated, truncated, info = env.step("search for shoes")
            self.assertTrue(obs.startswith("Invalid action"))
            self.assertEqual((reward, terminated, truncated), (0.0, False, False))
            obs, reward, terminated, truncated, info = env.step(json.dumps({"name": "stop"}))
            self.assertTrue(terminated or truncated)
        finally:
            env.close()

    def test_a_seeded_reset_is_reproducible(self):
        env = gymnasium.make("pwab/PersonalWAB-multi-v0", server=self.url)
        try:
            # reset(seed) and the unseeded resets after it repeat (tasks drawn, and the scripted user's seeds).
            runs = []
            for _ in range(2):
                first = env.reset(seed=11)
                then = env.reset()
                runs.append([(first[0], first[1]["task"], first[1]["seed"]), (then[0], then[1]["task"],
                                                                              then[1]["seed"])])
            self.assertEqual(runs[0], runs[1])
            self.assertEqual(runs[0][0][2], 11)
        finally:
            env.close()

    def test_an_unreachable_server_raises(self):
        env = gymnasium.make("pwab/PersonalWAB-v0", server="http://127.0.0.1:9", disable_env_checker=True)
        with self.assertRaises(pwab.errors.Unreachable):
            env.reset(seed=0)
        env.close()


if __name__ == "__main__":
    unittest.main()
