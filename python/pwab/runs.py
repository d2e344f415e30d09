"""Reading a run directory (`pwab run`, `pwab serve --out`): its manifest, records and scores as Python objects."""

import json
import os
import subprocess

from .launch import find_binary


def task_score(record):
    """(function_acc, result_acc) of one record, as `pwab score` takes it: the best attempt with the right function
    (the first of equal ones); (0, 0) without one."""
    best = None
    for attempt in record.get("attempts") or []:
        if len(attempt) >= 2 and attempt[0] == 1 and (best is None or attempt[1] > best[1]):
            best = attempt
    return (0.0, 0.0) if best is None else (float(best[0]), float(best[1]))


class Run:
    """One run directory. `records` holds one record per (task, trial): a later line for the same one replaces an
    earlier (a retried errored task), and a cut last line (a killed run) is left out, as pwab does."""

    def __init__(self, directory, manifest, records):
        self.directory = directory
        self.manifest = manifest
        self.records = records

    def scores(self, binary=None, extra_args=()):
        """The summary `pwab score RUN --format json` prints (every group, intervals, pass^k with trials)."""
        out = subprocess.run([find_binary(binary), "score", str(self.directory), "--format", "json", *extra_args],
                             check=True, capture_output=True, text=True)
        return json.loads(out.stdout)

    def to_rows(self):
        """One flat dict per record (task, trial, type, user, steps, ending, function_acc, result_acc, tokens,
        seconds, error): a pandas DataFrame when pandas is installed, else the list of dicts."""
        rows = []
        for r in self.records:
            f, acc = task_score(r)
            rows.append({"task": r.get("task"), "trial": r.get("trial", 0), "type": r.get("type"),
                         "user_id": r.get("user_id"), "steps": r.get("steps"), "ending": r.get("ending"),
                         "function_acc": f, "result_acc": acc, "prompt_tokens": r.get("prompt_tokens"),
                         "completion_tokens": r.get("completion_tokens"),
                         "seconds": (r.get("seconds_env") or 0) + (r.get("seconds_agent") or 0),
                         "error": r.get("error", "")})
        try:
            import pandas  # noqa: PLC0415 - optional
        except ImportError:
            return rows
        return pandas.DataFrame(rows)


def read_run(directory):
    """Reads RUN_DIR/manifest.json and RUN_DIR/results.jsonl. Raises ValueError naming the file and line for a
    malformed line other than a cut last one."""
    with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    path = os.path.join(directory, "results.jsonl")
    by_unit = {}
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as e:
            if number == len(lines) and not text.endswith("\n"):
                break  # the cut tail of a killed run
            raise ValueError(f"{path}:{number}: not a JSON record ({e})") from None
        by_unit[(record.get("task"), record.get("trial", 0))] = record
    return Run(directory, manifest, list(by_unit.values()))
