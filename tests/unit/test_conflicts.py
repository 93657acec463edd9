"""The retry-on-conflict loop shared by submit, cancel and expiry (pure)."""

from __future__ import annotations

import pytest

from agentturn.engine.conflicts import CONFLICT_RETRIES, TryAgain, retry_on_conflict
from agentturn.errors import InvalidResumeError, VersionConflictError


def test_an_attempt_that_loses_a_race_is_decided_again_until_it_wins() -> None:
    # GIVEN an attempt whose write loses twice, then wins
    calls: list[int] = []

    def attempt() -> str:
        calls.append(len(calls))
        if len(calls) < 3:
            raise VersionConflictError("t1", 1, 2)
        return "saved"

    # WHEN it is run with retries
    result = retry_on_conflict("t1", attempt)

    # THEN it was run three times and its answer is the winning one
    assert result == "saved"
    assert len(calls) == 3


def test_an_attempt_may_ask_for_another_round_itself() -> None:
    # GIVEN an attempt that finds the turn changed under it once
    rounds: list[int] = []

    def attempt() -> int:
        rounds.append(1)
        if len(rounds) == 1:
            raise TryAgain
        return len(rounds)

    # WHEN run THEN the second round answers
    assert retry_on_conflict("t1", attempt) == 2


def test_a_write_that_keeps_losing_gives_up_with_a_conflict_after_the_bounded_rounds() -> None:
    # GIVEN an attempt that always loses
    rounds: list[int] = []

    def attempt() -> None:
        rounds.append(1)
        raise VersionConflictError("t1", 1, 2)

    # WHEN run THEN it raises a conflict on that turn, after exactly the allowed rounds
    with pytest.raises(VersionConflictError) as raised:
        retry_on_conflict("t1", attempt)
    assert "t1" in str(raised.value)
    assert len(rounds) == CONFLICT_RETRIES


def test_any_other_error_is_not_retried() -> None:
    # GIVEN an attempt refused for a reason a retry cannot change
    rounds: list[int] = []

    def attempt() -> None:
        rounds.append(1)
        raise InvalidResumeError("not pending", reason="action_not_pending")

    # WHEN run THEN the refusal comes out at once
    with pytest.raises(InvalidResumeError):
        retry_on_conflict("t1", attempt)
    assert len(rounds) == 1
