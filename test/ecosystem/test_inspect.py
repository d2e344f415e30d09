"""PersonalWAB in Inspect AI (python/pwab/inspect_task.py, docs/inspect.md) with the real inspect_ai: the task
plays each sample as an episode of a real `pwab serve` it starts on a mini synthetic dataset, and the scores
Inspect reports equal `pwab score` of the episodes the server recorded. The agent is Inspect's `mockllm` model
scripted per turn (its custom outputs as a function of the conversation), and in the multi-turn track the user is
an Inspect model role (mockllm again), reached by the server's LLM user simulator through the task's bridge. The
`inspect eval` command finds the task through the package's entry point, with `pwab lm serve` (a tiny random
LLaMA) as the OpenAI-compatible model."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

import pwab
from pwab.inspect_task import personalwab
from tests import world

BINARY = os.environ.get("PWAB_BINARY", "pwab")
SCRATCH = os.environ.get("PWAB_ECOSYSTEM_SCRATCH") or tempfile.mkdtemp()
SERVE_ARGS = "--embedder hashing"


def pwab_score(run_dir):
    out = subprocess.run([BINARY, "score", run_dir, "--format", "json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def overall(summary, metric):
    value = summary["groups"]["overall"][metric]
    return value["value"] if isinstance(value, dict) else value


def records(run_dir):
    with open(os.path.join(run_dir, "results.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def last_user_text(messages):
    for m in reversed(messages):
        if m.role in ("user", "tool"):
            return m.text
    return ""


def scripted_agent(plan):
    """A mockllm policy: `plan(turn, messages, tools)` → a ModelOutput, turn counted per conversation (by the
    number of assistant messages so far)."""

    def output(messages, tools, tool_choice, config):
        turn = sum(1 for m in messages if m.role == "assistant")
        return plan(turn, messages, tools)

    return output


def counted(output):
    # With usage given, mockllm does not count tokens itself (it would fetch tiktoken's encoding from the web).
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def call(tool, **arguments):
    return counted(ModelOutput.for_tool_call("mockllm/model", tool, arguments))


def say(text):
    return counted(ModelOutput.from_content("mockllm/model", text))


def sample_scores(log):
    return {s.id: s.scores["pwab_scorer"].value for s in log.samples}


class InspectTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = world.data_dir()
        with open(os.path.join(cls.data, "user_instructions.json"), encoding="utf-8") as f:
            cls.types = {f"test/{i}": t["type"] for i, t in enumerate(json.load(f)["test"])}

    def check_against_pwab_score(self, log, run_dir):
        """Inspect's per-sample scores are the records' scores, and its means are `pwab score`'s."""
        self.assertEqual(log.status, "success", log.error)
        summary = pwab_score(run_dir)
        recorded = {r["task"]: r for r in records(run_dir)}
        scores = sample_scores(log)
        self.assertEqual(set(scores), set(recorded))
        self.assertEqual(summary["groups"]["overall"]["n_tasks"], len(scores))
        # Inspect's own summary: one score per key of the scorer's value, each with its metrics.
        metrics = {(s.name, name): m.value for s in log.results.scores for name, m in s.metrics.items()}
        self.assertAlmostEqual(metrics["res_acc", "mean"], overall(summary, "r_acc"), places=9)
        self.assertAlmostEqual(metrics["func_acc", "mean"], overall(summary, "f_acc"), places=9)
        res = [v["res_acc"] for v in scores.values()]
        func = [v["func_acc"] for v in scores.values()]
        print(f"\n{run_dir}: Inspect res_acc {metrics['res_acc', 'mean']:.6f} func_acc "
              f"{metrics['func_acc', 'mean']:.6f}; pwab score r_acc {overall(summary, 'r_acc'):.6f} f_acc "
              f"{overall(summary, 'f_acc'):.6f} over {len(scores)} tasks", file=sys.stderr)
        self.assertAlmostEqual(sum(res) / len(res), overall(summary, "r_acc"), places=9)
        self.assertAlmostEqual(sum(func) / len(func), overall(summary, "f_acc"), places=9)
        return scores, recorded, metrics

    def test_single_turn_with_scripted_tool_calls(self):
        out = os.path.join(SCRATCH, "single-run")
        # The first task of each type, and test/0.
        firsts = {}
        for task_id in sorted(self.types, key=lambda t: int(t.split("/")[1])):
            firsts.setdefault(self.types[task_id], task_id)
        tasks = sorted(set(firsts.values()) | {"test/0"})

        def plan(turn, messages, tools):
            names = {t.name for t in tools}
            text = last_user_text(messages)
            # A policy that picks its function from the words of the request (right or wrong: the score says).
            if "review" in text.lower() and "add_product_review" in names:
                return call("add_product_review", review="Great quality, would buy again.")
            if "recommend" in text.lower() and "get_recommendations_by_history" in names:
                return call("get_recommendations_by_history", product_sequence=[])
            return call("search_product_by_query", query=text[:120])

        task = personalwab(data=self.data, tasks=",".join(tasks), out=out, serve_args=SERVE_ARGS)
        model = get_model("mockllm/model", custom_outputs=scripted_agent(plan), memoize=False)
        [log] = inspect_eval(task, model=model, log_dir=os.path.join(SCRATCH, "logs"), display="none",
                             max_samples=2)
        scores, recorded, _ = self.check_against_pwab_score(log, os.path.join(out, "single"))
        for task_id, value in scores.items():
            self.assertEqual(recorded[task_id]["steps"], 1)
            self.assertEqual((value["func_acc"], value["res_acc"]), pwab.task_score(recorded[task_id]))
        # The tools the model saw are the episode's, and each tool message is the server's observation.
        first = log.samples[0]
        self.assertEqual(first.messages[-1].role, "tool")
        self.assertTrue(first.messages[-1].text)

    def test_multi_turn_with_the_user_as_an_inspect_model_role(self):
        out = os.path.join(SCRATCH, "multi-run")
        user_replies = []

        def user(messages, tools, tool_choice, config):
            reply = f"I would like something sturdy, reply {len(user_replies)}."
            user_replies.append(reply)
            return say(reply)

        def plan(turn, messages, tools):
            if turn == 0:  # no tool call: a respond to the user
                return say("Which colour and budget do you have in mind?")
            if turn == 1:  # searches with the opening request (search tasks: a score above 0 is likely)
                return call("search_product_by_query", query=messages[1].text[:200])
            return call("stop")

        searches = [t for t, kind in sorted(self.types.items(), key=lambda kv: int(kv[0].split("/")[1]))
                    if kind == "search"][:2]
        task = personalwab(data=self.data, track="multi", user="model", tasks=",".join(searches), out=out,
                           serve_args=SERVE_ARGS, max_steps=6)
        [log] = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=scripted_agent(plan),
                                                   memoize=False),
                             model_roles={"user": get_model("mockllm/model", custom_outputs=user, memoize=False)},
                             log_dir=os.path.join(SCRATCH, "logs"), display="none", max_samples=1)
        scores, recorded, _ = self.check_against_pwab_score(log, os.path.join(out, "multi"))
        for task_id, value in scores.items():
            self.assertEqual((value["func_acc"], value["res_acc"]), pwab.task_score(recorded[task_id]))
        # Each episode's respond reached the role's model (through the server's LLM user and the bridge).
        self.assertGreaterEqual(len(user_replies), 2)
        for sample in log.samples:
            users = [m.text for m in sample.messages if m.role == "user"]
            self.assertTrue(any(r in u for u in users for r in user_replies), users)
            self.assertEqual(recorded[sample.id]["ending"], "stop")

    def test_task_types_and_refusals(self):
        task = personalwab(data=self.data, task_types="review", serve_args=SERVE_ARGS,
                           out=os.path.join(SCRATCH, "types-run"))
        ids = [s.id for s in task.dataset]
        self.assertTrue(ids)
        self.assertEqual({self.types[i] for i in ids}, {"review"})
        with self.assertRaises(ValueError):
            personalwab(data=self.data, task_types="shopping")
        with self.assertRaises(ValueError):
            personalwab(data=self.data, track="single", user="scripted")
        with self.assertRaises(ValueError):
            personalwab()

    def test_inspect_eval_command_finds_the_task_and_runs_pwab_lm_serve(self):
        # pwab placed where Inspect looks for extension packages: a site-packages folder holding the package and
        # the metadata setuptools writes from python/pyproject.toml (its inspect_ai entry point), as an install
        # does. (No wheel is built: the environment has no `wheel` package, and pip may not fetch one.)
        site = os.path.join(SCRATCH, "site-packages")
        source = os.path.join(SCRATCH, "pwab-src")
        os.makedirs(site)
        shutil.copytree(os.path.join(os.environ["PWAB_SOURCE_DIR"], "python"), source)
        subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "egg_info", "--egg-base",
                        site], cwd=source, check=True, capture_output=True, timeout=120)
        shutil.copytree(os.path.join(source, "pwab"), os.path.join(site, "pwab"))
        import tiny_models

        model_dir = os.path.join(SCRATCH, "tiny")
        tiny_models.make_llama(model_dir, max_positions=8192)  # the episode's prompt: tools, instruction
        lm = subprocess.Popen([BINARY, "lm", "serve", "--model", model_dir, "--name", "tiny", "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = []
            reader = threading.Thread(target=lambda: line.append(lm.stdout.readline()), daemon=True)
            reader.start()
            reader.join(120)
            self.assertTrue(line and line[0].startswith("http"), lm.stderr.read() if lm.poll() is not None else "")
            out = os.path.join(SCRATCH, "cli-run")
            logs = os.path.join(SCRATCH, "cli-logs")
            env = dict(os.environ, PYTHONPATH=site + os.pathsep + os.environ["PYTHONPATH"],
                       PWABLM_BASE_URL=line[0].strip() + "/v1", PWABLM_API_KEY="unused")
            inspect = os.path.join(os.path.dirname(sys.executable), "inspect")
            run = subprocess.run([inspect, "eval", "pwab/personalwab", "--model", "openai-api/pwablm/tiny",
                                  "-T", f"data={self.data}", "-T", "tasks=test/0,test/1", "-T", f"out={out}",
                                  "-T", f"serve_args={SERVE_ARGS}", "-T", "history=false", "--max-tokens", "8", "--log-dir", logs,
                                  "--display", "none"],
                                 env=env, capture_output=True, text=True, timeout=600)
            self.assertEqual(run.returncode, 0, run.stdout[-3000:] + run.stderr[-3000:])
            [name] = [f for f in os.listdir(logs) if f.endswith(".eval")]
            log = read_eval_log(os.path.join(logs, name))
            self.assertEqual(log.eval.task, "pwab/personalwab")
            self.check_against_pwab_score(log, os.path.join(out, "single"))
        finally:
            lm.terminate()
            lm.wait(30)


if __name__ == "__main__":
    unittest.main()
