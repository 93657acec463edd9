"""A retried submit is answered as the first time (pure)."""

from __future__ import annotations

import pytest

from agentturn import ResumeCommand, Turn
from agentturn.engine.idempotency import KEPT_DIGITS, is_replay, remember_request
from agentturn.errors import IdempotencyConflictError
from agentturn.state.turn import MAX_ACCEPTED_REQUESTS


def a_turn() -> Turn:
    return Turn(id="t1", conversation_id="c", agent_id="a", agent_version="1")


def submit(request_id: str, city: str = "Oslo") -> ResumeCommand:
    return ResumeCommand.submit_form("call-1", {"city": city}).with_metadata("requestId", request_id)


def test_the_same_request_again_is_a_replay_and_a_new_one_is_not() -> None:
    # GIVEN a turn that accepted request r1
    turn = a_turn()
    remember_request(turn, submit("r1"), "2026-01-01T00:00:00Z")

    # WHEN r1 comes again, and r2 comes for the first time
    # THEN only r1 is a replay
    assert is_replay(turn, submit("r1"))
    assert not is_replay(turn, submit("r2"))


def test_a_request_without_an_id_is_never_a_replay_and_is_not_remembered() -> None:
    # GIVEN a turn and a submit with no request id
    turn = a_turn()
    command = ResumeCommand.submit_form("call-1", {"city": "Oslo"})

    # WHEN it is remembered THEN nothing is stored and it is not a replay
    remember_request(turn, command, "2026-01-01T00:00:00Z")
    assert turn.accepted_requests == {}
    assert not is_replay(turn, command)


def test_the_same_id_with_other_values_is_refused() -> None:
    # GIVEN a turn that accepted r1 with Oslo
    turn = a_turn()
    remember_request(turn, submit("r1", "Oslo"), "2026-01-01T00:00:00Z")

    # WHEN r1 comes with Bergen THEN it is refused, not applied and not taken for the first answer
    with pytest.raises(IdempotencyConflictError):
        is_replay(turn, submit("r1", "Bergen"))


def test_only_the_most_recent_requests_are_kept() -> None:
    # GIVEN a turn that accepted one request more than it keeps
    turn = a_turn()
    for n in range(MAX_ACCEPTED_REQUESTS + 1):
        remember_request(turn, submit(f"r{n}"), "2026-01-01T00:00:00Z")

    # THEN the oldest was forgotten, and the newest is there with the version its write will have
    assert len(turn.accepted_requests) == MAX_ACCEPTED_REQUESTS
    assert "r0" not in turn.accepted_requests
    assert turn.accepted_requests[f"r{MAX_ACCEPTED_REQUESTS}"].version == turn.version + 1


def _accepted_oslo(kept_digits: int = KEPT_DIGITS) -> Turn:
    """A turn that accepted r1 (Oslo), keeping ``kept_digits`` of its fingerprint."""
    turn = a_turn()
    remember_request(turn, submit("r1", "Oslo"), "2026-01-01T00:00:00Z")
    turn.accepted_requests["r1"].fingerprint = submit("r1", "Oslo").fingerprint()[:kept_digits]
    return turn


def test_a_turn_keeps_half_of_the_fingerprint_and_still_tells_requests_apart() -> None:
    # GIVEN a turn that accepted r1
    turn = a_turn()
    remember_request(turn, submit("r1", "Oslo"), "2026-01-01T00:00:00Z")

    # THEN it keeps 128 bits of the request's fingerprint (every kept byte is billed on each later write)
    assert turn.accepted_requests["r1"].fingerprint == submit("r1").fingerprint()[:KEPT_DIGITS]
    # AND the same request is a replay while another body under the same id is refused
    assert is_replay(turn, submit("r1", "Oslo"))
    with pytest.raises(IdempotencyConflictError):
        is_replay(turn, submit("r1", "Bergen"))


def test_a_whole_fingerprint_kept_by_an_older_snapshot_still_answers_its_retry() -> None:
    # GIVEN a snapshot written before fingerprints were shortened: it keeps all 64 digits
    turn = _accepted_oslo(64)

    # WHEN the request is retried THEN it is a replay, and another body is still refused
    assert is_replay(turn, submit("r1", "Oslo"))
    with pytest.raises(IdempotencyConflictError):
        is_replay(turn, submit("r1", "Bergen"))


def test_a_kept_fingerprint_too_short_to_be_ours_matches_nothing() -> None:
    # GIVEN a snapshot whose kept fingerprint was cut below 128 bits (not one this code writes)
    turn = _accepted_oslo(8)

    # WHEN the same request comes THEN it is refused rather than taken for a replay on a few bits
    with pytest.raises(IdempotencyConflictError):
        is_replay(turn, submit("r1", "Oslo"))
