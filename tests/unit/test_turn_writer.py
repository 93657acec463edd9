"""Writes of a running turn: fenced saves, endings that free the conversation, backoffs."""

from __future__ import annotations

import pytest
from tests.unit.conftest import Parts

from agentturn import Agent, ScriptedChatModel, TurnStatus, UserMessage
from agentturn.engine.turn_run import LeaseGone
from agentturn.timeline.identity import stamp


def an_agent() -> Agent:
    return Agent("a", "x", ScriptedChatModel([]))


def test_a_save_under_a_lease_someone_took_over_keeps_nothing(parts: Parts) -> None:
    # GIVEN a run whose lease expired and was taken by another worker
    run = parts.new_run(an_agent())
    parts.clock.advance(parts.lease_seconds + 1)
    assert parts.store.claim(run.turn.id, "w2", parts.lease_seconds) is not None
    stored = parts.store.load(run.turn.id).version

    # WHEN this run tries to save
    run.turn.final_output = "stale"
    with pytest.raises(LeaseGone):
        parts.writer.save(run)

    # THEN nothing was written and the run holds no lease any more
    assert parts.store.load(run.turn.id).version == stored
    assert run.lease is None


@pytest.mark.parametrize(
    ("status", "event"),
    [
        (TurnStatus.COMPLETED, "TURN_COMPLETED"),
        (TurnStatus.FAILED, "TURN_FAILED"),
        (TurnStatus.CANCELLED, "TURN_CANCELLED"),
    ],
)
def test_an_ending_frees_the_conversation_once_its_timeline_is_whole(
    parts: Parts, status: TurnStatus, event: str
) -> None:
    # GIVEN a running turn that holds its conversation
    run = parts.new_run(an_agent())

    # WHEN it ends, however it ends
    parts.writer.finish(run, status, "stopped", "stopped")

    # THEN it is stored ended, the conversation is free, and the ending event was told last
    assert parts.store.load(run.turn.id).status is status
    assert parts.memory("c1").get_active_turn() is None
    assert parts.types()[-1] == event


def test_an_ending_whose_projection_failed_keeps_the_conversation_for_repair(parts: Parts) -> None:
    # GIVEN a running turn with a message not yet in a timeline that cannot be written right now
    run = parts.new_run(an_agent())
    run.turn.messages.append(stamp(run.turn, UserMessage(content="hi")))
    memory = parts.memory("c1")

    def broken(*args: object, **kwargs: object) -> None:
        raise ConnectionError("timeline down")

    memory.append_all = broken  # type: ignore[method-assign]

    # WHEN it ends
    parts.writer.finish(run, TurnStatus.FAILED, "tool_error", "boom")

    # THEN the snapshot is ended, but the turn still names itself in the conversation (a repair finishes it)
    assert parts.store.load(run.turn.id).status is TurnStatus.FAILED
    assert memory.get_active_turn() == run.turn.id
    assert "PROJECTION_FAILED" in parts.types()


def test_a_retry_is_scheduled_with_a_backoff_and_the_last_attempt_ends_the_turn(parts: Parts) -> None:
    # GIVEN a runner that allows 3 attempts, and a run that keeps failing
    run = parts.new_run(an_agent())

    # WHEN it is put off after each of three failures
    parts.writer.retry_later(run, "cannot_run", "boom")
    after_first = parts.store.load(run.turn.id)
    parts.writer.retry_later(run, "cannot_run", "boom")
    parts.writer.retry_later(run, "cannot_run", "boom")

    # THEN the first left it runnable and not due before its backoff; the third ended it FAILED
    assert after_first.status is TurnStatus.RUNNING
    assert after_first.retry is not None and after_first.retry.not_before is not None
    assert after_first.retry.not_before > parts.clock()
    assert run.turn.status is TurnStatus.FAILED
    assert run.turn.error is not None and "gave up after 3 attempts" in run.turn.error.message
