"""Which agent continues a turn: the exact id and version that started it, never another."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agentturn.agents.agent import Agent
from agentturn.errors import UnknownAgentError
from agentturn.state.turn import Turn

AgentResolver = Callable[[str, str], Agent]


class AgentRegistry:
    """Agents registered in this process, then an optional resolver for the ones that are not."""

    def __init__(self, agents: Iterable[Agent] | AgentResolver | None = None) -> None:
        self._agents: dict[tuple[str, str], Agent] = {}
        self._resolver: AgentResolver | None = None
        if callable(agents):
            self._resolver = agents
        else:
            for agent in agents or ():
                self.register(agent)

    def register(self, agent: Agent) -> None:
        """Make ``agent`` the one that continues turns of its id and version (same id + version = same agent)."""
        self._agents[(agent.id, agent.version)] = agent

    def agent_for(self, turn: Turn) -> Agent:
        """The exact agent version that started the turn; never a silent fallback to another version."""
        agent = self._agents.get((turn.agent_id, turn.agent_version))
        if agent is None and self._resolver is not None:
            agent = self._resolver(turn.agent_id, turn.agent_version)
        # A resolver may answer with whatever it has: only the very id and version may continue the turn.
        if agent is None or agent.id != turn.agent_id or agent.version != turn.agent_version:
            raise UnknownAgentError(turn.agent_id, turn.agent_version)
        return agent
