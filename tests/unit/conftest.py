"""The Runner's parts wired by hand over in-memory ports: each unit test drives one part directly."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from tests.support.clock import FakeClock

from agentturn import Agent, InMemoryChatMemory, InMemoryTurnStore, Turn
from agentturn.agents.registry import AgentRegistry
from agentturn.engine.events import Event
from agentturn.engine.lease_keeper import LeaseKeeper
from agentturn.engine.model_step import ModelStep
from agentturn.engine.retry import RetryPolicy
from agentturn.engine.sequencer import EventSequencer
from agentturn.engine.tool_step import ToolStep
from agentturn.engine.turn_run import Run
from agentturn.engine.turn_writer import TurnWriter
from agentturn.ports.memory import ChatMemory
from agentturn.ports.store import Lease


@dataclass
class Parts:
    clock: FakeClock
    store: InMemoryTurnStore
    memory: InMemoryChatMemory
    events: list[Event]
    sequencer: EventSequencer
    agents: AgentRegistry
    retry: RetryPolicy
    writer: TurnWriter
    leases: LeaseKeeper
    model_step: ModelStep
    tool_step: ToolStep
    lease_seconds: float = 60.0
    created: list[str] = field(default_factory=list)

    def memory_for(self, conversation_id: str) -> ChatMemory | None:
        return self.memory(conversation_id)

    def new_run(self, agent: Agent, *, leased: bool = True) -> Run:
        """A stored turn of ``agent`` in conversation ``c1`` (holding it), and a run on it."""
        self.agents.register(agent)
        turn = Turn(
            id=f"t{len(self.created) + 1}", conversation_id="c1", agent_id=agent.id, agent_version=agent.version
        )
        self.sequencer.reserve(turn)
        turn = self.store.create(turn)
        self.created.append(turn.id)
        self.memory("c1").set_active_turn(turn.id, expected=None)
        lease: Lease | None = None
        if leased:
            lease = self.store.claim(turn.id, "w1", self.lease_seconds)
            assert lease is not None
        return Run(turn=turn, agent=agent, lease=lease)

    def types(self) -> list[str]:
        return [event.type.value for event in self.events]


@pytest.fixture
def parts() -> Parts:
    clock = FakeClock()
    store = InMemoryTurnStore(clock=clock)
    memory = InMemoryChatMemory()
    events: list[Event] = []
    sequencer = EventSequencer(lambda: [events.append])
    agents = AgentRegistry()
    retry = RetryPolicy(max_attempts=3)
    memory_for: Callable[[str], ChatMemory | None] = memory
    writer = TurnWriter(store, clock, sequencer, memory_for, agents, retry)
    leases = LeaseKeeper(store, clock, 60.0, clock.wait, lambda turn_id: store.claim(turn_id, "w1", 60.0))
    return Parts(
        clock=clock,
        store=store,
        memory=memory,
        events=events,
        sequencer=sequencer,
        agents=agents,
        retry=retry,
        writer=writer,
        leases=leases,
        model_step=ModelStep(agents, writer, sequencer, leases, retry, memory_for),
        tool_step=ToolStep(store, clock, agents, writer, sequencer, leases),
    )
