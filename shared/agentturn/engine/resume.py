"""Applying a person's answer to a suspended turn: pure, so a refused command changes nothing."""

from __future__ import annotations

from typing import Any

from agentturn.engine import people
from agentturn.engine.clock import iso
from agentturn.engine.redaction import REDACT_VALUES
from agentturn.engine.rounds import answer_round, expire_round, is_round_wait, submitted_form_data
from agentturn.engine.suspend import next_runnable_call
from agentturn.engine.tool_results import (
    Unanswered,
    answered_by_person,
    rejected,
    submitted,
    unanswered_approval,
    unanswered_form,
    unanswered_tool_form,
    written_by_person,
)
from agentturn.errors import (
    AwaitedAnswer,
    InvalidResumeError,
    RefusalReason,
    ToolArgumentsInvalidError,
)
from agentturn.forms.checking import problems_in
from agentturn.forms.definitions import REQUEST_USER_INPUT
from agentturn.state.commands import ResumeCommand, ResumeKind
from agentturn.state.messages import (
    ApprovalStatus,
    CardMessage,
    FormMessage,
    FormStatus,
    ToolMessage,
    UserMessage,
)
from agentturn.state.turn import Suspension, SuspensionType, Turn, TurnPhase, TurnStatus
from agentturn.timeline.identity import stamp


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
            awaited=AwaitedAnswer.FORM,
            turn_id=turn.id,
            action_id=suspension.action_id,
        )
    _refuse_stale(turn, suspension, command.action_id)
    if is_round_wait(suspension):
        # One question of a tool's input round: the answer goes to the tool's replay, not to the model.
        answer_round(turn, suspension, command, now_iso)
        return
    if command.kind is ResumeKind.DECLINE_INPUT:
        _apply_decline(turn, suspension, command, now_iso)
        return
    data = submitted_form_data(suspension, command)
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
    if suspension.input_target == "TOOL" or suspension.metadata.get(REDACT_VALUES):
        # A tool's form waits for the tool's replay. So does a redacting agent's model-requested form: its
        # answer becomes the tool result when the turn runs on (the tool step), so that a turn that ends first
        # leaves no copy of it (agentturn.engine.redaction).
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
            awaited=AwaitedAnswer.TEXT,
            turn_id=turn.id,
        )
    turn.messages.append(stamp(turn, UserMessage(content=command.content)))
    turn.phase = TurnPhase.MODEL


def _apply_approval(turn: Turn, suspension: Suspension, command: ResumeCommand, now_iso: str) -> None:
    if command.kind not in (ResumeKind.APPROVE_TOOL, ResumeKind.REJECT_TOOL, ResumeKind.RESPOND_TOOL):
        raise InvalidResumeError(
            f"turn {turn.id!r} waits for a tool approval: use approve_tool, reject_tool or respond",
            reason=RefusalReason.WRONG_COMMAND,
            awaited=AwaitedAnswer.TOOL_APPROVAL,
            turn_id=turn.id,
            action_id=suspension.action_id,
        )
    _refuse_stale(turn, suspension, command.action_id)
    call_id = suspension.correlation_id
    decided_by = command.metadata.get("submittedBy")
    if command.arguments_fingerprint is not None and command.arguments_fingerprint != suspension.arguments_fingerprint:
        raise InvalidResumeError(
            f"action {call_id!r} of turn {turn.id!r} shows other arguments than the ones this answer was given "
            f"for (fingerprint {command.arguments_fingerprint!r}, the card's is {suspension.arguments_fingerprint!r})",
            reason=RefusalReason.ARGUMENTS_CHANGED,
        )
    if command.kind is ResumeKind.APPROVE_TOOL:
        edited = _edited_arguments(suspension, command.arguments)
        update: dict[str, Any] = {"status": ApprovalStatus.APPROVED, "decided_by": decided_by, "decided_at": now_iso}
        if edited is not None:
            update["edited_arguments"] = edited
        _decided_card(turn, suspension, update)
        state = turn.tool_state(call_id)
        state.approved = True
        state.edited_arguments = edited
        turn.phase = TurnPhase.TOOLS
        return
    if command.kind is ResumeKind.RESPOND_TOOL:
        _decided_card(
            turn,
            suspension,
            {
                "status": ApprovalStatus.RESPONDED,
                "decided_by": decided_by,
                "decided_at": now_iso,
                "response": command.response,
            },
        )
        tool_name = _pop_call(turn, call_id)
        # Marked in the content the model reads, not only in metadata no model adapter sends.
        content = answered_by_person(tool_name, command.response)
        message = ToolMessage(tool_call_id=call_id, content=content, tool_name=tool_name, metadata=written_by_person())
        turn.messages.append(stamp(turn, message))
        turn.phase = _after_call(turn)
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


def _edited_arguments(suspension: Suspension, arguments: dict[str, Any] | None) -> dict[str, Any] | None:
    """The person's arguments, checked like a form against the tool's parameter schema frozen with the wait;
    None when there is no edit (none given, or the very arguments the model proposed)."""
    if arguments is None or arguments == suspension.arguments:
        return None
    schema = suspension.parameters_schema
    if schema is None:
        # Frozen before edits existed: nobody can say what the tool accepts, so only the shown arguments can run.
        raise ToolArgumentsInvalidError(
            suspension.tool_name,
            [{"path": "", "message": "this approval was asked before edits were possible: approve it as shown"}],
        )
    errors = problems_in(schema, arguments)
    if errors:
        raise ToolArgumentsInvalidError(suspension.tool_name, errors)
    return dict(arguments)


def _target(turn: Turn, command: ResumeCommand) -> Suspension:
    """The pending decision ``command`` answers: the one its action id names; else the first (whose rules then
    refuse the command with the most telling reason: a wrong kind of answer, or a stale or unknown id)."""
    named = turn.suspension_for(command.action_id) if command.action_id is not None else None
    if named is not None:
        return named
    first = turn.suspension
    assert first is not None
    return first


def _close(turn: Turn, suspension: Suspension) -> None:
    """``suspension`` was answered: it leaves the pending decisions, and the turn runs again when nothing else
    waits, or — frozen policy ``resume_after="each"`` — when the answer left a call to run now."""
    turn.suspensions = [s for s in turn.suspensions if s.correlation_id != suspension.correlation_id]
    if not turn.suspensions:
        turn.status = TurnStatus.RUNNING
        return
    if suspension.resume_after == "each" and next_runnable_call(turn) is not None:
        turn.status = TurnStatus.RUNNING
        return
    turn.status = turn.suspensions[0].waiting_status
    turn.phase = TurnPhase.TOOLS


def apply_resume(turn: Turn, command: ResumeCommand, now: float) -> Turn:
    """A copy of ``turn`` with ``command`` applied; raises without touching ``turn`` if refused.

    The copy is RUNNING once no decision waits any more (or by policy after each answer); while others still
    wait it stays blocked, holding this answer.
    """
    if turn.status.is_terminal:
        raise InvalidResumeError(f"turn {turn.id!r} is {turn.status.value}", reason=RefusalReason.TURN_TERMINAL)
    if not turn.status.is_blocked or not turn.suspensions:
        raise InvalidResumeError(
            f"turn {turn.id!r} is {turn.status.value}, not waiting for a person", reason=RefusalReason.NOT_WAITING
        )
    if turn.cancel_requested:
        # Its cancel has not finished yet (the sweeper or a retried cancel finishes it): as good as ended.
        raise InvalidResumeError(f"turn {turn.id!r} is being cancelled", reason=RefusalReason.TURN_TERMINAL)
    suspension = _target(turn, command)
    if suspension.is_expired(now):
        raise InvalidResumeError(
            f"the wait of turn {turn.id!r} for action {suspension.correlation_id!r} expired",
            reason=RefusalReason.INPUT_EXPIRED,
        )
    now_iso = iso(now)
    # Approvers (agentturn.engine.people): who may answer, and a decision that waits for others' is only recorded.
    if suspension.people is not None:
        _refuse_stale(turn, suspension, command.action_id)
    decision = people.admit(turn, suspension, command, now, now_iso)
    resumed = turn.deep_copy()
    if decision is not None:
        assert suspension.people is not None
        settles = people.decides(suspension.people, decision)
        people.record(resumed, suspension, decision, bump=not settles)
        if not settles:
            return resumed
    if suspension.type is SuspensionType.TOOL_APPROVAL:
        _apply_approval(resumed, suspension, command, now_iso)
    elif suspension.is_form:
        _apply_form(resumed, suspension, command, now_iso)
    else:
        _apply_text(resumed, command)
    _close(resumed, suspension)
    return resumed


def expire_wait(turn: Turn, now: float) -> Turn:
    """A copy of a blocked turn whose waits (one or several) expired: each expired call gets an "expired"
    result; the turn is RUNNING unless other decisions still wait.

    A plain-text wait has no call to answer, so it cannot continue: the caller ends such a turn.
    """
    expired_waits = [s for s in turn.suspensions if s.is_expired(now)]
    if not turn.status.is_blocked or not expired_waits:
        raise InvalidResumeError(f"turn {turn.id!r} has no expired wait", reason=RefusalReason.NOT_EXPIRED)
    expired = turn.deep_copy()
    for suspension in expired_waits:
        if is_round_wait(suspension):
            expire_round(expired, suspension)
        elif suspension.is_form:
            _close_unanswered(expired, suspension, "expired", None, {"status": FormStatus.EXPIRED})
        elif suspension.type is SuspensionType.TOOL_APPROVAL:
            _close_unanswered(
                expired, suspension, "expired", None, {"status": ApprovalStatus.EXPIRED, "decided_at": iso(now)}
            )
        _close(expired, suspension)
    return expired


def cancel_cards(turn: Turn) -> None:
    """Invariant 7: on any terminal stop every pending card becomes CANCELLED and read-only."""
    for card in turn.pending_cards():
        status = FormStatus.CANCELLED if isinstance(card, FormMessage) else ApprovalStatus.CANCELLED
        _replace_card(turn, card.model_copy(update={"status": status, "actions": [], "version": card.version + 1}))
