"""Counting attempts on a turn whose snapshot cannot be read (in-memory store; nothing reads the body)."""

from __future__ import annotations

from tests.unit.conftest import Parts

from agentturn import Agent, ScriptedChatModel, TurnStatus
from agentturn.engine.unreadable import UnreadableAttempt, record_unreadable
from agentturn.errors import SnapshotUnreadableError


def record(parts: Parts, error: SnapshotUnreadableError, *, at_once: bool = False) -> UnreadableAttempt:
    return record_unreadable(
        error,
        at_once=at_once,
        store=parts.store,
        retry=parts.retry,
        clock=parts.clock,
        events=parts.sequencer,
        memory=parts.memory_for,
    )


def unreadable(parts: Parts, *, attempts: int = 0, not_before: float | None = None) -> SnapshotUnreadableError:
    run = parts.new_run(Agent("a", "x", ScriptedChatModel([])), leased=False)
    stored = parts.store.load(run.turn.id)
    return SnapshotUnreadableError(
        stored.id,
        "truncated JSON",
        status=stored.status.value,
        version=stored.version,
        conversation_id="c1",
        attempts=attempts,
        not_before=not_before,
    )


def test_an_early_attempt_is_counted_and_handed_on_with_its_backoff(parts: Parts) -> None:
    # GIVEN a turn that cannot be read, never tried before (3 attempts allowed)
    error = unreadable(parts)

    # WHEN the attempt is recorded
    attempt = record(parts, error)

    # THEN it was counted, the turn is not ended, a retry is due later and was told
    assert attempt.counted and not attempt.failed
    assert attempt.retry_in > 0
    assert "RETRY_SCHEDULED" in parts.types()
    assert parts.memory("c1").get_active_turn() == error.turn_id


def test_an_attempt_before_the_backoff_is_over_is_not_counted(parts: Parts) -> None:
    # GIVEN a turn whose last attempt set a backoff that has not passed
    error = unreadable(parts, attempts=1, not_before=parts.clock() + 30)

    # WHEN a duplicate message records another attempt
    attempt = record(parts, error)

    # THEN nothing is counted; the caller is told how long is left
    assert not attempt.counted
    assert 29 < attempt.retry_in <= 30
    assert parts.events == []


def test_the_last_attempt_ends_the_turn_failed_and_frees_the_conversation(parts: Parts) -> None:
    # GIVEN a turn that cannot be read, whose first two attempts were recorded (3 allowed)
    error = unreadable(parts)
    for tried in range(2):
        counted = record(parts, error)
        assert counted.counted and not counted.failed
        parts.clock.advance(counted.retry_in + 1)
        error = SnapshotUnreadableError(
            error.turn_id,
            error.detail,
            status=error.status,
            version=error.version,
            conversation_id="c1",
            attempts=tried + 1,
        )

    # WHEN the last attempt is recorded
    attempt = record(parts, error)

    # THEN the turn ended FAILED, the alarm was told, and the conversation is free for the next turn
    assert attempt.counted and attempt.failed
    assert "TURN_FAILED" in parts.types()
    assert parts.memory("c1").get_active_turn() is None


def test_a_cancel_ends_it_at_once_whatever_attempts_remain(parts: Parts) -> None:
    # GIVEN a turn that cannot be read, never tried before
    error = unreadable(parts)

    # WHEN a person's cancel records it at once
    attempt = record(parts, error, at_once=True)

    # THEN it ended with this attempt
    assert attempt.failed


def test_a_turn_stored_as_ended_is_left_alone(parts: Parts) -> None:
    # GIVEN an unreadable turn whose stored status is already FAILED, and one with a status nobody knows
    ended = SnapshotUnreadableError("t9", "gone", status=TurnStatus.FAILED.value)
    unknown = SnapshotUnreadableError("t8", "gone", status="EXPLODED")

    # WHEN attempts are recorded THEN neither is counted or written
    assert record(parts, ended) == UnreadableAttempt("t9", counted=False, failed=True)
    assert record(parts, unknown) == UnreadableAttempt("t8", counted=False, failed=False)
    assert parts.events == []
