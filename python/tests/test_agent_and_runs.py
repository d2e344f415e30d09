"""pwab.serve_agent driving `pwab run --agent remote`, and pwab.read_run on the run it made."""

import json
import os
import shutil
import subprocess
import unittest
import urllib.error
import urllib.request

import pwab
from tests import world


def searching_agent(request):
    """Searches with the user's words, then stops: the same action for the same request."""
    if request["conversation"]:
        return {"name": "stop", "arguments": {}}
    words = request["first_observation"].split(":", 1)[-1].split()[:10]
    return {"name": "search_product_by_query", "arguments": {"query": " ".join(words)},
            "usage": {"prompt_tokens": 11, "completion_tokens": 2}}


class AgentAndRunsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.run_dir = os.path.join(world.scratch("runs"), "remote")
        with pwab.serve_agent(searching_agent, token="agent-key") as agent:
            subprocess.run([world.binary(), "run", "--data", world.data_dir(), "--agent", "remote", "--agent-url",
                            agent.url, "--agent-token", "agent-key", "--tasks", "0:6", "--embedder", "hashing",
                            "--out", cls.run_dir, "--quiet"], check=True, capture_output=True)

    def test_the_function_played_every_task(self):
        run = pwab.read_run(self.run_dir)
        self.assertEqual(len(run.records), 6)
        self.assertEqual(run.manifest["config"]["agent"], "remote")
        for record in run.records:
            self.assertEqual(record["error"], "")
            self.assertEqual(record["actions"][0]["name"], "search_product_by_query")
            self.assertEqual(record["prompt_tokens"], 11)

    def test_scores_and_rows_agree_with_pwab_score(self):
        run = pwab.read_run(self.run_dir)
        summary = run.scores()
        overall = summary["groups"]["overall"]
        self.assertEqual(overall["n_tasks"], 6)
        rows = run.to_rows()
        rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
        self.assertEqual(len(rows), 6)
        mean_f = sum(r["function_acc"] for r in rows) / len(rows)
        self.assertAlmostEqual(mean_f, overall["f_acc"]["value"], places=6)
        mean_r = sum(r["result_acc"] for r in rows) / len(rows)
        self.assertAlmostEqual(mean_r, overall["r_acc"]["value"], places=6)

    def test_a_cut_last_line_is_left_out_and_a_bad_line_is_named(self):
        copy = os.path.join(world.scratch("runs"), "copy")
        shutil.copytree(self.run_dir, copy)
        with open(os.path.join(copy, "results.jsonl"), "a") as f:
            f.write('{"task": "test/9", "tr')  # a killed writer's tail
        self.assertEqual(len(pwab.read_run(copy).records), 6)
        with open(os.path.join(copy, "results.jsonl")) as f:
            lines = f.read().split("\n")
        lines[2] = "{not json"
        with open(os.path.join(copy, "results.jsonl"), "w") as f:
            f.write("\n".join(lines))
        with self.assertRaises(ValueError) as caught:
            pwab.read_run(copy)
        self.assertIn("results.jsonl:3", str(caught.exception))

    def test_the_agent_server_refuses_strangers_and_reports_failures(self):
        def failing(request):
            raise RuntimeError("model unavailable")

        complete = {"protocol": "pwab-agent/1", "episode_id": "e", "step": 0, "max_steps": 10, "track": "single",
                    "first_observation": "", "history": [], "conversation": []}
        with pwab.serve_agent(failing, token="k") as agent:
            request = urllib.request.Request(agent.url, data=json.dumps(complete).encode(),
                                             headers={"Content-Type": "application/json"}, method="POST")
            with self.assertRaises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request, timeout=10)
            self.assertEqual(caught.exception.code, 401)
            request.add_header("Authorization", "Bearer k")
            with self.assertRaises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request, timeout=10)
            self.assertEqual(caught.exception.code, 500)
            self.assertIn("model unavailable", caught.exception.read().decode())

    def test_the_agent_server_names_itself_and_refuses_incomplete_requests(self):
        with pwab.serve_agent(searching_agent, name="probe") as agent:
            with urllib.request.urlopen(agent.url, timeout=10) as answer:
                self.assertEqual(json.load(answer), {"protocol": "pwab-agent/1", "name": "probe"})
            request = urllib.request.Request(agent.url, data=json.dumps({"protocol": "pwab-agent/1", "step": 0}).encode(),
                                             headers={"Content-Type": "application/json"}, method="POST")
            with self.assertRaises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request, timeout=10)
            self.assertEqual(caught.exception.code, 400)
            self.assertIn("lacks episode_id", caught.exception.read().decode())


class ExampleAgentTest(unittest.TestCase):
    """`python3 -m pwab.examples.remote_agent` as docs/python.md runs it, in both tracks."""

    def test_the_example_agent_plays_both_tracks(self):
        agent = subprocess.Popen(["/usr/bin/python3", "-m", "pwab.examples.remote_agent", "--port", "0"],
                                 stdout=subprocess.PIPE, text=True)
        try:
            url = agent.stdout.readline().strip()
            self.assertTrue(url.startswith("http://127.0.0.1:"), url)
            for track in ("single", "multi"):
                out = os.path.join(world.scratch("runs"), "example-" + track)
                subprocess.run([world.binary(), "run", "--data", world.data_dir(), "--agent", "remote", "--agent-url",
                                url, "--agent-opt", "name=example", "--track", track, "--tasks", "0:6",
                                "--embedder", "hashing", "--out", out, "--quiet"], check=True, capture_output=True)
                run = pwab.read_run(out)
                self.assertEqual([r["error"] for r in run.records], [""] * 6)
                first = [r["actions"][0]["name"] for r in run.records]
                if track == "single":  # the call at once, never a question
                    self.assertNotIn("respond", first)
                else:  # search and review ask first
                    self.assertIn("respond", first)
                self.assertGreater(run.scores()["groups"]["overall"]["f_acc"]["value"], 0)
        finally:
            agent.terminate()
            agent.wait(timeout=10)
            agent.stdout.close()


class InstallTest(unittest.TestCase):
    def test_pip_installs_the_package_offline(self):
        source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        target = world.scratch("site")
        build = world.scratch("build")
        shutil.copytree(source, os.path.join(build, "python"), ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
        out = subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--no-index", "--no-build-isolation",
                              "--no-deps", "--quiet", "--target", target, os.path.join(build, "python")],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        check = subprocess.run(["/usr/bin/python3", "-c", "import pwab, pwab.examples.remote_agent, pwab.rl.trl_adapter; "
                                "print(pwab.__version__, pwab.__file__)"],
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": target},
                               cwd=target)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertTrue(check.stdout.startswith("0.1.0 " + target), check.stdout)

    def test_an_in_tree_install_leaves_the_checkout_clean(self):
        # pip builds in the source folder: what it leaves there (build/, pwab.egg-info/) must be ignored by git.
        source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        repo = os.path.dirname(source)
        if shutil.which("git") is None or not os.path.isdir(os.path.join(repo, ".git")):
            self.skipTest("not a git checkout")
        left = [os.path.join("python", "build", "lib", "pwab", "__init__.py"),
                os.path.join("python", "pwab.egg-info", "PKG-INFO")]
        out = subprocess.run(["git", "-C", repo, "check-ignore", "--no-index", *left], capture_output=True, text=True)
        self.assertEqual(sorted(out.stdout.split()), sorted(left), out.stderr)


if __name__ == "__main__":
    unittest.main()
