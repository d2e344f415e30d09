"""Errors of the pwab client: one class per refusal of `pwab serve` (docs/serve.md, "Limits and errors")."""


class PwabError(Exception):
    """A refusal or failure answered by the server: its HTTP status, error code and message."""

    def __init__(self, status, code, message):
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class BadRequest(PwabError):
    """400: malformed JSON, a missing or mistyped field."""


class Unprocessable(BadRequest):
    """422: a well-formed body the OpenEnv routes refuse (an unknown field, a missing action)."""


class Unauthorized(PwabError):
    """401: no bearer token, or a wrong one."""


class BudgetReached(PwabError):
    """402: the server's --budget-usd is spent (LLM-user episodes only)."""


class Forbidden(PwabError):
    """403: a Host or Origin the server refuses."""


class NotFound(PwabError):
    """404: an unknown route, task or episode (an episode also ends this way after end or expiry)."""


class Conflict(PwabError):
    """409: the episode has finished, or the (task, trial) is recorded or being played."""


class TooLarge(PwabError):
    """413: a body or an episode over its cap."""


class TooManySessions(PwabError):
    """429: the server holds as many episodes as it may."""


class ServerError(PwabError):
    """5xx: the server itself failed (a run directory it cannot write, an LLM user that keeps failing)."""


class Unreachable(PwabError):
    """The server could not be reached after the retries (no HTTP answer at all)."""

    def __init__(self, url, reason):
        super().__init__(0, "unreachable", f"{url}: {reason}")


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 402: BudgetReached, 403: Forbidden, 404: NotFound,
              409: Conflict, 413: TooLarge, 422: Unprocessable,
              429: TooManySessions}


def error_for(status, code, message):
    """The PwabError subclass for an HTTP status."""
    if status >= 500:
        return ServerError(status, code, message)
    return _BY_STATUS.get(status, PwabError)(status, code, message)
