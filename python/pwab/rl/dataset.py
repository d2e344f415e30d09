"""Training rows for RL engines, one per pwab task, from a running `pwab serve` (GET /v1/tasks).

Each row holds a chat prompt (a system message that names the tools and the answer format, then the user's
recent purchases and reviews and the request) and the task key ("train/17") under the names the engines look
for: `task` (TRL reward functions and environments), `label` (OpenRLHF's --data.label_key), `ground_truth` and
`reward_model.ground_truth` (verl), with `data_source` "pwab" and `extra_info` {task, split, index, user_id}.
The key is all a reward needs: the server keeps each task's target to itself and scores answers to it.

    python3 -m pwab.rl.dataset --url http://127.0.0.1:8765 --split train --out train.jsonl \\
        [--limit N] [--offset N] [--history-items 10] [--track single|multi] [--no-instruction] [--verl-tools]

writes the rows as JSON Lines (one JSON object a line), or as Parquet when the file name ends in `.parquet`
(verl's usual format; that needs pyarrow, imported only then). `--no-instruction` leaves the request out of the
prompt, for environments whose reset() supplies it (TRL's environment_factory); `--verl-tools` adds what verl's
tool agent loop reads (agent_name "tool_agent" and extra_info.tools_kwargs, giving each tool the task).

>>> from pwab.rl.dataset import task_rows
>>> rows = task_rows(URL, split="train", limit=2, history_items=3)
>>> [row["task"] for row in rows], rows[0]["label"], rows[0]["reward_model"]
(['train/0', 'train/1'], 'train/0', {'style': 'rule', 'ground_truth': 'train/0'})
>>> [message["role"] for message in rows[0]["prompt"]]
['system', 'user']
>>> "<tool_call>" in rows[0]["prompt"][0]["content"], "My request:" in rows[0]["prompt"][1]["content"]
(True, True)
"""

import argparse
import datetime
import json
import sys

from pwab.client import Client

DATA_SOURCE = "pwab"
TOOL_NAMES = ("search_product_by_query", "get_recommendations_by_history", "add_product_review")

_SINGLE = """You are a shopping assistant acting for one user of an online store. You see the user's recent \
purchases and reviews, then the user's request. Serve the request with exactly one tool call, written as
<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>

Tools:
- search_product_by_query {"query": "<words>"}: search the catalogue for the product the user describes.
- get_recommendations_by_history {"product_sequence": ["<ASIN>", ...]}: recommend what the user may want next, \
from products the user had (ASINs oldest first).
- add_product_review {"review": "<text>"}: post a review of a product the user bought, written in the user's \
own voice."""

_MULTI = _SINGLE.replace("Serve the request with exactly one tool call, written as",
                         "Serve the request with tool calls, one per turn, each written as") + """
- respond {"content": "<message>"}: say something to the user, such as a question about what they want; their \
answer comes back.
- stop {}: end the conversation once the request is served."""

SYSTEM_PROMPTS = {"single": _SINGLE, "multi": _MULTI}


def render_history(history, items=10, review_chars=160):
    """The user's last `items` behaviours as a short text, oldest first: title, ASIN, date, rating and the start
    of the review. "" for no history (or items=0)."""
    if not history or items <= 0:
        return ""
    lines = []
    for behaviour in history[-items:]:
        when = ""
        if behaviour.get("timestamp"):
            day = datetime.datetime.fromtimestamp(behaviour["timestamp"] / 1000, tz=datetime.timezone.utc)
            when = f" on {day:%Y-%m-%d}"
        line = f"- {behaviour.get('title') or 'untitled product'} (ASIN {behaviour.get('asin', '?')}), bought{when}"
        if behaviour.get("rating") is not None:
            line += f", rated {behaviour['rating']:g}/5"
        review = " ".join(filter(None, [behaviour.get("review_title"), behaviour.get("review_text")]))
        if review:
            if len(review) > review_chars:
                review = review[:review_chars].rsplit(" ", 1)[0] + " ..."
            line += f': "{review}"'
        lines.append(line)
    return "My recent purchases and reviews, oldest first:\n" + "\n".join(lines)


def prompt_messages(task, history_items=10, track="single", instruction=True):
    """The chat prompt of one task ({"task", "instruction", "history"?} as /v1/tasks lists it)."""
    parts = [render_history(task.get("history") or [], history_items)]
    if instruction:
        parts.append("My request: " + task["instruction"])
    return [{"role": "system", "content": SYSTEM_PROMPTS[track]},
            {"role": "user", "content": "\n\n".join(part for part in parts if part)}]


def task_row(task, split, history_items=10, track="single", instruction=True, verl_tools=False):
    """One training row for one listed task."""
    key = task["task"]
    row = {"data_source": DATA_SOURCE,
           "prompt": prompt_messages(task, history_items, track, instruction),
           "task": key, "label": key, "ground_truth": key,
           "reward_model": {"style": "rule", "ground_truth": key},
           "extra_info": {"task": key, "split": split, "index": int(key.rsplit("/", 1)[1]),
                          "user_id": task.get("user_id", "")}}
    if verl_tools:
        row["agent_name"] = "tool_agent"
        names = TOOL_NAMES + (("respond", "stop") if track == "multi" else ("stop",))
        row["extra_info"]["tools_kwargs"] = {name: {"create_kwargs": {"task": key}} for name in names}
    return row


def task_rows(server, split="train", limit=None, offset=0, history_items=10, track="single", instruction=True,
              verl_tools=False):
    """Rows for the tasks of `split` from `offset` on (all of them, or `limit`). `server`: a Client or a URL."""
    client = server if isinstance(server, Client) else Client(server)
    rows = []
    while limit is None or len(rows) < limit:
        page = 1000 if limit is None else min(1000, limit - len(rows))
        answer = client.tasks(split, offset, page, history=history_items > 0)
        for task in answer["tasks"]:
            rows.append(task_row(task, split, history_items, track, instruction, verl_tools))
        offset += len(answer["tasks"])
        if not answer["tasks"] or offset >= answer["total"]:
            break
    return rows


def hf_dataset(rows):
    """The rows as a Hugging Face `datasets.Dataset` (imported here: the `datasets` package is needed)."""
    from datasets import Dataset

    return Dataset.from_list(rows)


def write_parquet(rows, path):
    """The rows as one Parquet file (pyarrow, imported here; every row has the same fields, so the columns'
    types come out the same as from the JSON Lines file)."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as error:
        raise RuntimeError("writing .parquet needs pyarrow (pip install pyarrow), or write .jsonl instead") from error
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(rows), path)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m pwab.rl.dataset", description=(
        "Write RL training rows (JSON Lines) for the tasks of a running `pwab serve`."))
    parser.add_argument("--url", required=True, help="the server, as `pwab serve` printed it")
    parser.add_argument("--token", default=None, help="its bearer token, if it has one")
    parser.add_argument("--split", default="train", choices=["train", "test"])
    parser.add_argument("--out", required=True,
                        help="the file to write: JSON Lines, or Parquet if it ends in .parquet ('-': stdout)")
    parser.add_argument("--limit", type=int, default=None, help="at most this many tasks")
    parser.add_argument("--offset", type=int, default=0, help="the first task's index")
    parser.add_argument("--history-items", type=int, default=10,
                        help="the user's last K purchases shown in the prompt (0: none)")
    parser.add_argument("--track", default="single", choices=["single", "multi"],
                        help="the system prompt: one tool call, or a conversation with respond and stop")
    parser.add_argument("--no-instruction", action="store_true",
                        help="leave the request out of the prompt (an environment's reset supplies it)")
    parser.add_argument("--verl-tools", action="store_true",
                        help="add agent_name and extra_info.tools_kwargs for verl's tool agent loop")
    args = parser.parse_args(argv)
    rows = task_rows(Client(args.url, token=args.token), args.split, args.limit, args.offset, args.history_items,
                     args.track, not args.no_instruction, args.verl_tools)
    if args.out.endswith(".parquet"):
        write_parquet(rows, args.out)
        print(f"{len(rows)} rows of {args.split} tasks -> {args.out}", file=sys.stderr)
        return 0
    out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")
    try:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"{len(rows)} rows of {args.split} tasks -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
