"""Applying a person's answer to a suspended turn: pure, so a refused command changes nothing."""

from __future__ import annotations

from typing import Any

from agentturn._clock import iso
from agentturn.commands import ResumeCommand, ResumeKind
from agentturn.errors import FormValidationError, InvalidResumeError, RefusalReason
from agentturn.forms import REQUEST_USER_INPUT
from agentturn.messages import (
    ApprovalStatus,
    CardMessage,
    FormMessage,
    FormStatus,
    ToolMessage,
    UserMessage,
)
from agentturn.projection import stamp
from agentturn.state import Suspension, SuspensionType, Turn, TurnPhase, TurnStatus
from agentturn.tool_results import (
    Unanswered,
    rejected,
    submitted,
    unanswered_approval,
    unanswered_form,
    unanswered_tool_form,
)
from agentturn.validation import validate_form_data


def _refuse_stale(turn: Turn, suspension: Suspension, action_id: str | None) -> None:
    if action_id == suspension.correlation_id:
        return
    known = any(card.action_id == action_id for card in turn.cards)
    if known:
        raise InvalidResumeError(
            f"action {action_id!r} of turn {turn.id!r} is no longer pending", reason=RefusalReason.ACTION_NOT_PENDING
        )
    raise InvalidResumeError(f"turn {turn.id!r} has no action {action_id!r}", reason=RefusalReason.UNKNOWN_ACTION)


def _replace_card(turn: Turn, card: CardMessage) -> None:
    turn.cards = [card if c.message_id == card.message_id else c for c in turn.cards]


def _decided_card(turn: Turn, suspension: Suspension, update: dict[str, Any]) -> None:
    card = next((c for c in turn.cards if c.action_id == suspension.correlation_id and c.status == "PENDING"), None)
    if card is not None:
        _replace_card(turn, card.model_copy(update={**update, "actions": [], "version": card.version + 1}))


def _after_call(turn: Turn) -> TurnPhase:
    return TurnPhase.TOOLS if turn.pending_tool_calls else TurnPhase.MODEL


def _pop_call(turn: Turn, call_id: str) -> str:
    call = next(c for c in turn.pending_tool_calls if c.id == call_id)
    turn.pending_tool_calls = [c for c in turn.pending_tool_calls if c.id != call_id]
    return call.name


def _unanswered_result(turn: Turn, suspension: Suspension, status: Unanswered, reason: str | None) -> tuple[str, Any]:
    """The ToolMessage for a wait nobody answered (declined or expired): (tool name, content)."""
    form_key = suspension.metadata.get("formKey")
    tool_name = _pop_call(turn, suspension.correlation_id)
    if suspension.type is SuspensionType.TOOL_APPROVAL:
        return tool_name, unanswered_approval(tool_name, status)
    if suspension.input_target == "MODEL":
        return tool_name, unanswered_form(form_key, status, reason)
    return tool_name, unanswered_tool_form(form_key, status, reason, tool_name)


def _close_unanswered(
    turn: Turn, suspension: Suspension, status: Unanswered, reason: str | None, update: dict[str, Any]
) -> None:
    _decided_card(turn, suspension, update)
    tool_name, content = _unanswered_result(turn, suspension, status, reason)
    turn.messages.append(
        stamp(turn, ToolMessage(tool_call_id=suspension.correlation_id, content=content, tool_name=tool_name))
    )
    turn.phase = _after_call(turn)


def _apply_decline(turn: Turn, suspension: Suspension, command: ResumeCommand, now_iso: str) -> None:
    update = {
        "status": FormStatus.DECLINED,
        "decline_reason": command.reason,
        "submitted_by": command.metadata.get("submittedBy"),
        "submitted_at": now_iso,
    }
    _close_unanswered(turn, suspension, "declined", command.reason, update)


def _apply_form(turn: Turn, suspension: Suspension, command: ResumeCommand, now_iso: str) -> None:
    if command.kind not in (ResumeKind.FORM_INPUT, ResumeKind.DECLINE_INPUT):
        raise InvalidResumeError(
            f"turn {turn.id!r} waits for form {suspension.metadata['formKey']!r}: "
            "resume it with ResumeCommand.submit_form(action_id, data) or decline_input(action_id)",
            reason=RefusalReason.WRONG_COMMAND,
        )
    _refuse_stale(turn, suspension, command.action_id)
    if command.kind is ResumeKind.DECLINE_INPUT:
        _apply_decline(turn, suspension, command, now_iso)
        return
    data = command.data or {}
    errors = validate_form_data(suspension.metadata["schema"], data)
    if errors:
        raise FormValidationError(errors)
    _decided_card(
        turn,
        suspension,
        {
            "status": FormStatus.SUBMITTED,
            "submitted_values": data,
            "submitted_by": command.metadata.get("submittedBy"),
            "submitted_at": now_iso,
        },
    )
    call_id = suspension.correlation_id
    if suspension.input_target == "TOOL":
        turn.tool_state(call_id).submitted_form_data = data
        turn.phase = TurnPhase.TOOLS
        return
    _pop_call(turn, call_id)
    content = submitted(suspension.metadata["formKey"], data)
    turn.messages.append(stamp(turn, ToolMessage(tool_call_id=call_id, content=content, tool_name=REQUEST_USER_INPUT)))
    turn.phase = _after_call(turn)


def _apply_text(turn: Turn, command: ResumeCommand) -> None:
    if command.kind is not ResumeKind.TEXT_INPUT or command.content is None:
        raise InvalidResumeError(
            f"turn {turn.id!r} waits for text: resume it with ResumeCommand.user_input(content)",
            reason=RefusalReason.WRONG_COMMAND,
        )
    turn.messages.append(stamp(turn, UserMessage(content=command.content)))
    turn.phase = TurnPhase.MODEL


def _apply_approval(turn: Turn, suspension: Suspension, command: ResumeCommand, now_iso: str) -> None:
    if command.kind not in (ResumeKind.APPROVE_TOOL, ResumeKind.REJECT_TOOL):
        raise InvalidResumeError(
            f"turn {turn.id!r} waits for a tool approval: use approve_tool or reject_tool",
            reason=RefusalReason.WRONG_COMMAND,
        )
    _refuse_stale(turn, suspension, command.action_id)
    call_id = suspension.correlation_id
    decided_by = command.metadata.get("submittedBy")
    if command.kind is ResumeKind.APPROVE_TOOL:
        _decided_card(
            turn,
            suspension,
            {"status": ApprovalStatus.APPROVED, "decided_by": decided_by, "decided_at": now_iso},
        )
        turn.tool_state(call_id).approved = True
        turn.phase = TurnPhase.TOOLS
        return
    reason = command.reason or "rejected by the user"
    _decided_card(
        turn,
        suspension,
        {
            "status": ApprovalStatus.REJECTED,
            "decided_by": decided_by,
            "decided_at": now_iso,
            "reason": reason,
        },
    )
    tool_name = _pop_call(turn, call_id)
    content = rejected(tool_name, reason)
    turn.messages.append(stamp(turn, ToolMessage(tool_call_id=call_id, content=content, tool_name=tool_name)))
    turn.phase = _after_call(turn)


def apply_resume(turn: Turn, command: ResumeCommand, now: float) -> Turn:
    """A copy of ``turn`` with ``command`` applied, RUNNING; raises without touching ``turn`` if refused."""
    if turn.status.is_terminal:
        raise InvalidResumeError(f"turn {turn.id!r} is {turn.status.value}", reason=RefusalReason.TURN_TERMINAL)
    suspension = turn.suspension
    if not turn.status.is_blocked or suspension is None:
        raise InvalidResumeError(
            f"turn {turn.id!r} is {turn.status.value}, not waiting for a person", reason=RefusalReason.NOT_WAITING
        )
    if turn.cancel_requested:
        # Its cancel has not finished yet (the sweeper or a retried cancel finishes it): as good as ended.
        raise InvalidResumeError(f"turn {turn.id!r} is being cancelled", reason=RefusalReason.TURN_TERMINAL)
    if suspension.is_expired(now):
        raise InvalidResumeError(
            f"the wait of turn {turn.id!r} for action {suspension.correlation_id!r} expired",
            reason=RefusalReason.INPUT_EXPIRED,
        )
    now_iso = iso(now)
    resumed = turn.model_copy(deep=True)
    if suspension.type is SuspensionType.TOOL_APPROVAL:
        _apply_approval(resumed, suspension, command, now_iso)
    elif suspension.is_form:
        _apply_form(resumed, suspension, command, now_iso)
    else:
        _apply_text(resumed, command)
    resumed.suspension = None
    resumed.status = TurnStatus.RUNNING
    return resumed


def expire_wait(turn: Turn, now: float) -> Turn:
    """A copy of a blocked turn whose wait expired: the pending call gets an "expired" result, RUNNING.

    A plain-text wait has no call to answer, so it cannot continue: the caller ends such a turn.
    """
    suspension = turn.suspension
    if not turn.status.is_blocked or suspension is None or not suspension.is_expired(now):
        raise InvalidResumeError(f"turn {turn.id!r} has no expired wait", reason=RefusalReason.NOT_EXPIRED)
    expired = turn.model_copy(deep=True)
    if suspension.is_form:
        _close_unanswered(expired, suspension, "expired", None, {"status": FormStatus.EXPIRED})
    elif suspension.type is SuspensionType.TOOL_APPROVAL:
        _close_unanswered(
            expired, suspension, "expired", None, {"status": ApprovalStatus.EXPIRED, "decided_at": iso(now)}
        )
    expired.suspension = None
    expired.status = TurnStatus.RUNNING
    return expired


def cancel_cards(turn: Turn) -> None:
    """Invariant 7: on any terminal stop every pending card becomes CANCELLED and read-only."""
    for card in turn.pending_cards():
        status = FormStatus.CANCELLED if isinstance(card, FormMessage) else ApprovalStatus.CANCELLED
        _replace_card(turn, card.model_copy(update={"status": status, "actions": [], "version": card.version + 1}))
