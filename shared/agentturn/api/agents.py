"""The deployed agents, loaded from ``AGENTTURN_AGENTS="package.module:function"`` on first need.

The function returns a list of :class:`~agentturn.Agent`. If it takes a ``chat_model`` keyword it is given
the model ``AGENTTURN_MODEL`` selects (:mod:`agentturn.models.select`), unless that is the demo model.
Several versions of one agent id may be listed at once, so turns started by an older version keep
resuming on it after a deployment; a new turn gets the *last* listed version of the id it asks for.
Loading is lazy: routes that never run an agent (reads, submissions) never import the agents' module.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable, Sequence

from agentturn.agents.agent import Agent
from agentturn.errors import UnknownAgentError


class AgentLoadError(RuntimeError):
    """The agents' module or function is missing or returned something that is not a list of agents."""


def load_agents(spec: str) -> list[Agent]:
    module_name, sep, function_name = spec.partition(":")
    if not sep or not module_name or not function_name.isidentifier():
        raise AgentLoadError(f"AGENTTURN_AGENTS must look like 'package.module:function', not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentLoadError(f"cannot import agents module {module_name!r}: {exc}") from exc
    factory = getattr(module, function_name, None)
    if not callable(factory):
        raise AgentLoadError(f"{module_name!r} has no callable {function_name!r}")
    kwargs: dict[str, object] = {}
    if _takes_chat_model(factory):
        # The model AGENTTURN_MODEL selects (Bedrock, an OpenAI-compatible endpoint); ``None`` keeps the
        # factory's own default, for the demo agents the deterministic demo model.
        from agentturn.models import chat_model_from_env

        try:
            model = chat_model_from_env()
        except ValueError as exc:
            raise AgentLoadError(str(exc)) from exc
        if model is not None:
            kwargs["chat_model"] = model
    agents = factory(**kwargs)
    if not isinstance(agents, Sequence) or not agents or not all(isinstance(a, Agent) for a in agents):
        raise AgentLoadError(f"{spec!r} must return a non-empty list of Agent, not {type(agents).__name__}")
    return list(agents)


def _takes_chat_model(factory: Callable[..., object]) -> bool:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    parameter = parameters.get("chat_model")
    return parameter is not None and parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD)


class AgentCatalog:
    def __init__(self, loader: Callable[[], Sequence[Agent]], *, default_agent: str | None = None) -> None:
        self._loader = loader
        self._default = default_agent
        self._lock = threading.Lock()
        self._by_version: dict[tuple[str, str], Agent] | None = None
        self._latest: dict[str, Agent] = {}
        self._order: list[str] = []

    @classmethod
    def from_spec(cls, spec: str, *, default_agent: str | None = None) -> AgentCatalog:
        return cls(lambda: load_agents(spec), default_agent=default_agent)

    @classmethod
    def of(cls, agents: Sequence[Agent], *, default_agent: str | None = None) -> AgentCatalog:
        return cls(lambda: agents, default_agent=default_agent)

    def _load(self) -> dict[tuple[str, str], Agent]:
        with self._lock:
            if self._by_version is None:
                by_version: dict[tuple[str, str], Agent] = {}
                for agent in self._loader():
                    key = (agent.id, agent.version)
                    if key in by_version and by_version[key] is not agent:
                        raise AgentLoadError(f"agent {agent.id!r} version {agent.version!r} is listed twice")
                    by_version[key] = agent
                    self._latest[agent.id] = agent
                    if agent.id not in self._order:
                        self._order.append(agent.id)
                if self._default is not None and self._default not in self._latest:
                    raise AgentLoadError(f"AGENTTURN_DEFAULT_AGENT {self._default!r} is not among {self._order!r}")
                self._by_version = by_version
            return self._by_version

    def ids(self) -> list[str]:
        self._load()
        return list(self._order)

    def for_new_turn(self, agent_id: str | None) -> Agent:
        """The agent a new turn runs: ``agent_id``'s latest version, or the default agent."""
        self._load()
        wanted = agent_id or self._default or self._order[0]
        agent = self._latest.get(wanted)
        if agent is None:
            raise UnknownAgentError(wanted)
        return agent

    def resolve(self, agent_id: str, version: str) -> Agent:
        """The exact version a stored turn was started with (the Runner's resolver), or else the last listed
        version of that id that declares it continues it (``Agent(continues=...)``: the runner then checks that
        it still has what the turn waits on); never another one."""
        by_version = self._load()
        agent = by_version.get((agent_id, version))
        if agent is None:
            same_id = [a for (listed_id, _), a in by_version.items() if listed_id == agent_id]
            agent = next((a for a in reversed(same_id) if a.continues(version)), None)
        if agent is None:
            raise UnknownAgentError(agent_id, version)
        return agent
