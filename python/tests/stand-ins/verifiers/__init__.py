"""Stand-in for verifiers' legacy API (v0.3.0-62), tests only; see ../README.md. Environments keep their
constructor's arguments; Rubric keeps its functions and weights; stop and cleanup mark methods as the real
decorators do. Nothing here runs a rollout: the test calls the hooks in the order MultiTurnEnv.rollout does."""


class Error(Exception):
    """Base of the errors a hook raises to stop a rollout (stored in state["error"])."""


def _marker(attribute):
    def decorate(func=None, priority=0, **kwargs):
        def mark(f):
            setattr(f, attribute, True)
            setattr(f, attribute + "_priority", priority)
            return f
        return mark if func is None else mark(func)
    return decorate


stop = _marker("stop")
cleanup = _marker("cleanup")


class Rubric:
    def __init__(self, funcs=None, weights=None, parser=None):
        self.funcs = list(funcs or [])
        self.weights = list(weights) if weights is not None else [1.0] * len(self.funcs)
        assert len(self.weights) == len(self.funcs), "one weight per function"


class Environment:
    def __init__(self, dataset=None, eval_dataset=None, rubric=None, **kwargs):
        assert dataset is not None or eval_dataset is not None, "a dataset or an eval_dataset is required"
        self.dataset, self.eval_dataset, self.rubric = dataset, eval_dataset, rubric
        for key, value in kwargs.items():
            setattr(self, key, value)


class MultiTurnEnv(Environment):
    def __init__(self, max_turns=-1, timeout_seconds=None, **kwargs):
        super().__init__(**kwargs)
        self.max_turns = max_turns

    async def setup_state(self, state):
        return state

    async def env_response(self, messages, state, **kwargs):
        raise NotImplementedError


class SingleTurnEnv(MultiTurnEnv):
    def __init__(self, **kwargs):
        super().__init__(max_turns=1, **kwargs)
