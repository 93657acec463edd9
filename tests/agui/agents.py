"""Scripted agents for the AG-UI tests, loaded by ``agentturn dev`` through
``AGENTTURN_AGENTS=tests.agui.agents:agui_agents`` (as a deployment loads its own).

Each model is a function of the conversation, so a turn resumed by another process (the dev server restarted,
the worker) gets the same next answer.
"""

from __future__ import annotations

import json
from typing import Any, Final

from agentturn import (
    Agent,
    AiMessage,
    ExecutionPolicy,
    FormDefinition,
    ScriptedChatModel,
    Tool,
    ToolCall,
    ToolMessage,
    UserInputTool,
    require_form,
)
from agentturn.agents.agent import ToolApprovalDecision
from agentturn.ports.chat_model import ChatRequest

FORM_AGENT: Final = "agui-form"
TOOL_FORM_AGENT: Final = "agui-tool-form"
APPROVALS_AGENT: Final = "agui-approvals"
STEER_AGENT: Final = "agui-steer"
EXPIRING_AGENT: Final = "agui-expiring"
#: Approvals of an agent that continues after each answer (ExecutionPolicy(resume_after="each")).
EACH_AGENT: Final = "agui-each"
#: The first token after 1 s (a model's latency), then 8 characters every 20 ms: what the latency figure measures.
SLOW_AGENT: Final = "agui-slow"

TRIP_FORM: Final = FormDefinition(
    "trip_details",
    "use when the user wants to book a trip (model-facing)",
    {
        "type": "object",
        "title": "Trip details",
        "properties": {
            "city": {"type": "string", "title": "City", "minLength": 2},
            "nights": {"type": "integer", "title": "Nights", "minimum": 1, "maximum": 30},
        },
        "required": ["city", "nights"],
    },
)
ADDRESS_FORM: Final = FormDefinition(
    "shipping_address",
    "the address a parcel goes to",
    {
        "type": "object",
        "title": "Shipping address",
        "properties": {
            "street": {"type": "string", "minLength": 3},
            "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        },
        "required": ["street", "zip"],
    },
)
REFUND_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"orderId": {"type": "string"}, "amount": {"type": "number", "minimum": 0}},
    "required": ["orderId", "amount"],
}
ANSWER_PREFIX: Final = "Done: "


def _last_tool_answers(request: ChatRequest) -> list[ToolMessage]:
    """The tool results after the model's latest call (what the model reads before its answer)."""
    answers: list[ToolMessage] = []
    for message in reversed(request.messages):
        if not isinstance(message, ToolMessage):
            break
        answers.insert(0, message)
    return answers


def _summary(answers: list[ToolMessage]) -> AiMessage:
    return AiMessage(content=ANSWER_PREFIX + " | ".join(json.dumps(m.content, sort_keys=True) for m in answers))


def _form_model(request: ChatRequest) -> AiMessage:
    answers = _last_tool_answers(request)
    if answers:
        return _summary(answers)
    return AiMessage(
        content="Let me ask for the details.",
        tool_calls=[ToolCall(id="call-trip", name="request_user_input", arguments={"formKey": TRIP_FORM.form_key})],
    )


def _ship(arguments: dict[str, Any]) -> dict[str, Any]:
    address = require_form(ADDRESS_FORM)
    return {"shipped": arguments["item"], "to": address}


def _tool_form_model(request: ChatRequest) -> AiMessage:
    answers = _last_tool_answers(request)
    if answers:
        return _summary(answers)
    return AiMessage(tool_calls=[ToolCall(id="call-ship", name="ship_parcel", arguments={"item": "book"})])


def _refund(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"refunded": arguments["orderId"], "amount": arguments["amount"]}


def _approvals_model(request: ChatRequest) -> AiMessage:
    answers = _last_tool_answers(request)
    if answers:
        return _summary(answers)
    last = request.messages[-1] if request.messages else None
    count = 1 if last is not None and "one" in str(getattr(last, "content", "")) else 3
    calls = [
        ToolCall(id=f"call-r{n}", name="issue_refund", arguments={"orderId": f"O-{n}", "amount": 10 * n})
        for n in range(1, count + 1)
    ]
    return AiMessage(tool_calls=calls)


def _slow_model(request: ChatRequest) -> AiMessage:
    return AiMessage(content="A slow model writes this answer one small piece at a time, after thinking for a second.")


def _approval(turn: Any, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
    return ToolApprovalDecision.require_approval(
        f"Refund {call.arguments.get('amount')} for order {call.arguments.get('orderId')}?"
    )


def agui_agents() -> list[Agent]:
    refund = Tool("issue_refund", "Refund an order", _refund, parameters=REFUND_PARAMETERS)
    return [
        Agent(
            id=FORM_AGENT,
            instructions="Ask for the trip form.",
            chat_model=ScriptedChatModel(_form_model),
            tools=[UserInputTool(forms=[TRIP_FORM])],
        ),
        Agent(
            id=TOOL_FORM_AGENT,
            instructions="Ship a parcel; the tool asks for the address.",
            chat_model=ScriptedChatModel(_tool_form_model),
            tools=[
                Tool(
                    "ship_parcel",
                    "Ship an item",
                    _ship,
                    parameters={"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]},
                )
            ],
        ),
        Agent(
            id=APPROVALS_AGENT,
            instructions="Refund orders; each refund waits for a person.",
            chat_model=ScriptedChatModel(_approvals_model),
            tools=[refund],
            approval_policy=_approval,
        ),
        Agent(
            id=EACH_AGENT,
            instructions="Refund orders; each approved refund runs at once.",
            chat_model=ScriptedChatModel(_approvals_model),
            tools=[refund],
            approval_policy=_approval,
            policy=ExecutionPolicy(resume_after="each"),
        ),
        Agent(
            id=STEER_AGENT,
            instructions="Ask for the trip form; a new message steers away from it.",
            chat_model=ScriptedChatModel(_form_model),
            tools=[UserInputTool(forms=[TRIP_FORM])],
            policy=ExecutionPolicy(steer_away=True),
        ),
        Agent(
            id=EXPIRING_AGENT,
            instructions="Ask for the trip form, which must be answered within a second.",
            chat_model=ScriptedChatModel(_form_model),
            tools=[UserInputTool(forms=[TRIP_FORM])],
            policy=ExecutionPolicy(input_timeout=1.0),
        ),
        Agent(
            id=SLOW_AGENT,
            instructions="Answer slowly.",
            chat_model=ScriptedChatModel(_slow_model, chunk_chars=8, first_delay=1.0, delta_delay=0.02),
        ),
    ]
