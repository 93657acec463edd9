"""A blocked turn's pending decisions as AG-UI interrupts, one per card, all in one ``RUN_FINISHED``.

- a form (asked by the model through ``request_user_input``, or raised by a tool with ``FormRequired``):
  ``reason: "input_required"``, ``responseSchema`` = the schema frozen in the turn, ``message`` = the form's
  title, ``toolCallId`` = the call that waits for it, ``expiresAt`` from the wait's deadline;
- a tool call waiting for approval: ``reason: "tool_call"``, ``toolCallId``, and :func:`approval_schema`:
  ``approved``, ``editedArgs`` (the tool's parameter schema frozen with the wait: approve with edits),
  ``respond`` (answer in the tool's place: the tool does not run, the value is its result) and ``reason``;
- a plain-text wait (``Runner.suspend``): ``input_required`` with ``{text}``.

The interrupt id is the card's timeline id (``<turnId>:input:<actionId>`` / ``<turnId>:approval:<actionId>``):
stable across reloads, and ``metadata.agentturn`` names the turn, the action and the form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from agentturn.agui.events import Interrupt
from agentturn.engine.clock import iso
from agentturn.state.messages import FormMessage, approval_message_id, form_message_id
from agentturn.state.turn import Suspension, SuspensionType, Turn

INPUT_REQUIRED: Final = "input_required"
TOOL_CALL: Final = "tool_call"
#: The key of this server's data in an interrupt's ``metadata`` (AG-UI reserves ``ag-ui``).
METADATA_KEY: Final = "agentturn"

APPROVED: Final = "approved"
EDITED_ARGS: Final = "editedArgs"
RESPOND: Final = "respond"
REASON: Final = "reason"
TEXT: Final = "text"


def interrupt_id(turn: Turn, suspension: Suspension) -> str:
    if suspension.type is SuspensionType.TOOL_APPROVAL:
        return approval_message_id(turn.id, suspension.correlation_id)
    return form_message_id(turn.id, suspension.correlation_id)


def approval_schema(parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``responseSchema`` of an approval: AG-UI's approve-with-edits pattern, plus ``respond``."""
    edited: dict[str, Any] = dict(parameters) if parameters else {"type": "object"}
    edited["description"] = "Full replacement of the tool's arguments (not merged); only with approved: true."
    return {
        "type": "object",
        "properties": {
            APPROVED: {"type": "boolean", "description": "true runs the tool; false rejects the call."},
            EDITED_ARGS: edited,
            RESPOND: {
                "description": "With approved: false, answer in the tool's place: the tool does not run and this "
                "value is its result (marked as written by a person)."
            },
            REASON: {
                "type": "string",
                "maxLength": 2000,
                "description": "With approved: false, why (the model reads it).",
            },
        },
        "required": [APPROVED],
        "additionalProperties": False,
    }


TEXT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {TEXT: {"type": "string", "minLength": 1}},
    "required": [TEXT],
    "additionalProperties": False,
}


def _form_title(turn: Turn, suspension: Suspension) -> str:
    schema = suspension.schema or {}
    title = schema.get("title")
    if isinstance(title, str) and title.strip():
        return title
    card = next(
        (c for c in turn.cards if isinstance(c, FormMessage) and c.action_id == suspension.correlation_id), None
    )
    if card is not None and card.description:
        return card.description
    return suspension.message or (suspension.form_key or "")


def as_interrupt(turn: Turn, suspension: Suspension) -> Interrupt:
    expires = iso(suspension.expires_at) if suspension.expires_at is not None else None
    about: dict[str, Any] = {"turnId": turn.id, "actionId": suspension.correlation_id}
    if suspension.type is SuspensionType.TOOL_APPROVAL:
        about.update(
            toolName=suspension.tool_name,
            arguments=suspension.arguments,
            argumentsFingerprint=suspension.arguments_fingerprint,
        )
        return Interrupt(
            id=interrupt_id(turn, suspension),
            reason=TOOL_CALL,
            message=suspension.message or f"Run {suspension.tool_name}?",
            tool_call_id=suspension.correlation_id,
            response_schema=approval_schema(suspension.parameters_schema),
            expires_at=expires,
            metadata={METADATA_KEY: about},
        )
    if suspension.is_form:
        about.update(formKey=suspension.form_key, inputTarget=suspension.input_target, toolName=suspension.tool_name)
        return Interrupt(
            id=interrupt_id(turn, suspension),
            reason=INPUT_REQUIRED,
            message=_form_title(turn, suspension),
            tool_call_id=suspension.correlation_id,
            response_schema=suspension.schema,
            expires_at=expires,
            metadata={METADATA_KEY: about},
        )
    return Interrupt(
        id=interrupt_id(turn, suspension),
        reason=INPUT_REQUIRED,
        message=suspension.message,
        response_schema=dict(TEXT_SCHEMA),
        expires_at=expires,
        metadata={METADATA_KEY: about},
    )


def open_interrupts(turn: Turn | None) -> dict[str, Suspension]:
    """The turn's pending decisions by interrupt id (none unless it is blocked), in the turn's order."""
    if turn is None or not turn.status.is_blocked or turn.cancel_requested:
        return {}
    return {interrupt_id(turn, s): s for s in turn.suspensions}


def interrupts_of(turn: Turn) -> list[Interrupt]:
    return [as_interrupt(turn, s) for s in open_interrupts(turn).values()]
