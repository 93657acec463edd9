"""Agents for the browser tests: the demo agents plus one whose form is hostile.

The dev server loads them through ``AGENTTURN_AGENTS=tests.e2e.agents:e2e_agents``, the same setting a
deployment uses for its own agents.
"""

from __future__ import annotations

import time
from typing import Any, Final

from agentturn import (
    Agent,
    AiMessage,
    Approvers,
    FormDefinition,
    ScriptedChatModel,
    Tool,
    ToolCall,
    ToolMessage,
    UserInputTool,
    require_form,
)
from agentturn.agents.agent import ToolApprovalDecision
from agentturn.demo import demo_agents
from agentturn.demo.agents import DEMO_LABEL, demo_model
from agentturn.ports.chat_model import ChatRequest

HOSTILE_AGENT_ID: Final = "hostile-agent"
SLOW_WRITER_ID: Final = "slow-writer"
#: The support agent, with a model that takes 0.6 s to answer and a ticket tool that works 0.6 s: each phase
#: lasts longer than the live feed's status window (0.25 s), so a watching page is told of both.
SLOW_SUPPORT_ID: Final = "slow-support"
SLOW_PHASE_SECONDS: Final = 0.6
#: What the slow writer answers, 4 characters every 80 ms after 0.5 s (a model's latency): ~3.5 s of streaming.
SLOW_ANSWER: Final = (
    "Streaming, one piece at a time: the console shows each piece as it arrives, then the saved reply "
    "takes its place once the turn has stored it. Nothing here was typed by a person; a model wrote it."
)
IMG = "<img src=x onerror=alert(1)>"

#: Every string a console shows from a schema, each one an attempt at markup.
HOSTILE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "title": f"Title {IMG}",
    "description": "Description <script>alert('description')</script>",
    "properties": {
        "name": {
            "type": "string",
            "title": "Name <img src=x onerror=alert('field')>",
            "description": "<b onmouseover=alert('hint')>hint</b>",
        },
        "choice": {
            "type": "string",
            "title": "Choice",
            "enum": ["<img src=x onerror=alert('enum')>", "plain"],
        },
    },
    "required": ["name"],
}
HOSTILE_FORM: Final = FormDefinition("hostile_form", f"Form description {IMG}", HOSTILE_SCHEMA)


def _hostile_model(request: ChatRequest) -> AiMessage:
    last = request.messages[-1] if request.messages else None
    if isinstance(last, ToolMessage):
        return AiMessage(content=DEMO_LABEL + f"Thanks {IMG}")
    return AiMessage(
        tool_calls=[ToolCall(id="call-1", name="request_user_input", arguments={"formKey": HOSTILE_FORM.form_key})]
    )


DECISIONS_AGENT_ID: Final = "decisions-agent"
#: A refund that waits for two people of finance who are not the requester (the dev users fin-ana and fin-ben).
FINANCE_AGENT_ID: Final = "finance-refund-agent"

#: A form written for people: option labels from `oneOf` + `const` + `title` and from `x-enumNames`.
LABELLED_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "title": "Delivery preferences",
    "description": "Tell us how you want the parcel delivered.",
    "properties": {
        "recipient": {"type": "string", "title": "Recipient name", "minLength": 2},
        "speed": {
            "type": "string",
            "title": "Delivery speed",
            "oneOf": [
                {"const": "STD", "title": "Standard (3–5 days)"},
                {"const": "EXP", "title": "Express (next day)"},
            ],
        },
        "slot": {
            "type": "string",
            "title": "Time slot",
            "enum": ["AM", "PM"],
            "x-enumNames": ["Morning", "Afternoon"],
        },
    },
    "required": ["recipient", "speed"],
}
LABELLED_FORM: Final = FormDefinition(
    "delivery_preferences", "use when the user wants a parcel delivered (model-facing)", LABELLED_SCHEMA
)
LABELLED_AGENT_ID: Final = "labelled-agent"

REFUND_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "orderId": {"type": "string", "title": "Order"},
        "amount": {"type": "number", "title": "Amount", "minimum": 0},
    },
    "required": ["orderId", "amount"],
}


def _labelled_model(request: ChatRequest) -> AiMessage:
    last = request.messages[-1] if request.messages else None
    if isinstance(last, ToolMessage):
        return AiMessage(content=DEMO_LABEL + "**Booked.** Your parcel is on its way:\n\n- tracked\n- insured")
    return AiMessage(
        tool_calls=[ToolCall(id="call-1", name="request_user_input", arguments={"formKey": LABELLED_FORM.form_key})]
    )


def _decisions_model(request: ChatRequest) -> AiMessage:
    """Two refunds in one step (each waits for a decision), then a summary of what the tools answered."""
    answers = [m for m in request.messages if isinstance(m, ToolMessage)]
    if answers:
        return AiMessage(content=DEMO_LABEL + " / ".join(str(m.content) for m in answers))
    return AiMessage(
        tool_calls=[
            ToolCall(id="call-a", name="issue_refund", arguments={"orderId": "O-1", "amount": 10}),
            ToolCall(id="call-b", name="issue_refund", arguments={"orderId": "O-2", "amount": 20}),
        ]
    )


def _finance_model(request: ChatRequest) -> AiMessage:
    answers = [m for m in request.messages if isinstance(m, ToolMessage)]
    if answers:
        return AiMessage(content=DEMO_LABEL + "Refunded: " + str(answers[-1].content))
    return AiMessage(
        tool_calls=[ToolCall(id="call-r", name="issue_refund", arguments={"orderId": "O-7", "amount": 4200})]
    )


def _refund(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"refunded": arguments["orderId"], "amount": arguments["amount"]}


EXPENSE_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"amount": {"type": "number", "title": "Amount", "minimum": 0}},
    "required": ["amount"],
}
#: An expense the requester cannot code herself: whoever is on shift in finance fills in the form (one person).
FINANCE_FORM_AGENT_ID: Final = "finance-expense-agent"
EXPENSE_CODING_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "title": "Expense coding",
    "description": "Finance: where is this expense booked?",
    "properties": {
        "costCentre": {
            "type": "string",
            "title": "Cost centre",
            "description": "CC- and four digits, e.g. CC-4100",
            "pattern": "^CC-[0-9]{4}$",
        },
        "category": {
            "type": "string",
            "title": "Category",
            "oneOf": [{"const": "TRAVEL", "title": "Travel"}, {"const": "EQUIPMENT", "title": "Equipment"}],
        },
        "note": {"type": "string", "title": "Note to the requester", "maxLength": 200},
    },
    "required": ["costCentre", "category"],
}
EXPENSE_CODING_FORM: Final = FormDefinition(
    "expense_coding",
    "Expense coding (finance)",
    EXPENSE_CODING_SCHEMA,
    approvers=Approvers(groups=("finance",), exclude_requester=True),
)


def _book_expense(arguments: dict[str, Any]) -> dict[str, Any]:
    """Books nothing until finance has coded it: the form is asked before any side effect."""
    coding = require_form(EXPENSE_CODING_FORM)
    return {"booked": arguments["amount"], **coding}


def _expense_model(request: ChatRequest) -> AiMessage:
    answers = [m for m in request.messages if isinstance(m, ToolMessage)]
    if answers:
        booked = answers[-1].content
        if isinstance(booked, dict) and "costCentre" in booked:
            return AiMessage(content=DEMO_LABEL + f"Booked {booked['booked']} on {booked['costCentre']}.")
        # Declined (the tool's result is an error naming the reason) or failed: nothing was booked.
        return AiMessage(content=DEMO_LABEL + "Not booked: finance did not code the expense.")
    return AiMessage(tool_calls=[ToolCall(id="call-e", name="book_expense", arguments={"amount": 380})])


def _slow_support() -> Agent:
    support = next(agent for agent in demo_agents() if agent.id == "support-agent")
    ticket = support.tools["create_support_ticket"]

    def slowly(arguments: dict[str, Any]) -> Any:
        time.sleep(SLOW_PHASE_SECONDS)  # a tool's own work, not a wait for the test
        return ticket.function(arguments)

    return Agent(
        id=SLOW_SUPPORT_ID,
        instructions=support.instructions,
        chat_model=ScriptedChatModel(demo_model, first_delay=SLOW_PHASE_SECONDS),
        tools=[
            *(tool for name, tool in support.tools.items() if name != "create_support_ticket"),
            Tool(ticket.name, ticket.description, slowly, parameters=ticket.parameters, idempotent=ticket.idempotent),
        ],
    )


def e2e_agents() -> list[Agent]:
    hostile = Agent(
        id=HOSTILE_AGENT_ID,
        instructions="Ask for the hostile form.",
        chat_model=ScriptedChatModel(_hostile_model),
        tools=[UserInputTool(forms=[HOSTILE_FORM])],
    )
    slow = Agent(
        id=SLOW_WRITER_ID,
        instructions="Answer slowly, in pieces.",
        chat_model=ScriptedChatModel(
            lambda request: AiMessage(content=SLOW_ANSWER), chunk_chars=4, first_delay=0.5, delta_delay=0.08
        ),
    )
    labelled = Agent(
        id=LABELLED_AGENT_ID,
        instructions="Ask for the delivery form.",
        chat_model=ScriptedChatModel(_labelled_model),
        tools=[UserInputTool(forms=[LABELLED_FORM])],
    )
    decisions = Agent(
        id=DECISIONS_AGENT_ID,
        instructions="Refund two orders; each refund waits for a person.",
        chat_model=ScriptedChatModel(_decisions_model),
        tools=[Tool("issue_refund", "Refund an order", _refund, parameters=REFUND_PARAMETERS)],
        approval_policy=lambda turn, call, tool: ToolApprovalDecision.require_approval(
            f"Refund {call.arguments.get('amount')} for order {call.arguments.get('orderId')}?"
        ),
    )
    finance = Agent(
        id=FINANCE_AGENT_ID,
        instructions="Refund one order; two of finance approve it.",
        chat_model=ScriptedChatModel(_finance_model),
        tools=[Tool("issue_refund", "Refund an order", _refund, parameters=REFUND_PARAMETERS)],
        approval_policy=lambda turn, call, tool: ToolApprovalDecision.require_approval(
            "Refund over 1,000", approvers=Approvers(groups=("finance",), quorum=2, exclude_requester=True)
        ),
    )
    expense = Agent(
        id=FINANCE_FORM_AGENT_ID,
        instructions="Book an expense; finance codes it in a form.",
        chat_model=ScriptedChatModel(_expense_model),
        tools=[Tool("book_expense", "Book an expense", _book_expense, parameters=EXPENSE_PARAMETERS)],
    )
    return [*demo_agents(), hostile, slow, labelled, decisions, finance, expense, _slow_support()]
