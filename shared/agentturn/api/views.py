"""From runtime objects to the public views."""

from __future__ import annotations

from agentturn.api.models import (
    RESERVED_METADATA_KEYS,
    RetryView,
    SuspensionView,
    ToolCallView,
    TurnErrorView,
    TurnView,
)
from agentturn.api.ownership import public_conversation_id
from agentturn.engine.clock import iso
from agentturn.state.turn import Suspension, Turn


def suspension_view(suspension: Suspension) -> SuspensionView:
    meta = suspension.metadata
    target = meta.get("inputTarget")
    schema = meta.get("schema")
    arguments = meta.get("arguments")
    return SuspensionView(
        type=suspension.type,
        action_id=suspension.correlation_id,
        correlation_id=suspension.correlation_id,
        message=suspension.message,
        form_key=meta.get("formKey"),
        schema=schema if isinstance(schema, dict) else None,
        tool_name=meta.get("toolName"),
        input_target=target if target in ("MODEL", "TOOL") else None,
        arguments=arguments if isinstance(arguments, dict) else None,
        arguments_fingerprint=suspension.arguments_fingerprint,
        parameters_schema=suspension.parameters_schema,
        expires_at=iso(suspension.expires_at) if suspension.expires_at is not None else None,
        waiting_for=suspension.people.waiting_for if suspension.people is not None else None,
    )


def turn_view(turn: Turn) -> TurnView:
    return TurnView(
        turn_id=turn.id,
        conversation_id=public_conversation_id(turn),
        agent_id=turn.agent_id,
        agent_version=turn.agent_version,
        status=turn.status,
        phase=turn.phase,
        suspension=suspension_view(turn.suspension) if turn.suspension is not None else None,
        pending_actions=[suspension_view(s) for s in turn.suspensions],
        pending_tool_calls=[
            ToolCallView(id=c.id, name=c.name, arguments=dict(c.arguments)) for c in turn.pending_tool_calls
        ],
        final_output=turn.final_output,
        error=TurnErrorView(type=turn.error.type, message=turn.error.message) if turn.error is not None else None,
        retry=_retry_view(turn),
        iteration_count=turn.iteration_count,
        step_count=turn.step_count,
        tool_call_count=turn.tool_call_count,
        cancel_requested=turn.cancel_requested,
        metadata={k: v for k, v in turn.metadata.items() if k not in RESERVED_METADATA_KEYS},
        version=turn.version,
        created_at=turn.created_at,
        updated_at=turn.updated_at,
    )


def _retry_view(turn: Turn) -> RetryView | None:
    retry = turn.retry
    if retry is None or not turn.status.is_runnable:
        return None
    not_before = iso(retry.not_before) if retry.not_before is not None else None
    return RetryView(attempts=retry.attempts, reason=retry.reason, not_before=not_before)
