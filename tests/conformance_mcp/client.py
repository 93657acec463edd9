"""The shim the official MCP conformance suite runs as "the client": agentturn's own MCP client, driven the way
an agent drives it.

``conformance client --command "python tests/conformance_mcp/client.py"`` starts a mock server per scenario,
then runs this with the server's URL as the last argument and the scenario in ``MCP_CONFORMANCE_SCENARIO``
(``MCP_CONFORMANCE_CONTEXT``: the arguments some scenarios want). Nothing here speaks MCP itself: an in-memory
agentturn runner with a scripted model calls the server's tools through ``Agent(mcp_servers=[MCPServer(url)])``;
a question (``input_required``) waits as a card like any other, the "person" below accepts every card with the
simplest values its schema allows, and a worker continues the turn, which retries the call as agentturn does.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    InMemoryChatMemory,
    InMemoryTurnStore,
    MCPServer,
    ResumeCommand,
    Runner,
    ScriptedChatModel,
    ToolCall,
    TurnStatus,
    UserMessage,
    Worker,
)
from agentturn.state.messages import FormMessage

#: scenarios whose server answers ``tools/list`` only: the agent lists (and offers) the tools and calls none
LIST_ONLY = frozenset({"json-schema-ref-no-deref", "request-metadata"})
#: rounds of "a person answers, a worker continues" before the shim gives up
MAX_ROUNDS = 20
SERVER = "conf"
#: seconds per request: the suite runs on loaded test machines, and the mock servers answer at once anyway
TIMEOUT_S = 30.0


def simplest(schema: dict[str, Any]) -> Any:
    """A value that fits a primitive schema (the "person" and the "model" of this shim type nothing clever)."""
    if "const" in schema:
        return schema["const"]
    for key in ("enum", "oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            first = options[0]
            return first.get("const") if isinstance(first, dict) else first
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        return schema.get("minimum", 2 if kind == "integer" else 2.0)
    if kind == "array":
        items = schema.get("items")
        return [simplest(items)] if isinstance(items, dict) else []
    if kind == "object":
        return arguments_for(schema)
    return "x" * int(schema.get("minLength", 1))


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    return {name: simplest(prop) for name, prop in properties.items() if isinstance(prop, dict)}


def planned_calls(scenario: str, context: dict[str, Any], request: ChatRequest) -> list[ToolCall]:
    """What the scripted model calls on its first step: the scenario's own calls where it names them, else every
    tool offered, each with the simplest arguments its schema allows."""
    offered = {spec.name.removeprefix(f"{SERVER}__"): spec for spec in request.tools}
    if scenario in LIST_ONLY:
        return []
    wanted: list[tuple[str, dict[str, Any]]]
    if isinstance(context.get("toolCalls"), list):
        wanted = [(call["name"], call.get("arguments") or {}) for call in context["toolCalls"]]
    elif scenario == "json-schema-2020-12-preservation":
        # The scenario's contract: echo the focal tool's inputSchema exactly as it was offered to the model.
        wanted = [("json_schema_echo", {"schema": offered["json_schema_2020_12_tool"].parameters})]
    else:
        wanted = [(name, arguments_for(spec.parameters)) for name, spec in offered.items()]
    return [ToolCall(id=f"call-{i}", name=f"{SERVER}__{name}", arguments=args) for i, (name, args) in enumerate(wanted)]


def model(scenario: str, context: dict[str, Any]) -> ScriptedChatModel:
    def step(request: ChatRequest) -> AiMessage:
        if isinstance(request.messages[-1], UserMessage):
            calls = planned_calls(scenario, context, request)
            if calls:
                return AiMessage(content="", tool_calls=calls)
        return AiMessage(content="done")

    return ScriptedChatModel(step)


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    agent = Agent(
        id="conformance",
        instructions="Call the server's tools.",
        chat_model=model(scenario, context),
        mcp_servers=[MCPServer(url, name=SERVER, approve="none", timeout=TIMEOUT_S)],
    )
    runner = Runner(store=InMemoryTurnStore(), chat_memory=InMemoryChatMemory(), agents=[agent])
    turn = runner.run(agent, "conformance", f"run scenario {scenario}")
    for _ in range(MAX_ROUNDS):
        if turn.status is not TurnStatus.WAITING_FOR_USER:
            break
        for card in turn.pending_cards():
            if isinstance(card, FormMessage):
                answer = arguments_for(card.schema)
                print(f"person accepts {card.action_id}: {json.dumps(answer)}", file=sys.stderr)
                runner.submit_resume(turn.id, ResumeCommand.submit_form(card.action_id, answer))
        Worker(runner).process(turn.id)
        turn = runner.store.load(turn.id)
    print(f"turn {turn.id} ended {turn.status.value}", file=sys.stderr)
    for message in turn.messages:
        print(json.dumps(message.to_wire(), default=str)[:2000], file=sys.stderr)
    return 0 if turn.status is TurnStatus.COMPLETED else 1


if __name__ == "__main__":
    sys.exit(main())
