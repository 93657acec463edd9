"""A step that outlasts the lease: the heartbeat keeps the lease while the model thinks, so no second worker
runs the turn (and its tool) meanwhile; a lease that is lost anyway stops the turn before its next side
effect. Time is the backend's fake clock, moved by the test; threads meet at events, every wait bounded."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    ScriptedChatModel,
    Tool,
    ToolMessage,
    Turn,
    TurnStatus,
    Worker,
    WorkOutcome,
    WorkResult,
)
from agentturn.engine.clock import real_wait
from agentturn.errors import StorageUnavailableError
from agentturn.ports.store import Lease, TurnStore
from agentturn.testing.delegating import DelegatingTurnStore
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import Ledger, ai_calls

LEASE = 60.0
#: Real seconds any thread of these tests waits for another before the test fails.
BOUND = 10.0


class SlowModel:
    """Its first call does not answer until the test opens the gate (as a model call lasting minutes)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.calls = 0

    def __call__(self, request: ChatRequest) -> AiMessage:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            assert self.gate.wait(BOUND), "the test never let the model answer"
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return AiMessage(content="ticket created")
        return ai_calls(("t1", "create_ticket", {"title": "login"}))


class ObservedStore(DelegatingTurnStore):
    """The backend's store; counts renewals and saves, and can throttle renewals for a while."""

    def __init__(self, inner: TurnStore) -> None:
        super().__init__(inner)
        self.renewed = threading.Condition()
        self.renewals = 0
        self.saves = 0
        self.throttle_renewals = False

    def wait_for_renewals(self, count: int) -> None:
        with self.renewed:
            assert self.renewed.wait_for(lambda: self.renewals >= count, BOUND), f"no renewal #{count}"

    def renew(self, lease: Lease, lease_seconds: float) -> Lease:
        try:
            if self.throttle_renewals:
                # What the DynamoDB adapter raises at the port once the SDK's retries ran out.
                raise StorageUnavailableError("renew failed: ThrottlingException", code="ThrottlingException")
            return self.inner.renew(lease, lease_seconds)
        finally:
            # Counted once the attempt is over, so that a test moving on after it sees its effect.
            with self.renewed:
                self.renewals += 1
                self.renewed.notify_all()

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        self.saves += 1
        return self.inner.save(turn, expected_version=expected_version, lease_id=lease_id)


def ticket_agent(model: SlowModel, ledger: Ledger) -> Agent:
    def create_ticket(arguments: dict[str, Any]) -> Any:
        ledger.attempts.append("create_ticket")
        return ledger.write(dict(arguments))

    return Agent(
        id="tickets",
        instructions="",
        chat_model=ScriptedChatModel(model),
        tools=[Tool("create_ticket", "", create_ticket)],
    )


def in_thread(action: Callable[[], WorkResult]) -> tuple[threading.Thread, list[WorkResult]]:
    results: list[WorkResult] = []
    thread = threading.Thread(target=lambda: results.append(action()), daemon=True)
    thread.start()
    return thread, results


def worker(backend: Backend, agent: Agent, store: Any, name: str) -> Worker:
    """Worker A beats on the test's clock; any other worker's steps are quick, and its heartbeat (on real
    time) stays out of the way of the clock's waiters the test synchronises with."""
    wait = backend.clock.wait if name == "A" else real_wait
    runner = backend.runner([agent], store=store, wait=wait, lease_seconds=LEASE, worker_id=name)
    return Worker(runner, worker_id=name)


def test_a_model_call_longer_than_the_lease_keeps_it_and_the_tool_runs_once(backend: Backend) -> None:
    # GIVEN a queued turn whose first model call takes minutes, and worker A running it
    model, ledger = SlowModel(), Ledger()
    agent = ticket_agent(model, ledger)
    turn = backend.runner([agent]).start(agent, "conv", "open a ticket")
    observed = ObservedStore(backend.store)
    thread, results = in_thread(lambda: worker(backend, agent, observed, "A").process(turn.id))
    assert model.entered.wait(BOUND)

    # WHEN two whole leases pass while the model thinks
    for beat in range(1, 7):
        backend.clock.await_waiter(BOUND)
        backend.clock.advance(LEASE / 3 + 0.5)
        # THEN the heartbeat renews the lease every third of it
        observed.wait_for_renewals(beat)

    # ... so a second worker, given the turn meanwhile (a duplicate message, the sweeper), cannot take it
    second = worker(backend, agent, backend.store, "B").process(turn.id)
    assert second.outcome is WorkOutcome.LEASE_HELD

    # WHEN the model finally answers
    model.gate.set()
    thread.join(BOUND)

    # THEN worker A completes the turn and the tool's side effect happened exactly once
    assert not thread.is_alive()
    done = results[0].turn
    assert done is not None and done.status is TurnStatus.COMPLETED
    assert len(ledger.attempts) == 1 and len(ledger.effects) == 1
    # ... and the heartbeat stopped with the step: no renewal once the turn was done
    settled = observed.renewals
    backend.clock.advance(LEASE)
    assert observed.renewals == settled


def test_a_lease_lost_during_a_model_call_stops_the_turn_before_its_tool(backend: Backend) -> None:
    # GIVEN worker A in a long model call, whose renewals are throttled until its lease runs out
    model, ledger = SlowModel(), Ledger()
    agent = ticket_agent(model, ledger)
    turn = backend.runner([agent]).start(agent, "conv", "open a ticket")
    observed = ObservedStore(backend.store)
    observed.throttle_renewals = True
    thread, results = in_thread(lambda: worker(backend, agent, observed, "A").process(turn.id))
    assert model.entered.wait(BOUND)
    for beat in range(1, 4):
        backend.clock.await_waiter(BOUND)
        backend.clock.advance(LEASE / 3 + 0.5)
        observed.wait_for_renewals(beat)

    # WHEN worker B takes the expired lease over and runs the turn to the end (its model is quick)
    taken = worker(backend, agent, backend.store, "B").process(turn.id)
    assert taken.outcome is WorkOutcome.ADVANCED
    assert taken.turn is not None and taken.turn.status is TurnStatus.COMPLETED
    # ... and A's next beat finds the lease gone
    observed.throttle_renewals = False
    saves_before = observed.saves
    backend.clock.await_waiter(BOUND)
    backend.clock.advance(LEASE / 3 + 0.5)
    observed.wait_for_renewals(4)

    # WHEN A's model call finally returns
    model.gate.set()
    thread.join(BOUND)

    # THEN A kept nothing of it: no tool call, no write; the tool ran once (B's), the turn is B's result
    assert not thread.is_alive()
    assert observed.saves == saves_before
    assert len(ledger.attempts) == 1
    assert results[0].turn is not None and results[0].turn.version == taken.turn.version
    assert backend.store.load(turn.id).status is TurnStatus.COMPLETED


def test_a_tool_longer_than_the_lease_after_a_quick_model_call_keeps_it_too(backend: Backend) -> None:
    # GIVEN a quick model call, then a tool that runs for minutes (one heartbeat serves both steps of the run)
    entered, gate, ledger = threading.Event(), threading.Event(), Ledger()

    def slow_tool(arguments: dict[str, Any]) -> Any:
        ledger.attempts.append("create_ticket")
        entered.set()
        assert gate.wait(BOUND), "the test never let the tool finish"
        return ledger.write(dict(arguments))

    def model(request: ChatRequest) -> AiMessage:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return AiMessage(content="ticket created")
        return ai_calls(("t1", "create_ticket", {"title": "login"}))

    agent = Agent(
        id="tickets", instructions="", chat_model=ScriptedChatModel(model), tools=[Tool("create_ticket", "", slow_tool)]
    )
    turn = backend.runner([agent]).start(agent, "conv", "open a ticket")
    observed = ObservedStore(backend.store)
    thread, results = in_thread(lambda: worker(backend, agent, observed, "A").process(turn.id))
    assert entered.wait(BOUND)

    # WHEN two leases pass while the tool runs THEN the lease is renewed, and nobody else can take the turn
    for beat in range(1, 7):
        backend.clock.await_waiter(BOUND)
        backend.clock.advance(LEASE / 3 + 0.5)
        observed.wait_for_renewals(beat)
    assert worker(backend, agent, backend.store, "B").process(turn.id).outcome is WorkOutcome.LEASE_HELD

    # WHEN the tool finishes THEN the turn completes with the tool run once
    gate.set()
    thread.join(BOUND)
    assert not thread.is_alive()
    assert results[0].turn is not None and results[0].turn.status is TurnStatus.COMPLETED
    assert ledger.attempts == ["create_ticket"]
