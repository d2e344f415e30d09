"""pwab.Env: the Gymnasium API shape over a real `pwab serve`, in both tracks."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import pwab
from tests import world


class EnvTest(unittest.TestCase):
    def test_single_turn_episode_returns_its_score_as_reward(self):
        env = pwab.Env(world.server().url, track="single")
        obs, info = env.reset(options={"task": "test/2"})
        self.assertIsInstance(obs, str)
        self.assertEqual(info["task"], "test/2")
        self.assertTrue(info["tools"])
        obs, reward, terminated, truncated, info = env.step(
            '{"name": "search_product_by_query", "arguments": {"query": "' + obs.split(":", 1)[-1][:60].replace('"', "") + '"}}')
        self.assertTrue(terminated)
        self.assertFalse(truncated)
        self.assertEqual(reward, info["score"]["r"])
        self.assertEqual(info["record"]["ending"], "task_function")
        self.assertTrue(0.0 <= reward <= 1.0)
        with self.assertRaises(RuntimeError):
            env.step({"name": "stop"})  # the episode is over: reset first
        env.close()

    def test_multi_turn_conversation_and_step_cap(self):
        env = pwab.Env(world.server().url, track="multi", max_steps=3)
        obs, info = env.reset(seed=7, options={"task": "test/4"})
        obs, reward, terminated, truncated, info = env.step({"name": "respond", "arguments": {"content": "Which brand?"}})
        self.assertFalse(terminated or truncated)
        self.assertEqual(reward, 0.0)
        self.assertTrue(obs)  # the scripted user answered
        env.step({"type": "function", "function": {"name": "respond", "arguments": '{"content": "Anything else?"}'}})
        obs, reward, terminated, truncated, info = env.step({"name": "respond", "arguments": {"content": "Ok?"}})
        self.assertTrue(truncated)  # the third step is the cap
        self.assertFalse(terminated)
        self.assertEqual(info["record"]["ending"], "step_cap")
        # stop ends an episode by its own rules
        env.reset(options={"task": "test/5"})
        _, reward, terminated, truncated, info = env.step({"name": "stop"})
        self.assertTrue(terminated)
        self.assertEqual(reward, 0.0)
        env.close()

    def test_reset_walks_the_tasks_and_drops_an_open_episode(self):
        server = world.server()
        env = pwab.Env(server.url)
        _, first = env.reset()
        _, second = env.reset()  # the first, unfinished, is ended
        self.assertEqual([first["task"], second["task"]], ["test/0", "test/1"])
        with self.assertRaises(pwab.NotFound):
            server.client().state(first["episode_id"])
        env.close()
        with self.assertRaises(pwab.NotFound):
            server.client().state(second["episode_id"])

    def test_actions_are_checked(self):
        self.assertEqual(pwab.parse_action('{"name": "stop"}'), ("stop", {}))
        self.assertEqual(pwab.parse_action({"name": "respond", "arguments": {"content": "hi"}}),
                         ("respond", {"content": "hi"}))
        for bad in ("not json", "[1]", {"arguments": {}}, {"name": ""}, 5):
            with self.assertRaises(ValueError):
                pwab.parse_action(bad)

    def test_with_gymnasium_it_is_a_gymnasium_env_with_text_spaces(self):
        # gymnasium is not a Debian package: a minimal stand-in with its Env base and Text space checks that pwab
        # subclasses the real API when the module is importable (the real package has the same names).
        stub = tempfile.mkdtemp()
        os.makedirs(os.path.join(stub, "gymnasium"))
        with open(os.path.join(stub, "gymnasium", "__init__.py"), "w") as f:
            f.write(textwrap.dedent("""
                class Env:
                    def reset(self, seed=None, options=None):
                        self.seeded = seed
                from . import spaces
            """))
        with open(os.path.join(stub, "gymnasium", "spaces.py"), "w") as f:
            f.write(textwrap.dedent("""
                class Text:
                    def __init__(self, max_length, min_length=1, charset=None):
                        self.max_length, self.min_length, self.charset = max_length, min_length, charset
            """))
        code = textwrap.dedent(f"""
            import gymnasium, pwab
            env = pwab.Env({world.server().url!r})
            assert isinstance(env, gymnasium.Env)
            assert env.observation_space.max_length == 1 << 20 and "é" in env.observation_space.charset
            obs, info = env.reset(seed=3, options={{"task": "test/0"}})
            assert env.seeded == 3 and isinstance(obs, str)
            env.close()
            print("ok")
        """)
        package = os.path.dirname(os.path.dirname(os.path.abspath(pwab.__file__)))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join([stub, package])})
        self.assertEqual(out.stdout.strip(), "ok", out.stderr)


if __name__ == "__main__":
    unittest.main()
