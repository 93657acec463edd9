"""Tool-call ids made unique within a turn, whatever ids the model sends."""

from __future__ import annotations

import re
from typing import Final

from agentturn.state.messages import AiMessage, ToolCall, ToolMessage
from agentturn.state.turn import Turn

#: A call id kept as the model gave it: what every provider accepts back (Bedrock's ``toolUseId`` is the
#: strictest) and what travels in a URL path segment as it is (action ids are call ids).
_KEPT_CALL_ID: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _ids_in_use(turn: Turn) -> set[str]:
    """Every id a call of this turn has had: calls, results, per-call state, cards."""
    used = {c.id for m in turn.messages if isinstance(m, AiMessage) for c in m.tool_calls}
    used |= {m.tool_call_id for m in turn.messages if isinstance(m, ToolMessage)}
    used |= set(turn.tool_states) | {card.action_id for card in turn.cards}
    used |= {c.id for c in turn.pending_tool_calls}
    return used


def unique_call_ids(turn: Turn, reply: AiMessage) -> AiMessage:
    """Tool calls are addressed by id (action ids, idempotency keys, results): make each unique in the turn.

    The model's id is kept when it is well-formed, new to the turn and the first of its kind in the reply;
    every other call gets ``call-<iteration>-<position>``, suffixed until it collides with nothing — neither
    an earlier call nor an id kept in this same reply (so a model cannot make a call vanish by naming it
    like the id another call would get).
    """
    used = _ids_in_use(turn)
    kept: list[bool] = []
    for call in reply.tool_calls:
        keep = bool(_KEPT_CALL_ID.match(call.id)) and call.id not in used
        kept.append(keep)
        if keep:
            used.add(call.id)
    calls: list[ToolCall] = []
    for index, (call, keep) in enumerate(zip(reply.tool_calls, kept, strict=True)):
        if keep:
            calls.append(call)
            continue
        base = f"call-{turn.iteration_count + 1}-{index + 1}"
        call_id, suffix = base, 1
        while call_id in used:
            suffix += 1
            call_id = f"{base}-{suffix}"
        used.add(call_id)
        calls.append(call.model_copy(update={"id": call_id}))
    return reply.model_copy(update={"tool_calls": calls})
