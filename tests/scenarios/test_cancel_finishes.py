"""Cancel always finishes: a retry completes what a failed attempt started, and the sweeper completes a
blocked turn left carrying the flag. Faults are injected at the TurnStore port (a throttled save)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentturn import (
    Agent,
    FormRequired,
    FormStatus,
    InvalidResumeError,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolContext,
    Turn,
    TurnStatus,
)
from agentturn.errors import StorageUnavailableError
from agentturn.ports.store import TurnStore
from agentturn.testing.delegating import DelegatingTurnStore
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import (
    SUPPORT_DATA,
    final_from_last_tool,
    form_asking_agent,
    reply_after_tools,
    support_form,
)
from tests.scenarios.test_decline_expire_retain import TICKET

SavePredicate = Callable[[Turn], bool]


def throttled(operation: str) -> StorageUnavailableError:
    """What the DynamoDB adapter raises at the port once the SDK's own retries of a throttled write ran out."""
    return StorageUnavailableError(f"{operation} failed: ThrottlingException: slow down", code="ThrottlingException")


class ThrottlingStore(DelegatingTurnStore):
    """The backend's TurnStore, except that saves matching ``when`` are throttled ``times`` times."""

    def __init__(self, inner: TurnStore) -> None:
        super().__init__(inner)
        self.when: SavePredicate = lambda turn: False
        self.times = 0
        self.throttled = 0

    def throttle(self, when: SavePredicate, times: int = 1) -> None:
        self.when, self.times = when, times

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        if self.throttled < self.times and self.when(turn):
            self.throttled += 1
            raise throttled("UpdateItem")
        return self.inner.save(turn, expected_version=expected_version, lease_id=lease_id)


def cancelled_save(turn: Turn) -> bool:
    return turn.status is TurnStatus.CANCELLED


def assert_cancelled_and_released(backend: Backend, turn_id: str) -> None:
    stored = backend.store.load(turn_id)
    assert stored.status is TurnStatus.CANCELLED
    assert stored.cancel_requested
    memory = backend.memory("conv")
    assert memory.get_message(f"{turn_id}:input:call-1").status is FormStatus.CANCELLED
    assert memory.get_active_turn() is None


def test_a_retried_cancel_finishes_a_cancel_whose_save_was_throttled(backend: Backend) -> None:
    # GIVEN a turn waiting on a form, and a store that throttles the save that would cancel it
    agent = form_asking_agent()
    store = ThrottlingStore(backend.store)
    runner = backend.runner([agent], store=store)
    waiting = runner.run(agent, "conv", "ticket please")
    store.throttle(cancelled_save)

    # WHEN the first cancel is throttled
    with pytest.raises(StorageUnavailableError):
        runner.cancel(waiting.id)

    # THEN nothing changed: the turn still waits, its card is PENDING, and no flag was left behind
    stored = backend.store.load(waiting.id)
    assert (stored.status, stored.version, stored.cancel_requested) == (waiting.status, waiting.version, False)
    assert backend.memory("conv").get_message(f"{waiting.id}:input:call-1").status is FormStatus.PENDING

    # WHEN the cancel is retried
    cancelled = runner.cancel(waiting.id)

    # THEN it finished: CANCELLED, card CANCELLED, the conversation free for a new turn
    assert cancelled.status is TurnStatus.CANCELLED
    assert_cancelled_and_released(backend, waiting.id)
    assert runner.run(agent, "conv", "again").status is TurnStatus.WAITING_FOR_USER


def test_a_retried_cancel_finishes_a_turn_left_waiting_with_the_flag(backend: Backend) -> None:
    # GIVEN a waiting turn whose cancel flag is set but which was never saved CANCELLED (what an earlier
    # version's first attempt left behind when its save failed)
    agent = form_asking_agent()
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket please")
    backend.store.request_cancel(waiting.id)

    # THEN nobody can answer it meanwhile, and nothing changes by trying
    with pytest.raises(InvalidResumeError) as refused:
        runner.submit_resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    assert refused.value.reason == "turn_terminal"
    assert backend.store.load(waiting.id).version == waiting.version

    # WHEN the cancel is retried
    runner.cancel(waiting.id)

    # THEN it finished
    assert_cancelled_and_released(backend, waiting.id)


def cancelling_form_tool(holder: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    """A tool that needs a form; while it runs (first time) someone cancels the turn through the store."""

    def create_support_ticket(arguments: dict[str, Any]) -> Any:
        context = ToolContext.current()
        if not context.submitted_form_data:
            holder["store"].request_cancel(context.turn_id)
            raise FormRequired(support_form())
        return {"ticket": "T-1"}

    return create_support_ticket


def cancelled_mid_step_agent(holder: dict[str, Any]) -> Agent:
    return Agent(
        id="tool-form",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(TICKET, final_from_last_tool)),
        tools=[Tool("create_support_ticket", "", cancelling_form_tool(holder))],
    )


def test_a_cancel_requested_while_the_step_that_blocks_runs_ends_the_turn(backend: Backend) -> None:
    # GIVEN a tool asking for a form, and a cancel requested while that tool runs
    holder: dict[str, Any] = {"store": backend.store}
    agent = cancelled_mid_step_agent(holder)
    runner = backend.runner([agent])

    # WHEN the turn runs
    done = runner.run(agent, "conv", "ticket please")

    # THEN it does not stay waiting on a live card: it ends CANCELLED, its conversation free
    assert done.status is TurnStatus.CANCELLED
    assert_cancelled_and_released(backend, done.id)


def test_the_sweeper_finishes_a_cancel_whose_process_died_after_the_turn_blocked(backend: Backend) -> None:
    # GIVEN the same race, but the save that would cancel the turn fails (the process dies there)
    holder: dict[str, Any] = {"store": backend.store}
    agent = cancelled_mid_step_agent(holder)
    store = ThrottlingStore(backend.store)
    store.throttle(cancelled_save)
    runner = backend.runner([agent], store=store)
    with pytest.raises(StorageUnavailableError):
        runner.run(agent, "conv", "ticket please")
    stranded = backend.memory("conv").get_active_turn()
    assert stranded is not None
    left = backend.store.load(stranded)
    assert (left.status, left.cancel_requested) == (TurnStatus.WAITING_FOR_USER, True)

    # WHEN the sweeper runs
    sweeper = backend.runner([agent], worker_id="sweeper")
    assert [t.turn_id for t in backend.store.find_overdue()] == [stranded]
    now_runnable = sweeper.expire_overdue(expire_waits=False)

    # THEN it finished the cancel (nothing to hand to a worker), and the turn left the sweeper's index
    assert now_runnable == []
    assert_cancelled_and_released(backend, stranded)
    assert backend.store.find_overdue() == []


def test_the_sweeper_leaves_a_waiting_turn_without_the_flag_alone(backend: Backend) -> None:
    # GIVEN a turn waiting on a form with no deadline and no cancel
    agent = form_asking_agent()
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket please")

    # WHEN the sweeper looks for due blocked turns
    # THEN there are none, and the turn is untouched
    assert backend.store.find_overdue() == []
    assert runner.expire_overdue() == []
    assert backend.store.load(waiting.id).version == waiting.version
