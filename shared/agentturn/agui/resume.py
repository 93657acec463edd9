"""``resume[]`` → the person's decisions, checked against the live cards before anything is stored.

AG-UI's contract rules, as this server applies them:

- every open interrupt is answered, and only open ones (rules 3 and 2): otherwise ``RUN_ERROR``;
- each payload passes the interrupt's ``responseSchema`` *and* the card's own rules: the resume commands are
  tried (pure, :func:`agentturn.engine.resume.apply_resume`) against the stored turn — the same validator the
  HTTP action routes use — before any is applied; one refusal refuses them all, nothing stored;
- ``status: "cancelled"`` declines a form and rejects an approval;
- each decision carries the request id ``ag-ui:<interruptId>``: the same answer sent again (any ``runId``) is
  a replay, applied once; another answer to the same interrupt is a conflict (rule 5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from pydantic import JsonValue

from agentturn.agui.events import RunErrorCode
from agentturn.agui.input import ResumeEntry, ResumeStatus
from agentturn.agui.interrupts import APPROVED, EDITED_ARGS, REASON, RESPOND, TEXT, open_interrupts
from agentturn.engine.idempotency import is_replay
from agentturn.engine.resume import apply_resume
from agentturn.errors import FormValidationError, IdempotencyConflictError, InvalidResumeError, RefusalReason
from agentturn.state.approvers import Principal
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import ApprovalMessage, FormMessage, TimelineMessage
from agentturn.state.turn import Suspension, SuspensionType, Turn

REQUEST_PREFIX: Final = "ag-ui:"
CHANNEL: Final = "ag-ui"
CANCELLED_REASON: Final = "cancelled in the AG-UI client"
_APPROVAL_KEYS: Final = frozenset({APPROVED, EDITED_ARGS, RESPOND, REASON})


class ResumeRefused(Exception):
    """A run's input that cannot be applied: becomes ``RUN_ERROR`` with ``code``; nothing was stored."""

    def __init__(self, code: RunErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def request_id(interrupt_id: str) -> str:
    return REQUEST_PREFIX + interrupt_id


def _payload_error(interrupt_id: str, message: str) -> ResumeRefused:
    return ResumeRefused(RunErrorCode.RESUME_INVALID_PAYLOAD, f"interrupt {interrupt_id!r}: {message}")


def _approval(interrupt_id: str, action_id: str, entry: ResumeEntry) -> ResumeCommand:
    if entry.status is ResumeStatus.CANCELLED:
        return ResumeCommand.reject_tool(action_id, CANCELLED_REASON)
    payload = entry.payload
    if not isinstance(payload, dict):
        raise _payload_error(interrupt_id, "the payload must be an object with 'approved'")
    extra = sorted(set(payload) - _APPROVAL_KEYS)
    if extra:
        raise _payload_error(interrupt_id, f"unknown properties {extra!r}")
    approved = payload.get(APPROVED)
    if not isinstance(approved, bool):
        raise _payload_error(interrupt_id, "'approved' must be true or false")
    edited, respond, reason = payload.get(EDITED_ARGS), payload.get(RESPOND), payload.get(REASON)
    if reason is not None and not isinstance(reason, str):
        raise _payload_error(interrupt_id, "'reason' must be a string")
    if approved:
        if respond is not None or reason is not None:
            raise _payload_error(interrupt_id, "'respond' and 'reason' go with approved: false")
        if edited is not None and not isinstance(edited, dict):
            raise _payload_error(interrupt_id, "'editedArgs' must be an object (the tool's full arguments)")
        return ResumeCommand.approve_tool(action_id, edited)
    if edited is not None:
        raise _payload_error(interrupt_id, "'editedArgs' goes with approved: true")
    if respond is not None:
        return ResumeCommand.respond(action_id, respond)
    return ResumeCommand.reject_tool(action_id, reason)


def _form(interrupt_id: str, action_id: str, entry: ResumeEntry) -> ResumeCommand:
    if entry.status is ResumeStatus.CANCELLED:
        return ResumeCommand.decline_input(action_id, CANCELLED_REASON)
    if not isinstance(entry.payload, dict):
        raise _payload_error(interrupt_id, "the payload must be the form's data (an object)")
    return ResumeCommand.submit_form(action_id, dict(entry.payload))


def _text(interrupt_id: str, entry: ResumeEntry) -> ResumeCommand:
    payload: JsonValue = entry.payload
    text = payload.get(TEXT) if isinstance(payload, dict) else None
    if entry.status is ResumeStatus.CANCELLED or not isinstance(text, str) or not text.strip():
        raise _payload_error(interrupt_id, "a text wait is answered with {'text': '...'}")
    return ResumeCommand.user_input(text)


def command_for(interrupt_id: str, suspension: Suspension, entry: ResumeEntry, run_id: str) -> ResumeCommand:
    if suspension.type is SuspensionType.TOOL_APPROVAL:
        command = _approval(interrupt_id, suspension.correlation_id, entry)
    elif suspension.is_form:
        command = _form(interrupt_id, suspension.correlation_id, entry)
    else:
        command = _text(interrupt_id, entry)
    return (
        command.with_metadata("requestId", request_id(interrupt_id))
        .with_metadata("channel", CHANNEL)
        .with_metadata("agUiRunId", run_id)
    )


def _refusal(interrupt_id: str, error: InvalidResumeError) -> ResumeRefused:
    if error.reason == RefusalReason.INPUT_EXPIRED:
        return ResumeRefused(RunErrorCode.RESUME_EXPIRED, f"interrupt {interrupt_id!r} expired")
    if error.reason in (RefusalReason.ARGUMENTS_CHANGED, RefusalReason.WRONG_COMMAND, RefusalReason.INVALID_RESUME):
        return _payload_error(interrupt_id, str(error))
    return ResumeRefused(RunErrorCode.RESUME_UNKNOWN_INTERRUPT, f"interrupt {interrupt_id!r} is not open: {error}")


def _form_errors(interrupt_id: str, error: FormValidationError) -> ResumeRefused:
    listed = "; ".join(f"{e.get('path') or '/'}: {e.get('message')}" for e in error.errors[:10])
    return _payload_error(interrupt_id, f"does not match its responseSchema ({listed})")


def decide(
    turn: Turn | None,
    entries: Sequence[ResumeEntry],
    run_id: str,
    now: float,
    principal: Principal | None = None,
) -> list[ResumeCommand]:
    """The checked commands that answer every open interrupt of ``turn``, in the order of its cards;
    :class:`ResumeRefused` if any cannot be applied (then none is). Each is given by ``principal`` (the verified
    caller and their groups), so a card with approvers refuses a caller it does not name, as the HTTP routes do."""
    open_ = open_interrupts(turn)
    answered = {entry.interrupt_id: entry for entry in entries}
    unknown = [i for i in answered if i not in open_]
    if unknown:
        raise ResumeRefused(
            RunErrorCode.RESUME_UNKNOWN_INTERRUPT,
            f"no open interrupt {unknown[0]!r} on this thread" + (f"; open: {list(open_)!r}" if open_ else ""),
        )
    missing = [i for i in open_ if i not in answered]
    if missing:
        raise ResumeRefused(
            RunErrorCode.RESUME_INCOMPLETE, f"resume must answer every open interrupt; missing {missing!r}"
        )
    assert turn is not None  # open interrupts come from a turn
    commands: list[ResumeCommand] = []
    for interrupt_id, suspension in open_.items():
        if suspension.is_expired(now):
            raise ResumeRefused(RunErrorCode.RESUME_EXPIRED, f"interrupt {interrupt_id!r} expired")
        command = command_for(interrupt_id, suspension, answered[interrupt_id], run_id)
        if principal is not None:
            command = command.by(principal)
        try:
            # Tried on the stored turn, each on its own (they answer different cards): pure, nothing written.
            apply_resume(turn, command, now)
        except FormValidationError as error:
            raise _form_errors(interrupt_id, error) from None
        except InvalidResumeError as error:
            raise _refusal(interrupt_id, error) from None
        commands.append(command)
    return commands


def replayed(
    turns: Mapping[str, Turn],
    entries: Sequence[ResumeEntry],
    suspensions: Mapping[str, Suspension],
    run_id: str,
    principal: Principal | None = None,
) -> bool:
    """Whether every entry is an answer the turn named for it already accepted (a resume sent again).

    ``turns`` and ``suspensions`` hold, by interrupt id, the turn each answered card belongs to and the
    wait it was (rebuilt from the card). An entry answered before with another answer is a conflict.
    """
    for entry in entries:
        turn, suspension = turns.get(entry.interrupt_id), suspensions.get(entry.interrupt_id)
        if turn is None or suspension is None:
            return False
        try:
            command = command_for(entry.interrupt_id, suspension, entry, run_id)
        except ResumeRefused:
            return False
        if principal is not None:
            command = command.by(principal)
        try:
            if not is_replay(turn, command):
                return False
        except IdempotencyConflictError:
            raise ResumeRefused(
                RunErrorCode.RESUME_CONFLICT,
                f"interrupt {entry.interrupt_id!r} was answered before with another answer",
            ) from None
    return bool(entries)


def card_suspension(card: TimelineMessage | None) -> Suspension | None:
    """The wait a settled card answered, rebuilt enough to rebuild its command (type and action id)."""
    if isinstance(card, ApprovalMessage):
        return Suspension(type=SuspensionType.TOOL_APPROVAL, correlation_id=card.action_id)
    if isinstance(card, FormMessage):
        return Suspension(
            type=SuspensionType.USER_INPUT,
            correlation_id=card.action_id,
            metadata={"formKey": card.form_key, "schema": card.schema},
        )
    return None
