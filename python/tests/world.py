"""What the package's tests share: the pwab binary (PWAB_BINARY, set by CTest), a mini synthetic dataset with its
recommender trained briefly, and one `pwab serve` on it, made once per test process and removed at exit."""

import atexit
import os
import shutil
import subprocess
import tempfile

import pwab

_state = {}


def binary():
    return pwab.find_binary()


def data_dir():
    if "data" not in _state:
        root = tempfile.mkdtemp(prefix="pwab-python-test-")
        atexit.register(shutil.rmtree, root, True)
        data = os.path.join(root, "mini")
        subprocess.run([binary(), "data", "synth", "--out", data, "--scale", "mini", "--seed", "4"], check=True,
                       capture_output=True)
        subprocess.run([binary(), "rec", "train", data, "--epochs", "1", "--eval-every", "0"], check=True,
                       capture_output=True)
        _state["root"], _state["data"] = root, data
    return _state["data"]


def scratch(name):
    """A fresh directory under the shared temporary root."""
    data_dir()
    path = tempfile.mkdtemp(prefix=name + "-", dir=_state["root"])
    return path


def server():
    """One `pwab serve` for the tests that need no --out (hashing embedder: no model to train)."""
    if "server" not in _state:
        _state["server"] = pwab.launch(data_dir(), args=["--embedder", "hashing"])
        atexit.register(_state["server"].stop)
    return _state["server"]
