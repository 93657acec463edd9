"""The seed's scenarios as agents, and a deterministic demo model that plays them.

- meeting-agent: the model asks for ``meeting_room_booking`` through ``request_user_input``, then calls
  ``reserve_meeting_room`` with the submitted data (entry point 1).
- support-agent: ``create_support_ticket`` raises ``FormRequired`` when the affected system and impact are
  unknown, and is replayed with the submitted data (entry point 2).
- refund-agent: ``issue_refund`` needs a person's approval before it runs.
- assistant: all of the above, routed by what the user asks for; asked to do several things "at once", it
  makes one message with four calls that each need a person (two refunds to approve, the meeting form it asks
  for, the ticket whose tool asks for its form), answered card by card.

The demo model is a pure function of the conversation so far, so any process resuming a turn gets the
same next answer. It is clearly not an LLM and says so.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from agentturn.agents.agent import Agent, ToolApprovalDecision
from agentturn.agents.tools import Tool, ToolContext
from agentturn.forms.definitions import REQUEST_USER_INPUT, FormDefinition, FormRequired, UserInputTool
from agentturn.forms.validation import validate_form_data
from agentturn.ports.chat_model import ChatModel, ChatRequest, ScriptedChatModel
from agentturn.state.messages import AiMessage, ToolCall, ToolMessage, UserMessage
from agentturn.state.turn import Turn

DEMO_AGENT_ID = "assistant"
DEMO_LABEL = "[demo model] "

SUPPORT_TICKET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "补充故障信息 (Incident details)",
    "properties": {
        "affectedSystem": {"type": "string", "title": "受影响系统 (Affected system)", "minLength": 1},
        "impactScope": {
            "type": "string",
            "title": "影响范围 (Impact scope)",
            "enum": ["ONE_USER", "PARTIAL_USERS", "ALL_USERS"],
            # What a person reads in the console's drop-down (the values stay what the tool receives).
            "x-enumNames": ["单个用户 (One user)", "部分用户 (Some users)", "全部用户 (All users)"],
        },
    },
    "required": ["affectedSystem", "impactScope"],
}

MEETING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "会议室预定 (Meeting room booking)",
    "properties": {
        "topic": {"type": "string", "title": "会议主题 (Topic)", "minLength": 1},
        "date": {"type": "string", "title": "日期 (Date)", "format": "date"},
        "startTime": {
            "type": "string",
            "title": "开始时间 (Start, HH:MM)",
            "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$",
            # Shown under the field, and in a refused value's message ("... is not in the expected form (24-hour
            # clock, such as 14:30)."). Not `examples`: the form renderer would make the field a drop-down.
            "description": "24-hour clock, such as 14:30",
        },
        "attendees": {"type": "integer", "title": "参会人数 (Attendees)", "minimum": 1, "maximum": 200},
        "needsProjector": {"type": "boolean", "title": "需要投影仪 (Projector)"},
    },
    "required": ["topic", "date", "startTime", "attendees"],
}

SUPPORT_TICKET_FORM = FormDefinition(
    "support_ticket_details",
    "创建故障工单缺少受影响系统或影响范围时使用 (missing affected system or impact)",
    SUPPORT_TICKET_SCHEMA,
)
MEETING_FORM = FormDefinition(
    "meeting_room_booking",
    "预定会议室时收集会议主题、时间和参会人数 (topic, time and attendees)",
    MEETING_SCHEMA,
)


def _option_label(schema: dict[str, Any], field: str, value: Any) -> Any:
    """The label the form showed for ``value`` (its ``x-enumNames`` entry): the reply says what the person picked,
    not the value the tool receives."""
    prop = schema.get("properties", {}).get(field, {})
    values, names = prop.get("enum"), prop.get("x-enumNames")
    if isinstance(values, list) and isinstance(names, list) and value in values and len(names) == len(values):
        return names[values.index(value)]
    return value


class TicketLedger:
    """External side effects of the demo tools, keyed by ``ToolContext.idempotency_key``: a replay never
    creates a second ticket, booking or refund."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: dict[str, dict[str, Any]] = {}
        self.attempts: dict[str, int] = {}

    def record(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        key = ToolContext.current().idempotency_key
        with self._lock:
            self.attempts[key] = self.attempts.get(key, 0) + 1
            if key not in self.entries:
                reference = f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:8].upper()}"
                self.entries[key] = {"id": reference, **payload}
            return dict(self.entries[key])


def _last_user_text(request: ChatRequest) -> str:
    for message in reversed(request.messages):
        if isinstance(message, UserMessage):
            return message.content.lower()
    return ""


def _answers_since_the_person_spoke(request: ChatRequest) -> int:
    """AI messages after the last user message: call ids numbered by them stay as short in a long conversation
    as in a fresh one (every byte of a snapshot is billed), and unique within the turn."""
    count = 0
    for message in reversed(request.messages):
        if isinstance(message, UserMessage):
            break
        count += isinstance(message, AiMessage)
    return count


def _call(request: ChatRequest, name: str, arguments: dict[str, Any], content: str = "") -> AiMessage:
    number = _answers_since_the_person_spoke(request) + 1
    return AiMessage(content=content, tool_calls=[ToolCall(id=f"call-{number}", name=name, arguments=arguments)])


def _say(text: str) -> AiMessage:
    return AiMessage(content=DEMO_LABEL + text)


def _content(message: ToolMessage) -> dict[str, Any]:
    content = message.content
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except json.JSONDecodeError:
            return {"text": content}
    return content if isinstance(content, dict) else {"value": content}


def _after_tool(request: ChatRequest, message: ToolMessage) -> AiMessage:
    result = _content(message)
    status = result.get("status")
    tools = {tool.name for tool in request.tools}
    if message.tool_name == REQUEST_USER_INPUT:
        if status == "submitted" and result.get("formKey") == MEETING_FORM.form_key:
            return _call(request, "reserve_meeting_room", dict(result.get("data") or {}))
        return _say(f"I could not get the form: {result.get('message', status)}.")
    if status in ("rejected", "denied"):
        return _say(f"I did not run {message.tool_name}: {result.get('reason')}.")
    if status == "error":
        return _say(f"{message.tool_name} failed: {result.get('message')}.")
    if message.tool_name == "create_support_ticket":
        return _say(
            f"Ticket {result['id']} created: {result['title']} (priority {result['priority']}), "
            f"affected system {result['affectedSystem']}, "
            f"impact {_option_label(SUPPORT_TICKET_SCHEMA, 'impactScope', result['impactScope'])}."
        )
    if message.tool_name == "reserve_meeting_room":
        return _say(
            f'Booked {result["room"]} for "{result["topic"]}" on {result["date"]} at {result["startTime"]} '
            f"for {result['attendees']} people (booking {result['id']})."
        )
    if message.tool_name == "issue_refund":
        return _say(f"Refund {result['id']} of {result['amount']} issued for order {result['orderId']}.")
    return _say(f"Done ({sorted(tools)}).")


#: What the assistant asks for in one message when told to do several things "at once".
BATCH_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("issue_refund", {"orderId": "O-1001", "amount": 42.5}),
    ("issue_refund", {"orderId": "O-1002", "amount": 10}),
    (REQUEST_USER_INPUT, {"formKey": "meeting_room_booking"}),
    ("create_support_ticket", {"title": "登录故障 (login failure)", "priority": "HIGH"}),
)


def _batch(request: ChatRequest) -> AiMessage:
    number = _answers_since_the_person_spoke(request) + 1
    calls = [
        ToolCall(id=f"call-{number}-{index}", name=name, arguments=dict(arguments))
        for index, (name, arguments) in enumerate(BATCH_CALLS, start=1)
    ]
    return AiMessage(content="", tool_calls=calls)


def _after_batch(request: ChatRequest, batch: AiMessage) -> AiMessage:
    ids = {call.id for call in batch.tool_calls}
    results = {m.tool_call_id: _content(m) for m in request.messages if isinstance(m, ToolMessage)}
    lines = [f"{call.name}: {results.get(call.id, {}).get('status', 'done')}" for call in batch.tool_calls]
    return _say(f"All {len(ids)} requests answered — " + "; ".join(lines) + ".")


def demo_model(request: ChatRequest) -> AiMessage:
    """The scripted demo model: a function of the conversation so far."""
    last = request.messages[-1] if request.messages else None
    asked = [m for m in request.messages if isinstance(m, AiMessage)]
    if isinstance(last, ToolMessage) and asked and len(asked[-1].tool_calls) > 1:
        return _after_batch(request, asked[-1])
    if isinstance(last, ToolMessage):
        return _after_tool(request, last)
    text = _last_user_text(request)
    tools = {tool.name for tool in request.tools}
    if "at once" in text and {name for name, _ in BATCH_CALLS} <= tools:
        return _batch(request)
    if ("ticket" in text or "工单" in text or "incident" in text) and "create_support_ticket" in tools:
        priority = "HIGH" if ("high" in text or "高" in text or "urgent" in text) else "NORMAL"
        title = "登录故障 (login failure)" if ("login" in text or "登录" in text) else "故障 (incident)"
        return _call(request, "create_support_ticket", {"title": title, "priority": priority})
    if ("meeting" in text or "会议" in text or "room" in text) and REQUEST_USER_INPUT in tools:
        return _call(request, REQUEST_USER_INPUT, {"formKey": MEETING_FORM.form_key})
    if ("refund" in text or "退款" in text) and "issue_refund" in tools:
        return _call(request, "issue_refund", {"orderId": "O-1001", "amount": 42.5})
    return _say(
        'I am the deterministic demo model, not an LLM. Try: "create a high priority login incident ticket", '
        '"book a meeting room", or "refund order O-1001".'
    )


def _support_tool(ledger: TicketLedger) -> Tool:
    def create_support_ticket(arguments: dict[str, Any]) -> dict[str, Any]:
        # The person's form wins; a real model that already asked through request_user_input may pass the
        # fields as arguments, and must not make the person fill in the same form twice.
        context = ToolContext.current()
        if context.form_submitted:
            # The runtime accepted these only once they were valid under the form's frozen schema (and asking
            # again now would fail the turn): checking them a second time could only refuse a valid answer.
            details = context.submitted_form_data
        else:
            details = {key: arguments[key] for key in ("affectedSystem", "impactScope") if arguments.get(key)}
            if validate_form_data(SUPPORT_TICKET_SCHEMA, details):
                # Before any side effect: the business rules say these two fields are needed.
                raise FormRequired(SUPPORT_TICKET_FORM)
        return ledger.record(
            "TICKET",
            {
                "title": arguments.get("title", "incident"),
                "priority": arguments.get("priority", "NORMAL"),
                "affectedSystem": details["affectedSystem"],
                "impactScope": details["impactScope"],
            },
        )

    return Tool(
        "create_support_ticket",
        "创建故障工单 (create an incident ticket)",
        create_support_ticket,
        idempotent=True,  # the ledger keys every write by the call's idempotency key
        parameters={
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "priority": {"type": "string", "enum": ["LOW", "NORMAL", "HIGH"]},
                "affectedSystem": {"type": "string", "description": "only if the user already said it"},
                "impactScope": {"type": "string", "enum": ["ONE_USER", "PARTIAL_USERS", "ALL_USERS"]},
            },
            "required": ["title"],
        },
    )


def _meeting_tool(ledger: TicketLedger) -> Tool:
    def reserve_meeting_room(arguments: dict[str, Any]) -> dict[str, Any]:
        attendees = int(arguments.get("attendees", 1))
        room = "Room A (8 seats)" if attendees <= 8 else "Auditorium (200 seats)"
        return ledger.record("BOOKING", {**arguments, "room": room})

    return Tool(
        "reserve_meeting_room",
        "根据完整资料预定会议室 (book a room from complete details)",
        reserve_meeting_room,
        idempotent=True,  # the ledger keys every write by the call's idempotency key
        parameters={"type": "object", "properties": {"topic": {"type": "string"}}},
    )


def _refund_tool(ledger: TicketLedger) -> Tool:
    def issue_refund(arguments: dict[str, Any]) -> dict[str, Any]:
        return ledger.record("REFUND", {"orderId": arguments["orderId"], "amount": arguments["amount"]})

    return Tool(
        "issue_refund",
        "Refund an order (moves money: needs a person's approval)",
        issue_refund,
        idempotent=True,  # the ledger keys every write by the call's idempotency key
        parameters={
            "type": "object",
            "properties": {"orderId": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["orderId", "amount"],
        },
    )


def _refunds_need_approval(turn: Turn, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
    if call.name == "issue_refund":
        return ToolApprovalDecision.require_approval(
            f"Refund {call.arguments.get('amount')} for {call.arguments.get('orderId')}?"
        )
    return ToolApprovalDecision.allow()


def demo_agents(ledger: TicketLedger | None = None, *, chat_model: ChatModel | None = None) -> list[Agent]:
    """The demo agents and tools, on ``chat_model`` (a real model) or, by default, the scripted demo model."""
    ledger = ledger or TicketLedger()
    model = chat_model if chat_model is not None else ScriptedChatModel(demo_model)
    support, meeting, refund = _support_tool(ledger), _meeting_tool(ledger), _refund_tool(ledger)
    return [
        Agent(
            id="support-agent",
            instructions="创建故障工单缺少必要信息时调用 request_user_input；不要猜测缺失字段。",
            chat_model=model,
            tools=[UserInputTool(forms=[SUPPORT_TICKET_FORM]), support],
        ),
        Agent(
            id="meeting-agent",
            instructions="用户要求预定会议室时先调用 request_user_input 选择 meeting_room_booking；"
            "提交后执行 reserve_meeting_room，不要只回复已收到表单。",
            chat_model=model,
            tools=[UserInputTool(forms=[MEETING_FORM]), meeting],
        ),
        Agent(
            id="refund-agent",
            instructions="Refunds move money: every refund waits for a person's approval.",
            chat_model=model,
            tools=[refund],
            approval_policy=_refunds_need_approval,
        ),
        Agent(
            id=DEMO_AGENT_ID,
            instructions="Help with incident tickets, meeting rooms and refunds. Never guess missing fields.",
            chat_model=model,
            tools=[UserInputTool(forms=[SUPPORT_TICKET_FORM, MEETING_FORM]), support, meeting, refund],
            approval_policy=_refunds_need_approval,
        ),
    ]
