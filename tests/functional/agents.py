"""Agents the functional tests deploy through ``AGENTTURN_AGENTS`` (as a user deploys their own)."""

from __future__ import annotations

from agentturn import Agent, Approvers, ExecutionPolicy
from agentturn.demo import demo_agents


def short_wait_agents() -> list[Agent]:
    """The demo support agent, whose forms expire an hour after they are asked for."""
    support = next(a for a in demo_agents() if a.id == "support-agent")
    return [
        Agent(
            id=support.id,
            instructions=support.instructions,
            chat_model=support.chat_model,
            tools=list(support.tools.values()),
            policy=ExecutionPolicy(input_timeout=3600.0),
        )
    ]


def demo_agents_without_assistant() -> list[Agent]:
    """A later deployment that dropped the (default) assistant agent: its turns can no longer run."""
    return [a for a in demo_agents() if a.id != "assistant"]


def throttled_model_agents() -> list[Agent]:
    """One agent whose model provider is throttling every call (Bedrock's ThrottlingException, retryable)."""
    from agentturn import AiMessage, ChatRequest, ScriptedChatModel
    from agentturn.errors import ModelError, ModelErrorKind

    def throttled(request: ChatRequest) -> AiMessage:
        raise ModelError(
            "Too many requests, please wait before trying again.",
            kind=ModelErrorKind.THROTTLED,
            provider="bedrock",
            model="demo",
            status=429,
            code="ThrottlingException",
            retryable=True,
        )

    return [Agent(id="throttled", instructions="", chat_model=ScriptedChatModel(throttled))]


def mcp_agents() -> list[Agent]:
    """An agent whose only tools are an MCP server's (its URL from the environment, as a team would configure
    it); its scripted model creates a ticket on that server and answers with the server's text."""
    import os

    from agentturn import AiMessage, ChatRequest, MCPServer, ScriptedChatModel, ToolCall, ToolMessage

    def model(request: ChatRequest) -> AiMessage:
        last = request.messages[-1]
        if isinstance(last, ToolMessage):
            content = last.content if isinstance(last.content, dict) else {}
            return AiMessage(content=str(content.get("text") or content.get("message") or content))
        return AiMessage(tool_calls=[ToolCall(id="call-1", name="desk__create_ticket", arguments={"title": "login"})])

    server = MCPServer(os.environ["AGENTTURN_TEST_MCP_URL"], name="desk", approve="none")
    return [Agent(id="mcp-agent", instructions="", chat_model=ScriptedChatModel(model), mcp_servers=[server])]


def mcp_task_agents() -> list[Agent]:
    """An agent whose one tool is ``odd`` of the test server's ``/scripted`` endpoint (a server that answers with
    a task: :mod:`tests.functional.test_mcp_task_flow`)."""
    import os

    from agentturn import AiMessage, ChatRequest, MCPServer, ScriptedChatModel, ToolCall, ToolMessage

    def model(request: ChatRequest) -> AiMessage:
        last = request.messages[-1]
        if isinstance(last, ToolMessage):
            content = last.content if isinstance(last.content, dict) else {}
            return AiMessage(content=str(content.get("text") or content.get("message") or content))
        return AiMessage(tool_calls=[ToolCall(id="call-1", name="odd__odd", arguments={})])

    server = MCPServer(os.environ["AGENTTURN_TEST_MCP_URL"], name="odd", approve="none")
    return [Agent(id="mcp-task-agent", instructions="", chat_model=ScriptedChatModel(model), mcp_servers=[server])]


def mcp_fastmcp_task_agents() -> list[Agent]:
    """An agent whose tools are those of the FastMCP server with FastMCP's own Tasks extension
    (:mod:`tests.support.mcp_task_server`); the person's words name the tool and its argument ("deploy api",
    "report 3", "migrate", "crash"), and the model answers with the tool's text or error."""
    import os

    from agentturn import AiMessage, ChatRequest, MCPServer, ScriptedChatModel, ToolCall, ToolMessage

    def model(request: ChatRequest) -> AiMessage:
        last = request.messages[-1]
        if isinstance(last, ToolMessage):
            content = last.content if isinstance(last.content, dict) else {}
            return AiMessage(content=str(content.get("text") or content.get("message") or content))
        verb, _, rest = str(request.messages[0].content).partition(" ")
        arguments: dict[str, object] = {}
        if verb == "deploy":
            arguments = {"service": rest}
        elif verb == "report":
            arguments = {"polls": int(rest)}
        return AiMessage(tool_calls=[ToolCall(id="call-1", name=f"ops__{verb}", arguments=arguments)])

    server = MCPServer(os.environ["AGENTTURN_TEST_MCP_URL"], name="ops", approve="none")
    return [Agent(id="ops-agent", instructions="", chat_model=ScriptedChatModel(model), mcp_servers=[server])]


# ------------------------------------------------------------------ deploys between a question and its answer

#: What the refund desk asks for before it refunds: the form a turn of version 1 waits on.
REFUND_FORM_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"orderId": {"type": "string", "minLength": 1}},
    "required": ["orderId"],
}


def _refund_desk(version: str, *, continues: list[str], schema: dict[str, object], with_refund: bool = True) -> Agent:
    """An agent whose model asks for the refund form, then calls ``issue_refund`` (approval required), then
    answers; ``version`` says which deploy it is in its final answer."""
    from typing import Any

    from agentturn import (
        AiMessage,
        ChatRequest,
        FormDefinition,
        ScriptedChatModel,
        Tool,
        ToolApprovalDecision,
        ToolCall,
        ToolMessage,
        UserInputTool,
    )

    def model(request: ChatRequest) -> AiMessage:
        last = request.messages[-1]
        if not isinstance(last, ToolMessage):
            return AiMessage(
                tool_calls=[ToolCall(id="ask", name="request_user_input", arguments={"formKey": "refund"})]
            )
        if last.tool_name == "request_user_input":
            return AiMessage(tool_calls=[ToolCall(id="pay", name="issue_refund", arguments={"orderId": "O-1"})])
        return AiMessage(content=f"refunded by version {version}")

    def issue_refund(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"refunded": arguments["orderId"]}

    tools: list[Tool] = [UserInputTool(forms=[FormDefinition("refund", "Which order to refund", schema)])]
    if with_refund:
        tools.append(Tool("issue_refund", "Refund an order", issue_refund))
    return Agent(
        id="refund-desk",
        instructions="",
        chat_model=ScriptedChatModel(model),
        tools=tools,
        version=version,
        approval_policy=lambda turn, call, tool: ToolApprovalDecision.require_approval("refund?"),
        continues=continues,
    )


def refund_desk_v1() -> list[Agent]:
    return [_refund_desk("1", continues=[], schema=REFUND_FORM_SCHEMA)]


def refund_desk_v2() -> list[Agent]:
    """The next deploy: version 2 only, continuing the turns version 1 left waiting."""
    return [_refund_desk("2", continues=["1"], schema=REFUND_FORM_SCHEMA)]


def refund_desk_v2_other_form() -> list[Agent]:
    """A next deploy whose refund form asks for something else than the form people were shown."""
    changed = {**REFUND_FORM_SCHEMA, "required": ["orderId", "reason"]}
    return [_refund_desk("2", continues=["1"], schema=changed)]


def refund_desk_v2_without_refunds() -> list[Agent]:
    """A next deploy that continues version 1 but no longer has the tool its turns wait to run."""
    return [_refund_desk("2", continues=["1"], schema=REFUND_FORM_SCHEMA, with_refund=False)]


def people_agents() -> list[Agent]:
    """A refund agent whose refunds wait for two people of finance who are not the requester."""
    return _refund_agents(Approvers(groups=("finance",), quorum=2, exclude_requester=True))


def escalating_people_agents() -> list[Agent]:
    """A refund agent whose refunds wait for one of finance, and move to managers after 4 hours."""
    return _refund_agents(Approvers(groups=("finance",), escalate_after=4 * 3600.0, escalate_to="managers"))


def _refund_agents(approvers: Approvers) -> list[Agent]:
    from typing import Any

    from agentturn import (
        AiMessage,
        ChatRequest,
        ScriptedChatModel,
        Tool,
        ToolApprovalDecision,
        ToolCall,
        ToolMessage,
        Turn,
    )

    def model(request: ChatRequest) -> AiMessage:
        last = request.messages[-1]
        if isinstance(last, ToolMessage):
            return AiMessage(content=f"done: {last.content}")
        return AiMessage(tool_calls=[ToolCall(id="call-r", name="issue_refund", arguments={"amount": 4200})])

    def policy(turn: Turn, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
        return ToolApprovalDecision.require_approval("refund over 1,000", approvers=approvers)

    def issue_refund(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"refunded": arguments["amount"]}

    return [
        Agent(
            id="refunds",
            instructions="",
            chat_model=ScriptedChatModel(model),
            tools=[Tool("issue_refund", "refund an order", issue_refund)],
            approval_policy=policy,
        )
    ]
