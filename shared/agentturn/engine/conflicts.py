"""Deciding again on what is stored now when another writer got there first."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from agentturn.errors import VersionConflictError

T = TypeVar("T")

#: Rounds before a write that keeps losing gives up (each round reads what is stored and decides again).
CONFLICT_RETRIES = 5


class TryAgain(Exception):
    """Raised by an attempt that found the turn changed under it in a way that calls for another round."""


def retry_on_conflict(turn_id: str, attempt: Callable[[], T], *, rounds: int = CONFLICT_RETRIES) -> T:
    """Run ``attempt`` (which loads the turn and decides afresh) until it returns, at most ``rounds`` times.

    An attempt whose conditional write lost (``VersionConflictError``) or that asks for another round
    (:class:`TryAgain`) is run again, so that its caller gets an answer about what is stored now (say
    "not pending" to the loser of two submits) rather than a bare conflict; after the last round the
    conflict is raised.
    """
    for _ in range(rounds):
        try:
            return attempt()
        except (VersionConflictError, TryAgain):
            continue
    raise VersionConflictError(turn_id, None)
