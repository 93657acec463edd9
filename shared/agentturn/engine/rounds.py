"""Input rounds in a turn (:mod:`agentturn.forms.rounds`): parking a call on one card per question, and applying
an answer to one of them. Pure, like :mod:`agentturn.engine.suspend` and :mod:`agentturn.engine.resume`.

A round's waits are ordinary form waits (``inputTarget`` TOOL) whose action id is the call id, the round and the
question's position (``call-1~r2~0``: a call may ask several questions per round and several rounds, and every
card keeps its own id); ``metadata["round"]`` names the call and the question's key. An answer never gives the
call its result: it is recorded in the call's ``round_answers``, and the call runs again (a replay of the tool)
once no card of its round waits.
"""

from __future__ import annotations

import copy
from typing import Any

from agentturn.agents.agent import ExecutionPolicy
from agentturn.engine.redaction import REDACT_VALUES
from agentturn.errors import FormValidationError
from agentturn.forms.checking import problems_in
from agentturn.forms.rounds import InputRoundRequired, RoundAction
from agentturn.state.commands import ResumeCommand, ResumeKind
from agentturn.state.messages import CardMessage, FormStatus, ToolCall
from agentturn.state.turn import Suspension, SuspensionType, Turn, TurnPhase


def round_action_id(call_id: str, round_number: int, position: int) -> str:
    return f"{round_prefix(call_id)}{round_number}~{position}"


def round_prefix(call_id: str) -> str:
    """What every round card's action id of ``call_id`` starts with."""
    return f"{call_id}~r"


def waited_call_id(suspension: Suspension) -> str:
    """The call a wait belongs to: a round's waits name it, every other wait is keyed by it."""
    round_info = suspension.metadata.get("round")
    if isinstance(round_info, dict) and isinstance(round_info.get("callId"), str):
        return str(round_info["callId"])
    return suspension.correlation_id


def is_round_wait(suspension: Suspension) -> bool:
    return isinstance(suspension.metadata.get("round"), dict)


def park_for_round(
    turn: Turn, call: ToolCall, signal: InputRoundRequired, policy: ExecutionPolicy, now: float
) -> list[Suspension]:
    """Record the round's state with the call and add one form wait per question (cards come with
    :func:`agentturn.engine.suspend.block`)."""
    from agentturn.engine.suspend import wait_terms  # suspend imports this module

    state = turn.tool_state(call.id)
    state.rounds += 1
    state.round_state = copy.deepcopy(signal.state)
    state.round_answers = None
    _, terms = wait_terms(turn, policy, now)
    if signal.expires_in is not None:
        own = now + signal.expires_in
        terms["expires_at"] = own if terms["expires_at"] is None else min(terms["expires_at"], own)
    parked: list[Suspension] = []
    for position, request in enumerate(signal.requests):
        suspension = Suspension(
            type=SuspensionType.USER_INPUT,
            correlation_id=round_action_id(call.id, state.rounds, position),
            message=request.form.description,
            resume_phase=TurnPhase.TOOLS,
            metadata={
                "formKey": request.form.form_key,
                "schema": request.form.schema,
                "toolName": call.name,
                "inputTarget": "TOOL",
                REDACT_VALUES: policy.redact_submitted_values,
                "round": {"callId": call.id, "key": request.key, "number": state.rounds},
                "origin": dict(request.origin),
            },
            **terms,
        )
        turn.suspensions.append(suspension)
        parked.append(suspension)
    return parked


def _record(turn: Turn, suspension: Suspension, action: RoundAction, content: dict[str, Any] | None) -> None:
    info = suspension.metadata["round"]
    state = turn.tool_state(str(info["callId"]))
    answers = dict(state.round_answers or {})
    answers[str(info["key"])] = (
        {"action": action.value} if content is None else {"action": action.value, "content": content}
    )
    state.round_answers = answers
    turn.phase = TurnPhase.TOOLS


def _settle_card(turn: Turn, suspension: Suspension, update: dict[str, Any]) -> None:
    def settled(card: CardMessage) -> CardMessage:
        if card.action_id != suspension.correlation_id or card.status != "PENDING":
            return card
        return card.model_copy(update={**update, "actions": [], "version": card.version + 1})

    turn.cards = [settled(card) for card in turn.cards]


def submitted_form_data(suspension: Suspension, command: ResumeCommand) -> dict[str, Any]:
    """The data a form submit carries, checked against the schema frozen with the wait; a submission that does
    not fit is refused whole (:class:`FormValidationError`) and changes nothing."""
    data = command.data or {}
    errors = problems_in(suspension.metadata["schema"], data)
    if errors:
        raise FormValidationError(errors)
    return data


def answer_round(turn: Turn, suspension: Suspension, command: ResumeCommand, now_iso: str) -> None:
    """A submit (accept, checked against the frozen schema) or a decline of one card of a round."""
    by = command.metadata.get("submittedBy")
    if command.kind is ResumeKind.DECLINE_INPUT:
        update = {"status": FormStatus.DECLINED, "decline_reason": command.reason, "submitted_by": by}
        _settle_card(turn, suspension, {**update, "submitted_at": now_iso})
        _record(turn, suspension, RoundAction.DECLINE, None)
        return
    data = submitted_form_data(suspension, command)
    update = {"status": FormStatus.SUBMITTED, "submitted_values": data, "submitted_by": by, "submitted_at": now_iso}
    _settle_card(turn, suspension, update)
    _record(turn, suspension, RoundAction.ACCEPT, data)


def expire_round(turn: Turn, suspension: Suspension) -> None:
    """Nobody answered in time: the card expires and the question is answered ``cancel`` (dismissed)."""
    _settle_card(turn, suspension, {"status": FormStatus.EXPIRED})
    _record(turn, suspension, RoundAction.CANCEL, None)
