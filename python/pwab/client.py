"""A client for every route of `pwab serve` (docs/serve.md), on urllib alone."""

import json
import time
import urllib.error
import urllib.parse
import urllib.request

from .errors import Unreachable, error_for


class Client:
    """Talks to one `pwab serve`. Each method is one route; refusals raise a PwabError subclass (BadRequest,
    NotFound, Conflict, ...), and a server that cannot be reached is retried `retries` times with backoff before
    Unreachable is raised. Requests that change nothing (GET) and the start of an episode are safe to retry;
    a step whose connection broke is retried only when the request never reached the server."""

    def __init__(self, url, token=None, timeout=60.0, retries=3, backoff=0.25):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

    # --- routes ---------------------------------------------------------------------------------------------------

    def health(self):
        """{"status": "healthy", "sessions": N, ...} (OpenEnv's health answer)"""
        return self._call("GET", "/health")

    def info(self):
        """The dataset's size, the tools' schemas, tracks, user simulators and limits."""
        return self._call("GET", "/v1/info")

    def tasks(self, split="test", offset=0, limit=100, history=None):
        """One page of tasks: {"split", "offset", "total", "tasks": [{"task", "user_id", "instruction"}]}. With
        history=True each task also carries the user's visible history (the behaviours an episode's reset shows)."""
        params = {"split": split, "offset": offset, "limit": limit}
        if history is not None:
            params["history"] = "true" if history else "false"
        return self._call("GET", "/v1/tasks?" + urllib.parse.urlencode(params))

    def iter_tasks(self, split="test", page=1000, history=None):
        """Every task of a split, page by page."""
        offset = 0
        while True:
            answer = self.tasks(split, offset, page, history=history)
            yield from answer["tasks"]
            offset += len(answer["tasks"])
            if not answer["tasks"] or offset >= answer["total"]:
                return

    def start(self, task, track="single", user_sim=None, max_steps=None, seed=None, history=None, trial=None):
        """Starts an episode; returns {"episode_id", "observation", "tools", "history", ...}."""
        body = {"task": task, "track": track}
        for key, value in (("user_sim", user_sim), ("max_steps", max_steps), ("seed", seed), ("history", history),
                           ("trial", trial)):
            if value is not None:
                body[key] = value
        return self._call("POST", "/v1/episodes", body)

    def step(self, episode_id, name, arguments=None, usage=None):
        """One action: a tool with its arguments (a dict, or a JSON text passed on verbatim), "respond" with
        {"content": ...}, or "stop". Returns {"observation", "reward", "done", "finished", "ending"?, ...}."""
        body = {"name": name, "arguments": {} if arguments is None else arguments}
        if usage is not None:
            body["usage"] = usage
        return self._call("POST", f"/v1/episodes/{episode_id}/step", body, retry_sent=False)

    def state(self, episode_id):
        """The episode so far (its actions with observations and rewards)."""
        return self._call("GET", f"/v1/episodes/{episode_id}")

    def end(self, episode_id):
        """Ends the episode: {"record", "score": {"f", "r"}}; the episode is gone afterwards."""
        return self._call("POST", f"/v1/episodes/{episode_id}/end", {}, retry_sent=False)

    def delete(self, episode_id):
        """Same as end(), as DELETE."""
        return self._call("DELETE", f"/v1/episodes/{episode_id}", retry_sent=False)

    # --- OpenEnv routes (/reset, /step, /state, /schema, /metadata) ----------------------------------------------

    def env_reset(self, task=None, track="single", split=None, index=None, seed=None, episode_id=None,
                  user_sim=None, max_steps=None, trial=None, history=None, idle_timeout_s=None):
        """OpenEnv's POST /reset: starts an episode of `task` ("train/17"), or of `split` and `index`, or, with
        neither, of a train task drawn by `seed` (at random without one). `idle_timeout_s`: this episode is dropped
        after so many seconds without a call (at most the server's --idle-timeout). Returns {"observation": {"text",
        "episode_id", "task", "tools", "history", ...}, "reward": None, "done": False}."""
        body = {"track": track}
        for key, value in (("task", task), ("split", split), ("index", index), ("seed", seed),
                           ("episode_id", episode_id), ("user_sim", user_sim), ("max_steps", max_steps),
                           ("trial", trial), ("history", history), ("idle_timeout_s", idle_timeout_s)):
            if value is not None:
                body[key] = value
        return self._call("POST", "/reset", body)

    def env_step(self, episode_id, action):
        """OpenEnv's POST /step with one action {"name", "arguments"} (arguments a dict or a JSON text). Returns
        {"observation": {"text", "step_reward", "finished", "score" once finished, ...}, "reward", "done"}; the
        reward is 0 until the episode is done, then its score (result accuracy). A finished episode is gone."""
        return self._call("POST", "/step", {"episode_id": episode_id, "action": action}, retry_sent=False)

    def env_state(self, episode_id):
        """OpenEnv's GET /state: the open episode so far."""
        return self._call("GET", "/state?" + urllib.parse.urlencode({"episode_id": episode_id}))

    def schema(self):
        """OpenEnv's GET /schema: JSON schemas of the action, the observation and the state."""
        return self._call("GET", "/schema")

    def metadata(self):
        """OpenEnv's GET /metadata: the environment's name, description and version."""
        return self._call("GET", "/metadata")

    # --- rewards without an episode (/v1/reward) -------------------------------------------------------------------

    def reward(self, task, completion=None, function=None, parameter=None):
        """The benchmark's reward of one single-turn answer to `task`: the raw `completion` text, or its
        `function` and `parameter`. Returns {"task", "function", "parameter", "function_acc", "result_acc",
        "reward"} (reward = result_acc); an unknown task raises NotFound."""
        body = {"task": task}
        if completion is not None:
            body["completion"] = completion
        else:
            body["function"] = "" if function is None else function
            body["parameter"] = "" if parameter is None else parameter
        return self._call("POST", "/v1/reward", body)

    def rewards(self, items, max_body=512 * 1024):
        """The rewards of many answers, in order: `items` are dicts as reward() takes them ({"task", "completion"}
        or {"task", "function", "parameter"}). Sent as JSON arrays of at most `max_body` bytes each (the server caps
        a body). An item the server could not score (an unknown task, a missing field) raises its PwabError, naming
        the task."""
        answers, batch, size = [], [], 2
        for item in items:
            length = len(json.dumps(item).encode()) + 1
            if batch and size + length > max_body:
                answers += self._call("POST", "/v1/reward", batch)
                batch, size = [], 2
            batch.append(item)
            size += length
        if batch:
            answers += self._call("POST", "/v1/reward", batch)
        for answer in answers:
            if "error" in answer:
                error = answer["error"]
                code = error.get("code", "")
                status = 404 if code.startswith("unknown") else 400
                raise error_for(status, code, f"{answer.get('task')!r}: {error.get('message', '')}")
        return answers

    # --- transport ------------------------------------------------------------------------------------------------

    def _call(self, method, path, body=None, retry_sent=True):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        last = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * (2 ** (attempt - 1)))
            request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                    return json.loads(answer.read() or b"null")
            except urllib.error.HTTPError as e:
                raise _refusal(e) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                reason = getattr(e, "reason", e)
                last = reason
                # A refused connection never reached the server: always safe to send again. Anything else
                # (a reset, a timeout) may have been acted on; only requests that change nothing are repeated.
                if not (retry_sent or isinstance(reason, ConnectionRefusedError)):
                    break
        raise Unreachable(self.url + path, last)


def _refusal(e):
    text = e.read().decode("utf-8", "replace")
    try:
        error = json.loads(text)["error"]
        return error_for(e.code, error.get("code", ""), error.get("message", ""))
    except (ValueError, KeyError, TypeError):
        return error_for(e.code, "http_error", text[:200] or e.reason)
