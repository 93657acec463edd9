"""Which agent continues a turn: the exact id and version that started it, or a later version of that id that
declares it continues it (``Agent(continues=...)``) and still has what the turn waits on; never another."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agentturn.agents.agent import Agent
from agentturn.agents.continuation import continuation_problems
from agentturn.errors import AgentChangedError, UnknownAgentError
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
        """The exact agent version that started the turn, or the one that declares it continues that version;
        never a silent fallback to another version.

        A continuing version that lacks what the turn waits on raises :class:`AgentChangedError` (saying why),
        which ends the turn at once instead of waiting for a version that is gone.
        """
        agent = self._agents.get((turn.agent_id, turn.agent_version))
        if agent is None:
            agent = self._successor(turn)
        if agent is None and self._resolver is not None:
            try:
                agent = self._resolver(turn.agent_id, turn.agent_version)
            except UnknownAgentError:
                agent = None
        # A resolver may answer with whatever it has: only the very id and version may continue the turn, or a
        # version of that id that says it continues it.
        if agent is None or agent.id != turn.agent_id:
            raise UnknownAgentError(turn.agent_id, turn.agent_version)
        if agent.version == turn.agent_version:
            return agent
        if not agent.continues(turn.agent_version):
            raise UnknownAgentError(turn.agent_id, turn.agent_version)
        problems = continuation_problems(agent, turn)
        if problems:
            raise AgentChangedError(turn.agent_id, turn.agent_version, agent.version, problems)
        return agent

    def _successor(self, turn: Turn) -> Agent | None:
        """The last registered version of the turn's agent that continues the turn's version."""
        found = [a for (agent_id, _), a in self._agents.items() if agent_id == turn.agent_id]
        return next((a for a in reversed(found) if a.continues(turn.agent_version)), None)
