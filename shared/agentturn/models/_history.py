"""What every chat wire protocol demands of a history: each tool call answered, each tool result asked for.

A turn that was cancelled (or failed) between a model's tool calls and their results leaves calls without
results in the conversation; the next turn's history would then be refused by the provider (HTTP 400 from
OpenAI, ``ValidationException`` from Bedrock) on every call, forever. The adapters send such a call with a
synthetic error result instead, and leave out a tool result whose call is not in the history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from pydantic import JsonValue

from agentturn.state.messages import AiMessage, ModelMessage, ToolCall, ToolMessage

#: The result sent for a tool call that never got one.
NOT_EXECUTED: Final[dict[str, JsonValue]] = {
    "status": "error",
    "error": "not_executed",
    "message": "this tool call was not executed: its turn ended before it ran",
}


def paired(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """``messages`` with a synthetic result after every unanswered tool call and no unasked-for results."""
    out: list[ModelMessage] = []
    open_calls: dict[str, ToolCall] = {}

    def close_open_calls() -> None:
        for call in open_calls.values():
            out.append(ToolMessage(tool_call_id=call.id, content=dict(NOT_EXECUTED), tool_name=call.name))
        open_calls.clear()

    for message in messages:
        if isinstance(message, ToolMessage):
            if open_calls.pop(message.tool_call_id, None) is not None:
                out.append(message)
            continue
        close_open_calls()
        out.append(message)
        if isinstance(message, AiMessage):
            open_calls.update((call.id, call) for call in message.tool_calls)
    close_open_calls()
    return out


def is_error_result(content: JsonValue) -> bool:
    """Whether a tool result reports a failure (the runner's error results carry ``"status": "error"``)."""
    return isinstance(content, dict) and content.get("status") == "error"


def result_text(content: JsonValue) -> str:
    """A tool result as text: a string as it is, anything else as JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def excerpt(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
