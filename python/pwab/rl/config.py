"""Where the adapters find `pwab serve`: configure() in the training script, or environment variables.

RL engines build the objects that use pwab themselves (TRL calls an environment class with no arguments, OpenRLHF
loads an agent file by path, verl imports a tool class by name), often in other processes. So the adapters read
their settings here, at the moment they need a server, in this order: the arguments given to the adapter itself,
then configure(), then the environment:

    PWAB_URL        the server, e.g. http://127.0.0.1:8765 (what `pwab serve` prints on its first line)
    PWAB_TOKEN      its bearer token, when it has one (PWAB_SERVE_TOKEN, the server's own variable, also works)
    PWAB_TRACK      "single" (the default) or "multi", for the adapters that play episodes
    PWAB_USER_SIM   the user simulator of multi-turn episodes ("scripted" by default on the server)
    PWAB_MAX_STEPS  the step cap of an episode (the server's default is 10)

>>> from pwab.rl import config
>>> config.configure(url="http://127.0.0.1:8765", track="multi")
>>> config.setting("track"), config.setting("track", "single")   # an adapter's own argument comes first
('multi', 'single')
>>> config.configure(url=None, track=None)        # back to the environment variables
"""

import os
import threading

from pwab.client import Client

_ENVIRONMENT = {"url": "PWAB_URL", "token": "PWAB_TOKEN", "track": "PWAB_TRACK", "user_sim": "PWAB_USER_SIM",
                "max_steps": "PWAB_MAX_STEPS"}
_settings = {}
_clients = {}
_lock = threading.Lock()


def configure(**settings):
    """Sets url, token, track, user_sim, max_steps (or timeout, retries for the client) for every adapter in this
    process and, through the PWAB_* variables it exports, in the processes it starts afterwards (an engine's
    spawned workers); a value of None falls back to the environment variable's earlier value again."""
    unknown = set(settings) - set(_ENVIRONMENT) - {"timeout", "retries"}
    if unknown:
        raise TypeError(f"configure() got unknown settings {sorted(unknown)}; known: "
                        f"{sorted(_ENVIRONMENT) + ['retries', 'timeout']}")
    for key, value in settings.items():
        if value is None:
            _settings.pop(key, None)
        else:
            _settings[key] = value
        _export(key, value)


# Engines build their reward functions and environments again in processes they start themselves (TRL's
# AsyncGRPOTrainer spawns its rollout worker; Ray and torchrun start workers): those re-import this module and
# never saw configure(). They do inherit the environment, so configure() also writes the PWAB_* variable, and
# gives back the variable's own value when the setting is cleared (None).
_original_environment = {}


def _export(key, value):
    variable = _ENVIRONMENT.get(key)
    if variable is None:  # timeout, retries: per-process client options
        return
    if variable not in _original_environment:
        _original_environment[variable] = os.environ.get(variable)
    if value is None:
        value = _original_environment.pop(variable)
        if value is None:
            os.environ.pop(variable, None)
            return
    os.environ[variable] = str(value)


def setting(name, given=None):
    """`given` if not None, else configure()'s value, else the environment variable's (None when unset)."""
    if given is not None:
        return given
    if name in _settings:
        return _settings[name]
    variable = _ENVIRONMENT.get(name)
    value = os.environ.get(variable) if variable else None
    if value is None and name == "token":
        value = os.environ.get("PWAB_SERVE_TOKEN")
    if value is not None and name == "max_steps":
        value = int(value)
    return value or None


def client(url=None, token=None):
    """A Client for the configured server (one per URL and token, shared by the adapters of this process). Raises
    RuntimeError, saying how to set it, when no URL is known."""
    url = setting("url", url)
    if not url:
        raise RuntimeError("pwab.rl: no server URL. Start `pwab serve --data DATA --port 8765` and set PWAB_URL="
                           "http://127.0.0.1:8765 in the environment of the training processes, or call "
                           "pwab.rl.configure(url=...) (adapters also take url=)")
    token = setting("token", token)
    key = (url.rstrip("/"), token)
    with _lock:
        found = _clients.get(key)
        if found is None:
            options = {name: _settings[name] for name in ("timeout", "retries") if name in _settings}
            found = _clients[key] = Client(url, token=token, **options)
        return found


def episode_settings(track=None, user_sim=None, max_steps=None):
    """The track, user simulator and step cap of new episodes (track "single" unless set)."""
    return {"track": setting("track", track) or "single", "user_sim": setting("user_sim", user_sim),
            "max_steps": setting("max_steps", max_steps)}
