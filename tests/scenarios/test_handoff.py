"""A worker started from the snapshot its resume message carries: no claim, and still one advance per answer.

The snapshot goes through the real packing (the store's serializer, compressed, base64) on every adapter set.
"""

from __future__ import annotations

from typing import Any

from agentturn import Agent, ResumeCommand, ScriptedChatModel, Tool, Turn, TurnStatus, Worker, WorkOutcome
from agentturn.engine.handoff import pack_snapshot, serializer_of, unpack_snapshot
from agentturn.ports.store import Lease, TurnStore
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import MEETING_DATA, SUPPORT_DATA, form_asking_agent
from tests.scenarios.test_model_requested_form import meeting_agent, meeting_model


class CountingStore:
    """The backend's store, counting claims and saves (everything passes through)."""

    def __init__(self, inner: TurnStore) -> None:
        self.inner = inner
        self.serializer = serializer_of(inner)
        self.claims = 0
        self.saves = 0

    def claim(self, turn_id: str, worker_id: str, lease_seconds: float) -> Lease | None:
        self.claims += 1
        return self.inner.claim(turn_id, worker_id, lease_seconds)

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        self.saves += 1
        return self.inner.save(turn, expected_version=expected_version, lease_id=lease_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def answered(backend: Backend, agent: Agent, action_id: str, data: dict[str, Any]) -> tuple[Turn, Turn]:
    """``agent``'s turn with its form submitted as the stored turn, and the snapshot its resume message carries."""
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv-1", "帮我")
    submitted = runner.submit_resume(waiting.id, ResumeCommand.submit_form(action_id, data))
    serializer = serializer_of(backend.store)
    key = b"scenario-handoff-key-" + b"0" * 32
    sealed = pack_snapshot(submitted, serializer, key)
    assert sealed is not None
    snapshot = unpack_snapshot(*sealed, submitted.id, submitted.version, serializer, key)
    assert snapshot is not None
    return submitted, snapshot


def counting_worker(backend: Backend, agent: Agent) -> tuple[Worker, CountingStore]:
    counting = CountingStore(backend.store)
    return Worker(backend.runner([agent], store=counting)), counting


def test_a_model_requested_form_is_resumed_with_one_save_and_no_claim(backend: Backend) -> None:
    # GIVEN a submitted support form (next: one model call that answers) and its message's snapshot
    agent = form_asking_agent()
    submitted, snapshot = answered(backend, agent, "call-1", SUPPORT_DATA)
    worker, counting = counting_worker(backend, agent)

    # WHEN a worker processes the message with it
    result = worker.process(submitted.id, snapshot=snapshot)

    # THEN the turn completed, written once, never claimed
    assert result.outcome is WorkOutcome.ADVANCED
    assert result.turn is not None and result.turn.status is TurnStatus.COMPLETED
    assert (counting.claims, counting.saves) == (0, 1)
    stored = backend.store.load(submitted.id)
    assert stored.status is TurnStatus.COMPLETED
    assert stored.version == submitted.version + 1


def test_the_turn_is_claimed_before_its_first_tool_runs(backend: Backend) -> None:
    # GIVEN a submitted meeting-room form (next: a model call, then the reservation tool, then the answer)
    reservations: list[dict[str, Any]] = []
    agent = meeting_agent(ScriptedChatModel(meeting_model), reservations)
    submitted, snapshot = answered(backend, agent, "call-456", MEETING_DATA)
    worker, counting = counting_worker(backend, agent)

    # WHEN a worker processes the message with its snapshot
    result = worker.process(submitted.id, snapshot=snapshot)

    # THEN the one claim came before the reservation, which ran once, and the turn completed
    assert result.turn is not None and result.turn.status is TurnStatus.COMPLETED
    assert counting.claims == 1
    assert reservations == [MEETING_DATA]


def test_a_tool_declared_idempotent_runs_without_a_claim(backend: Backend) -> None:
    # GIVEN a submitted meeting-room form whose reservation tool is declared idempotent
    reservations: list[dict[str, Any]] = []
    agent = meeting_agent(ScriptedChatModel(meeting_model), reservations)
    reserve = agent.tools["reserve_meeting_room"]
    idempotent = Tool(reserve.name, reserve.description, reserve.function, idempotent=True)
    agent = Agent(
        id=agent.id,
        version=agent.version,
        instructions=agent.instructions,
        chat_model=agent.chat_model,
        tools=[tool for tool in agent.tools.values() if tool.name != reserve.name] + [idempotent],
    )
    submitted, snapshot = answered(backend, agent, "call-456", MEETING_DATA)
    worker, counting = counting_worker(backend, agent)

    # WHEN a worker processes the message with its snapshot
    result = worker.process(submitted.id, snapshot=snapshot)

    # THEN the turn completed with its reservation, never claimed, with one save (the tool's result rode on it)
    assert result.turn is not None and result.turn.status is TurnStatus.COMPLETED
    assert reservations == [MEETING_DATA]
    assert (counting.claims, counting.saves) == (0, 1)


def test_a_second_delivery_of_the_message_changes_nothing_and_runs_no_tool(backend: Backend) -> None:
    # GIVEN a meeting-room turn that a first delivery of its message already completed
    reservations: list[dict[str, Any]] = []
    model = ScriptedChatModel(meeting_model)
    agent = meeting_agent(model, reservations)
    submitted, snapshot = answered(backend, agent, "call-456", MEETING_DATA)
    first = Worker(backend.runner([agent])).process(submitted.id, snapshot=snapshot)
    assert first.turn is not None and first.turn.status is TurnStatus.COMPLETED
    done = backend.store.load(submitted.id)

    # WHEN the same message (the same, now stale, snapshot) is delivered again
    again = Worker(backend.runner([agent])).process(submitted.id, snapshot=snapshot)

    # THEN it is a no-op: the stored turn is as the first left it, and the tool ran once
    assert again.outcome is WorkOutcome.NOT_RUNNABLE
    assert backend.store.load(submitted.id) == done
    assert reservations == [MEETING_DATA]


def test_a_delivery_while_another_worker_holds_the_turn_keeps_nothing(backend: Backend) -> None:
    # GIVEN a submitted turn that another worker claimed (after a sweep, say) before this message arrived
    agent = form_asking_agent()
    submitted, snapshot = answered(backend, agent, "call-1", SUPPORT_DATA)
    held = backend.store.claim(submitted.id, "another-worker", 60)
    assert held is not None

    # WHEN this worker processes the message with its snapshot
    result = Worker(backend.runner([agent])).process(submitted.id, snapshot=snapshot)

    # THEN its save was refused: the turn is still runnable at its version, for the holder to finish
    assert result.outcome is WorkOutcome.LEASE_HELD
    stored = backend.store.load(submitted.id)
    assert (stored.status, stored.version) == (TurnStatus.RUNNING, submitted.version)


def test_a_cancel_asked_for_after_the_answer_stops_the_turn_before_its_tool(backend: Backend) -> None:
    # GIVEN a submitted meeting-room form whose cancel was asked for after its message was sent
    reservations: list[dict[str, Any]] = []
    agent = meeting_agent(ScriptedChatModel(meeting_model), reservations)
    submitted, snapshot = answered(backend, agent, "call-456", MEETING_DATA)
    backend.store.request_cancel(submitted.id)

    # WHEN a worker processes the message with the snapshot (which does not carry the flag)
    Worker(backend.runner([agent])).process(submitted.id, snapshot=snapshot)

    # THEN the claim before the reservation saw the flag: the turn ended CANCELLED and nothing was reserved
    assert backend.store.load(submitted.id).status is TurnStatus.CANCELLED
    assert reservations == []


def test_a_cancel_asked_for_during_the_model_call_is_kept_on_the_turn(backend: Backend) -> None:
    # GIVEN a submitted support form (the model answers at once) whose cancel was asked for after its message
    agent = form_asking_agent()
    submitted, snapshot = answered(backend, agent, "call-1", SUPPORT_DATA)
    backend.store.request_cancel(submitted.id)

    # WHEN a worker processes the message with the snapshot
    Worker(backend.runner([agent])).process(submitted.id, snapshot=snapshot)

    # THEN the answer's save found the flag and kept it (as for a cancel that arrives during a claimed worker's
    # model call: the turn stopped otherwise once cancel was asked, and the cancel request is answered as done)
    stored = backend.store.load(submitted.id)
    assert stored.status is TurnStatus.COMPLETED
    assert stored.cancel_requested
