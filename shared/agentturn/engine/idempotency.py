"""Answering a retried submit as the first time: the requests a turn has accepted, by request id."""

from __future__ import annotations

from typing import Final

from agentturn.errors import IdempotencyConflictError
from agentturn.state.commands import ResumeCommand
from agentturn.state.turn import MAX_ACCEPTED_REQUESTS, AcceptedRequest, Turn

#: Hex digits of a request's fingerprint a snapshot keeps: 128 bits tell two answers apart as surely as 256,
#: and the other 32 digits were billed on every later write of the turn. (Older snapshots keep all 64.)
KEPT_DIGITS: Final = 32


def _same_request(kept: str, fingerprint: str) -> bool:
    return len(kept) >= KEPT_DIGITS and fingerprint.startswith(kept)


def is_replay(turn: Turn, command: ResumeCommand) -> bool:
    """Same request id and same request: already applied, answer as the first time. Different: refuse."""
    request_id = command.request_id
    accepted = turn.accepted_requests.get(request_id) if request_id else None
    if accepted is None or request_id is None:
        return False
    if not _same_request(accepted.fingerprint, command.fingerprint()):
        raise IdempotencyConflictError(turn.id, request_id)
    answerer = command.answerer
    if accepted.by is not None and (answerer is None or answerer.subject != accepted.by):
        # Another person's key on a card several people answer: never their answer replayed as this one's.
        raise IdempotencyConflictError(turn.id, request_id)
    return True


def remember_request(turn: Turn, command: ResumeCommand, now_iso: str, *, by: str | None = None) -> None:
    """Record ``command`` as accepted by the write that will make ``turn`` its next version.

    Only the most recent requests are kept (a retry comes within minutes), so the snapshot stays bounded.
    """
    request_id = command.request_id
    if request_id is None:
        return
    turn.accepted_requests[request_id] = AcceptedRequest(
        fingerprint=command.fingerprint()[:KEPT_DIGITS],
        action_id=command.action_id,
        version=turn.version + 1,
        accepted_at=now_iso,
        by=by,
    )
    while len(turn.accepted_requests) > MAX_ACCEPTED_REQUESTS:
        turn.accepted_requests.pop(next(iter(turn.accepted_requests)))
