"""Agents for the browser tests: the demo agents plus one whose form is hostile.

The dev server loads them through ``AGENTTURN_AGENTS=tests.e2e.agents:e2e_agents``, the same setting a
deployment uses for its own agents.
"""

from __future__ import annotations

from typing import Any, Final

from agentturn import Agent, AiMessage, FormDefinition, ScriptedChatModel, ToolCall, ToolMessage, UserInputTool
from agentturn.chat import ChatRequest
from agentturn.demo import demo_agents
from agentturn.demo.agents import DEMO_LABEL

HOSTILE_AGENT_ID: Final = "hostile-agent"
SLOW_WRITER_ID: Final = "slow-writer"
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
    return [*demo_agents(), hostile, slow]
