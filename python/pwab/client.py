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
        """{"status": "ok", "sessions": N}"""
        return self._call("GET", "/health")

    def info(self):
        """The dataset's size, the tools' schemas, tracks, user simulators and limits."""
        return self._call("GET", "/v1/info")

    def tasks(self, split="test", offset=0, limit=100):
        """One page of tasks: {"split", "offset", "total", "tasks": [{"task", "user_id", "instruction"}]}."""
        query = urllib.parse.urlencode({"split": split, "offset": offset, "limit": limit})
        return self._call("GET", "/v1/tasks?" + query)

    def iter_tasks(self, split="test", page=1000):
        """Every task of a split, page by page."""
        offset = 0
        while True:
            answer = self.tasks(split, offset, page)
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
