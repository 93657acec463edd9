"""One stretch of work on a turn in this process, and what ends it early."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentturn.agents.agent import Agent, ExecutionPolicy
from agentturn.agents.registry import AgentRegistry
from agentturn.engine.heartbeat import Heartbeat
from agentturn.errors import UnknownAgentError
from agentturn.ports.store import Lease
from agentturn.state.messages import ModelMessage
from agentturn.state.turn import Turn

YieldProbe = Callable[[], bool]


class LeaseGone(Exception):
    """Another holder owns the turn now: stop without keeping anything computed since the last save."""


@dataclass
class Run:
    """One stretch of work on a turn in this process."""

    turn: Turn
    agent: Agent | None
    lease: Lease | None
    should_yield: YieldProbe | None = None
    #: renews the lease during steps; one per run, ended with it
    heartbeat: Heartbeat | None = None
    #: the last save left its projection to the next one (see :meth:`TurnWriter.save`); the driver projects it
    #: when the run stops without saving again
    projection_owed: bool = False
    #: the turn holds a model reply that the next step's save carries (see :class:`ModelStep`): the run may not
    #: stop before that step
    unsaved: bool = False
    #: the run holds no lease yet and takes one before any tool runs (a worker started from the snapshot its
    #: message carried: :mod:`agentturn.engine.handoff`); until then its saves are conditional on the version and on
    #: nobody holding a lease
    claim_deferred: bool = False
    #: the conversation's earlier messages in the agent's window, read once per run: by the start that made the
    #: turn, or by the run's first model call (see :meth:`ModelStep._context`)
    history: list[ModelMessage] | None = None


def agent_of(run: Run, agents: AgentRegistry) -> Agent:
    """The run's agent, looked up once (a resolver may be a network call)."""
    if run.agent is None:
        run.agent = agents.agent_for(run.turn)
    return run.agent


def policy_of(run: Run, agents: AgentRegistry) -> ExecutionPolicy:
    """The agent's policy; the defaults for a turn whose agent this process does not know (a cancel)."""
    try:
        return agent_of(run, agents).policy
    except UnknownAgentError:
        return ExecutionPolicy()
