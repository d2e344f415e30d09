"""Starting and stopping a local `pwab serve` from Python."""

import os
import shutil
import signal
import subprocess
import tempfile
import threading

from .client import Client


def find_binary(binary=None):
    """The pwab executable: `binary`, else $PWAB_BINARY, else `pwab` on PATH."""
    found = binary or os.environ.get("PWAB_BINARY") or shutil.which("pwab")
    if not found or not os.access(found, os.X_OK):
        raise FileNotFoundError("pwab binary not found: pass binary=..., set PWAB_BINARY, or put pwab on PATH "
                                "(it is build/release/pwab after `make`)")
    return found


class Server:
    """A `pwab serve` child process. Use it as a context manager, or call stop()."""

    def __init__(self, process, url, log_path, token=None):
        self.process = process
        self.url = url
        self.log_path = log_path
        self.token = token

    def client(self, **options):
        """A Client for this server (with its token)."""
        return Client(self.url, token=self.token, **options)

    def log(self):
        """What the server wrote on stderr so far."""
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self, timeout=30):
        """SIGTERM, as Ctrl-C: finished episodes are already recorded. Returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()
        return self.process.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def launch(data, port=0, host="127.0.0.1", out=None, token=None, args=(), binary=None, startup_timeout=600):
    """Starts `pwab serve --data DATA` and returns a Server once it listens (its URL read from the first line of the
    server's stdout). `port=0` lets the system pick a free port. `out` records finished episodes in a run directory;
    `token` is required off loopback; `args` are further `pwab serve` flags (e.g. ["--embedder", "hashing"]). The
    first start on a dataset may build the search index and train the recommender: `startup_timeout` allows for it.
    """
    command = [find_binary(binary), "serve", "--data", str(data), "--port", str(port), "--host", host, *map(str, args)]
    if out is not None:
        command += ["--out", str(out)]
    env = dict(os.environ)
    if token:
        env["PWAB_SERVE_TOKEN"] = token  # not on the command line, where `ps` would show it
    log = tempfile.NamedTemporaryFile(prefix="pwab-serve-", suffix=".log", delete=False)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    log.close()
    first_line = []
    reader = threading.Thread(target=lambda: first_line.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(startup_timeout)
    url = first_line[0].strip() if first_line else ""
    if not url.startswith("http"):
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
        with open(log.name, encoding="utf-8", errors="replace") as f:
            tail = f.read()[-2000:]
        raise RuntimeError(f"pwab serve did not start ({' '.join(command)}):\n{tail}")
    return Server(process, url, log.name, token)
