"""Stopping a turn to wait for a person: the mirror of :mod:`agentturn.resume`, and pure like it.

Each function changes only the turn it is given (status, suspension, the pending card); saving it and
telling anyone is the caller's business, so the same rules serve a run and a test without a store.
"""

from __future__ import annotations

from typing import Any, Literal

from agentturn._clock import iso
from agentturn.agent import ExecutionPolicy, ToolApprovalDecision
from agentturn.errors import InvalidResumeError, RefusalReason
from agentturn.forms import FormDefinition
from agentturn.messages import ApprovalMessage, FormMessage, ToolCall, approval_message_id, form_message_id
from agentturn.projection import card_sort_key
from agentturn.state import Suspension, SuspensionType, Turn, TurnPhase, TurnStatus

#: Who asked for the form: the model (through the control tool) or a business tool (``FormRequired``).
InputTarget = Literal["MODEL", "TOOL"]


def wait_terms(turn: Turn, policy: ExecutionPolicy, now: float) -> tuple[str | None, dict[str, Any]]:
    """(deadline as ISO, terms frozen in the suspension) of a new wait, from the turn or the agent's policy.

    Frozen, because the agent's policy may change in a later deployment while the person is still answering.
    """
    timeout = turn.input_timeout if turn.input_timeout is not None else policy.input_timeout
    deadline = now + timeout if timeout is not None else None
    terms: dict[str, Any] = {"on_expiry": policy.on_input_timeout, "expires_at": deadline}
    return (iso(deadline) if deadline is not None else None), terms


def suspend_for_form(
    turn: Turn, call: ToolCall, form: FormDefinition, target: InputTarget, policy: ExecutionPolicy, now: float
) -> None:
    """Make ``turn`` wait for ``form`` on behalf of ``call``, with its pending card."""
    deadline_iso, terms = wait_terms(turn, policy, now)
    turn.status = TurnStatus.WAITING_FOR_USER
    turn.phase = TurnPhase.TOOLS
    turn.suspension = Suspension(
        type=SuspensionType.USER_INPUT,
        correlation_id=call.id,
        message=form.description,
        resume_phase=TurnPhase.MODEL if target == "MODEL" else TurnPhase.TOOLS,
        metadata={
            "formKey": form.form_key,
            "schema": form.schema,
            "toolName": call.name,
            "inputTarget": target,
            "redactValues": policy.redact_submitted_values,
        },
        **terms,
    )
    turn.cards.append(
        FormMessage(
            message_id=form_message_id(turn.id, call.id),
            turn_id=turn.id,
            sort_key=card_sort_key(turn, call.id),
            action_id=call.id,
            form_key=form.form_key,
            description=form.description,
            schema=form.schema,
            input_target=target,
            tool_name=call.name,
            expires_at=deadline_iso,
        )
    )


def suspend_for_approval(
    turn: Turn, call: ToolCall, decision: ToolApprovalDecision, policy: ExecutionPolicy, now: float
) -> None:
    """Make ``turn`` wait for a person to approve or reject ``call``, with its pending card."""
    _, terms = wait_terms(turn, policy, now)
    turn.status = TurnStatus.WAITING_FOR_APPROVAL
    turn.phase = TurnPhase.TOOLS
    turn.suspension = Suspension(
        type=SuspensionType.TOOL_APPROVAL,
        correlation_id=call.id,
        message=decision.message,
        resume_phase=TurnPhase.TOOLS,
        metadata={"toolName": call.name, "arguments": dict(call.arguments)},
        **terms,
    )
    turn.cards.append(
        ApprovalMessage(
            message_id=approval_message_id(turn.id, call.id),
            turn_id=turn.id,
            sort_key=card_sort_key(turn, call.id),
            action_id=call.id,
            tool_name=call.name,
            arguments=dict(call.arguments),
            message=decision.message,
        )
    )


def suspend_for_text(turn: Turn, suspension: Suspension) -> None:
    """Put a plain-text wait on a turn that is neither ended nor already waiting; refuse anything else."""
    if turn.status.is_terminal or turn.status.is_blocked:
        raise InvalidResumeError(f"turn {turn.id!r} is {turn.status.value}", reason=RefusalReason.NOT_SUSPENDABLE)
    if suspension.type is not SuspensionType.USER_INPUT or suspension.is_form:
        raise ValueError("Runner.suspend takes a plain-text Suspension.user_input(message)")
    turn.status = TurnStatus.WAITING_FOR_USER
    turn.suspension = suspension
