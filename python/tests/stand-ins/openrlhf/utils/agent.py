"""Stand-in for openrlhf.utils.agent (OpenRLHF v0.11.0), tests only: the base classes an agent file subclasses, with
the same abstract methods and the executor's subclass check. It has no generation loop: the test calls reset and
step in the order MultiTurnAgentExecutor.execute does."""

from abc import ABC, abstractmethod


class AgentExecutorBase(ABC):
    @abstractmethod
    async def execute(self, prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images=None):
        raise NotImplementedError


class AgentInstanceBase(ABC):
    @abstractmethod
    def __init__(self, *args, **kwargs):
        pass

    async def reset(self, states, **kwargs):
        return states

    @abstractmethod
    async def step(self, state_dict, **kwargs):
        raise NotImplementedError


class MultiTurnAgentExecutor(AgentExecutorBase):
    def __init__(self, agent_instance_cls):
        assert issubclass(agent_instance_cls, AgentInstanceBase), "AgentInstance must inherit from AgentInstanceBase"
        self.agent_instance_cls = agent_instance_cls

    async def execute(self, prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images=None):
        raise NotImplementedError("stand-in: the test drives the instance itself")
