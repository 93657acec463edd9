"""Stopping a turn to wait for a person: the mirror of :mod:`agentturn.engine.resume`, and pure like it.

Each function changes only the turn it is given (status, suspensions, the pending cards); saving it and
telling anyone is the caller's business, so the same rules serve a run and a test without a store.

A model message may hold several calls that need a person. Each is *parked* as it is reached (its wait is
added to ``turn.suspensions``) while the calls that need nobody run; when only parked calls remain, the turn
*blocks* on all of them at once: every wait gets its card in the same save.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from agentturn.agents.agent import ExecutionPolicy, ToolApprovalDecision
from agentturn.engine.clock import iso
from agentturn.engine.deadline import shown_deadline
from agentturn.engine.redaction import REDACT_VALUES
from agentturn.engine.rounds import waited_call_id
from agentturn.errors import InvalidResumeError, RefusalReason
from agentturn.forms.definitions import FormDefinition
from agentturn.state.approvers import REQUESTER_KEY, Approvers, Assignment
from agentturn.state.messages import ApprovalMessage, FormMessage, ToolCall
from agentturn.state.turn import Suspension, SuspensionType, Turn, TurnPhase, TurnStatus, arguments_fingerprint
from agentturn.timeline.conversation_list import title_of
from agentturn.timeline.identity import place

#: Who asked for the form: the model (through the control tool) or a business tool (``FormRequired``).
InputTarget = Literal["MODEL", "TOOL"]


def wait_terms(turn: Turn, policy: ExecutionPolicy, now: float) -> tuple[str | None, dict[str, Any]]:
    """(deadline as ISO, terms frozen in the suspension) of a new wait, from the turn or the agent's policy.

    Frozen, because the agent's policy may change in a later deployment while the person is still answering.
    """
    timeout = turn.input_timeout if turn.input_timeout is not None else policy.input_timeout
    deadline = now + timeout if timeout is not None else None
    terms: dict[str, Any] = {
        "on_expiry": policy.on_input_timeout,
        "expires_at": deadline,
        "resume_after": policy.resume_after,
    }
    return (iso(deadline) if deadline is not None else None), terms


def _assignment(turn: Turn, approvers: Approvers | None, now: float) -> Assignment | None:
    if approvers is None:
        return None
    requester = turn.metadata.get(REQUESTER_KEY)
    return Assignment(
        approvers=approvers,
        requested_by=requester if isinstance(requester, str) else None,
        asked_at=iso(now),
        title=title_of(turn.input),
        remind_at=now + approvers.remind_after if approvers.remind_after is not None else None,
        escalate_at=now + approvers.escalate_after if approvers.escalate_after is not None else None,
        deadline_at=now + approvers.deadline_after if approvers.deadline_after is not None else None,
    )


def park_for_form(
    turn: Turn, call: ToolCall, form: FormDefinition, target: InputTarget, policy: ExecutionPolicy, now: float
) -> Suspension:
    """Add the wait for ``form`` on behalf of ``call`` to the turn's pending decisions (no card yet: see
    :func:`block`); the turn runs on with the calls that need no person."""
    _, terms = wait_terms(turn, policy, now)
    suspension = Suspension(
        type=SuspensionType.USER_INPUT,
        correlation_id=call.id,
        message=form.description,
        resume_phase=TurnPhase.MODEL if target == "MODEL" else TurnPhase.TOOLS,
        metadata={
            "formKey": form.form_key,
            "schema": form.schema,
            "toolName": call.name,
            "inputTarget": target,
            REDACT_VALUES: policy.redact_submitted_values,
        },
        people=_assignment(turn, form.approvers, now),
        **terms,
    )
    turn.suspensions.append(suspension)
    return suspension


def park_for_approval(
    turn: Turn,
    call: ToolCall,
    decision: ToolApprovalDecision,
    policy: ExecutionPolicy,
    now: float,
    parameters: dict[str, Any] | None = None,
) -> Suspension:
    """Add the wait for a person's decision on ``call`` to the turn's pending decisions (no card yet).

    The arguments shown are frozen with their fingerprint, and so is the tool's parameter schema
    (``parameters``): edited arguments are checked against the schema the person was shown, as forms are.
    """
    _, terms = wait_terms(turn, policy, now)
    metadata: dict[str, Any] = {
        "toolName": call.name,
        "arguments": dict(call.arguments),
        "argumentsFingerprint": arguments_fingerprint(dict(call.arguments)),
    }
    if parameters is not None:
        metadata["parametersSchema"] = copy.deepcopy(parameters)
    suspension = Suspension(
        type=SuspensionType.TOOL_APPROVAL,
        correlation_id=call.id,
        message=decision.message,
        resume_phase=TurnPhase.TOOLS,
        metadata=metadata,
        people=_assignment(turn, decision.approvers, now),
        **terms,
    )
    turn.suspensions.append(suspension)
    return suspension


def parked_call_ids(turn: Turn) -> set[str]:
    return {waited_call_id(s) for s in turn.suspensions}


def next_runnable_call(turn: Turn) -> ToolCall | None:
    """The first pending call that does not wait for a person: the tool step's next call."""
    parked = parked_call_ids(turn)
    return next((c for c in turn.pending_tool_calls if c.id not in parked), None)


def only_waits_remain(turn: Turn) -> bool:
    """The turn has decisions pending and nothing it could do without a person."""
    return bool(turn.suspensions) and next_runnable_call(turn) is None


def block(turn: Turn) -> None:
    """Make ``turn`` wait on all its pending decisions at once: each gets its card (those it has keep it),
    and the status says what the first waits for."""
    if not turn.suspensions:
        raise ValueError(f"turn {turn.id!r} has no pending decision to wait on")
    for suspension in turn.suspensions:
        if not any(card.action_id == suspension.correlation_id for card in turn.cards):
            turn.cards.append(_card(turn, suspension))
    turn.status = turn.suspensions[0].waiting_status
    turn.phase = TurnPhase.TOOLS


def _card(turn: Turn, suspension: Suspension) -> FormMessage | ApprovalMessage:
    call_id = suspension.correlation_id
    card: FormMessage | ApprovalMessage
    if suspension.type is SuspensionType.TOOL_APPROVAL:
        card = ApprovalMessage(
            action_id=call_id,
            tool_name=suspension.tool_name or "",
            arguments=suspension.arguments or {},
            arguments_fingerprint=suspension.arguments_fingerprint,
            message=suspension.message,
            expires_at=shown_deadline(suspension),
            people=suspension.people,
        )
    else:
        card = FormMessage(
            action_id=call_id,
            form_key=suspension.form_key or "",
            description=suspension.message,
            schema=suspension.metadata.get("schema") or {},
            input_target=suspension.input_target or "MODEL",
            tool_name=suspension.tool_name or "",
            expires_at=shown_deadline(suspension),
            people=suspension.people,
        )
    return place(turn, card)


def suspend_for_form(
    turn: Turn, call: ToolCall, form: FormDefinition, target: InputTarget, policy: ExecutionPolicy, now: float
) -> None:
    """Make ``turn`` wait for ``form`` on behalf of ``call`` (and whatever else waits), with its pending card."""
    park_for_form(turn, call, form, target, policy, now)
    block(turn)


def suspend_for_approval(
    turn: Turn, call: ToolCall, decision: ToolApprovalDecision, policy: ExecutionPolicy, now: float
) -> None:
    """Make ``turn`` wait for a person to approve or reject ``call`` (and whatever else waits), with its card."""
    park_for_approval(turn, call, decision, policy, now)
    block(turn)


def suspend_for_text(turn: Turn, suspension: Suspension) -> None:
    """Put a plain-text wait on a turn that is neither ended nor already waiting; refuse anything else."""
    if turn.status.is_terminal or turn.status.is_blocked:
        raise InvalidResumeError(f"turn {turn.id!r} is {turn.status.value}", reason=RefusalReason.NOT_SUSPENDABLE)
    if suspension.type is not SuspensionType.USER_INPUT or suspension.is_form:
        raise ValueError("Runner.suspend takes a plain-text Suspension.user_input(message)")
    turn.status = TurnStatus.WAITING_FOR_USER
    turn.suspension = suspension
