"""Scripted models and tools for the scenarios: each model is a function of the conversation so far."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    FormDefinition,
    ScriptedChatModel,
    ToolCall,
    ToolContext,
    ToolMessage,
    UserInputTool,
    UserMessage,
    require_form,
)

SUPPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "补充故障信息",
    "properties": {
        "affectedSystem": {"type": "string", "title": "受影响系统"},
        "impactScope": {"type": "string", "title": "影响范围", "enum": ["ONE_USER", "PARTIAL_USERS", "ALL_USERS"]},
    },
    "required": ["affectedSystem", "impactScope"],
}

MEETING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "会议室预定",
    "properties": {
        "topic": {"type": "string", "title": "会议主题"},
        "attendees": {"type": "integer", "title": "参会人数", "minimum": 1},
    },
    "required": ["topic", "attendees"],
}

SUPPORT_DATA = {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}
MEETING_DATA = {"topic": "Sprint review", "attendees": 6}


def support_form(schema: dict[str, Any] | None = None) -> FormDefinition:
    return FormDefinition(
        "support_ticket_details", "创建故障工单缺少受影响系统或影响范围时使用", schema or SUPPORT_SCHEMA
    )


def meeting_form() -> FormDefinition:
    return FormDefinition("meeting_room_booking", "预定会议室时收集会议主题、时间和参会人数", MEETING_SCHEMA)


def ai_calls(*calls: tuple[str, str, dict[str, Any]], content: str = "") -> AiMessage:
    return AiMessage(content=content, tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in calls])


def tool_results(request: ChatRequest) -> list[ToolMessage]:
    return [m for m in request.messages if isinstance(m, ToolMessage)]


def last_tool_content(request: ChatRequest) -> Any:
    last = request.messages[-1]
    assert isinstance(last, ToolMessage)
    return last.content


def reply_after_tools(first: AiMessage, then: Callable[[ChatRequest], AiMessage]) -> Callable[[ChatRequest], AiMessage]:
    """A model that answers the latest user message with ``first`` and anything later with ``then``."""

    def model(request: ChatRequest) -> AiMessage:
        if isinstance(request.messages[-1], UserMessage):
            return first
        return then(request)

    return model


def final_from_last_tool(request: ChatRequest) -> AiMessage:
    return AiMessage(content="done: " + json.dumps(last_tool_content(request), ensure_ascii=False, sort_keys=True))


def form_asking_agent() -> Agent:
    """Asks for the support form through request_user_input, then answers with what the tool returned."""
    return Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(
            reply_after_tools(
                ai_calls(("call-1", "request_user_input", {"formKey": "support_ticket_details"})),
                final_from_last_tool,
            )
        ),
        tools=[UserInputTool(forms=[support_form()])],
    )


class Ledger:
    """Side effects keyed by ToolContext.idempotency_key, with every attempt counted."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.effects: dict[str, dict[str, Any]] = {}
        self.attempts: list[str] = []

    def write(self, payload: dict[str, Any]) -> dict[str, Any]:
        key = ToolContext.current().idempotency_key
        with self.lock:
            self.effects.setdefault(key, payload)
            return {"ticketId": f"T-{len(self.effects)}", **self.effects[key]}


def support_ticket_tool_function(
    ledger: Ledger, schema: dict[str, Any] | None = None
) -> Callable[[dict[str, Any]], Any]:
    def create_support_ticket(arguments: dict[str, Any]) -> Any:
        context = ToolContext.current()
        ledger.attempts.append(context.idempotency_key)
        details = require_form(support_form(schema))
        return ledger.write({**arguments, **details})

    return create_support_ticket
