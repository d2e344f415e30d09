"""Turning a Python function into a remote agent for `pwab run --agent remote` (protocol pwab-agent/1,
docs/agents/remote.md): pwab POSTs one self-contained request per step; the function returns the action."""

import hmac
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROTOCOL = "pwab-agent/1"
#: What every pwab-agent/1 request carries; a request without one of them is answered 400.
REQUIRED = ("protocol", "episode_id", "step", "max_steps", "track", "first_observation", "history", "conversation")


class AgentServer:
    """A running agent server. Use it as a context manager, or call stop()."""

    def __init__(self, httpd, thread):
        self.httpd = httpd
        self.thread = thread
        host, port = httpd.server_address[:2]
        self.url = f"http://{host}:{port}/"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread is not None:
            self.thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def check_request(request):
    """What is wrong with a pwab-agent/1 request, or None."""
    if not isinstance(request, dict):
        return "the request is not a JSON object"
    missing = [key for key in REQUIRED if key not in request]
    if missing:
        return "the request lacks " + ", ".join(missing)
    if request["protocol"] != PROTOCOL:
        return f"unsupported protocol {request['protocol']!r} (this agent speaks {PROTOCOL})"
    return None


def serve_agent(fn, port=0, host="127.0.0.1", token=None, block=False, name="pwab Python agent", verbose=False):
    """Serves `fn(request) -> action` at http://HOST:PORT/ for `pwab run --agent remote --agent-url URL`.

    `request` is the protocol's JSON object (task, tools, first_observation, history, conversation, step, ...);
    the action is a dict {"name": ..., "arguments": {...}} (optionally "usage": {"prompt_tokens", "completion_tokens"}),
    or a (name, arguments) pair. An exception in `fn` answers 500 with its message: pwab retries, then records the
    task as an infrastructure error. `token`: requests must carry `Authorization: Bearer TOKEN` (pwab's
    --agent-token). `block=True` serves in this thread until interrupted; otherwise a background thread serves and
    the AgentServer is returned at once (its `url` says where, with port=0 picking a free port). `GET /` answers
    {"protocol", "name"} for health checks; `verbose` logs every request on stderr.
    """

    class Handler(BaseHTTPRequestHandler):
        server_version = "pwab-python-agent/1"

        def do_GET(self):  # noqa: N802 - who is here, for health checks
            return self._answer(200, {"protocol": PROTOCOL, "name": name})

        def do_POST(self):  # noqa: N802 - the http.server API
            if token is not None and not hmac.compare_digest(self.headers.get("Authorization", ""), f"Bearer {token}"):
                return self._answer(401, {"error": "a bearer token is required"})
            try:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length))
            except (ValueError, TypeError) as e:
                return self._answer(400, {"error": f"not a JSON request: {e}"})
            problem = check_request(request)
            if problem:
                return self._answer(400, {"error": problem})
            try:
                action = fn(request)
                if isinstance(action, tuple):
                    action = {"name": action[0], "arguments": action[1] if len(action) > 1 else {}}
                if not isinstance(action, dict) or not isinstance(action.get("name"), str):
                    raise TypeError(f"the agent function must return {{'name': ..., 'arguments': ...}}, not {action!r}")
            except Exception as e:  # noqa: BLE001 - reported to pwab, which records it
                return self._answer(500, {"error": f"{type(e).__name__}: {e}"})
            return self._answer(200, action)

        def _answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):  # noqa: A002 - quiet unless verbose: pwab logs the run
            if verbose:
                sys.stderr.write(f"{self.address_string()} - {format % args}\n")

    httpd = ThreadingHTTPServer((host, port), Handler)
    httpd.daemon_threads = True
    if block:
        server = AgentServer(httpd, None)
        print(server.url, flush=True)
        try:
            httpd.serve_forever()
        finally:
            httpd.server_close()
        return server
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return AgentServer(httpd, thread)
