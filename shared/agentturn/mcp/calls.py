"""One MCP tool as an agentturn tool: the call, its input rounds, and what the model is told of the result.

A ``tools/call`` that answers ``resultType: "input_required"`` (MCP's multi round-trip requests) raises
:class:`~agentturn.forms.rounds.InputRoundRequired`: the turn waits on one card per question, durably, for as
long as the person takes; the snapshot keeps the server, the tool, the arguments, the call id, the keys and
``requestState`` exactly as received. Once every card is settled, the tool runs again and the call is retried
(a new JSON-RPC id) with ``inputResponses`` under the same keys and that ``requestState``.

Every failure of the server (unreachable, too slow, garbage, a JSON-RPC error, ``isError``, structured content
that breaks its ``outputSchema``, a question outside MCP's form subset, too large a ``requestState``, too many
rounds) is returned to the model as a tool error: the turn goes on, and the model can say what happened.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from agentturn.agents.tools import Tool, ToolContext
from agentturn.forms.rounds import InputRequest, InputRound, InputRoundRequired
from agentturn.forms.schema_rules import SchemaRefusedError
from agentturn.forms.validation import form_validator, validate_form_data
from agentturn.mcp.elicitation import ElicitationRefused, form_request, input_response, url_request
from agentturn.mcp.listing import MCPTool, namespaced
from agentturn.mcp.server import MCPServer
from agentturn.mcp.transport import MCPError, MCPRemoteError, send

_log = logging.getLogger("agentturn.mcp")

#: ``_meta`` key of agentturn's idempotency key on calls of tools that are not read-only
IDEMPOTENCY_META_KEY = "io.github.agentturn/idempotencyKey"
#: what this client can answer on a ``tools/call``: form- and URL-mode elicitation, durably (per request)
CALL_CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
#: the Tasks extension's identifier: declared on ``tools/call``, since this client persists a task and polls it
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_CALL_CAPABILITIES: dict[str, Any] = {**CALL_CAPABILITIES, "extensions": {TASKS_EXTENSION: {}}}
#: seconds between polls of a task whose server suggests no ``pollIntervalMs`` (the extension's usual default)
DEFAULT_POLL_SECONDS = 5.0
#: no poll waits less (a server asking for 0 ms would have the turn spin through the queue)
MIN_POLL_SECONDS = 1.0


class MCPToolAdapter(Tool):
    """An MCP server's tool as the agent holds it (the server and the listing are kept for the approval policy)."""

    def __init__(self, server: MCPServer, tool: MCPTool) -> None:
        label = tool.title or tool.name
        super().__init__(
            namespaced(server.name, tool.name),
            f"[MCP server {server.name!r}, tool {label!r}] {tool.description}".strip(),
            lambda arguments: call_tool(server, tool, arguments),
            parameters=tool.input_schema,
            metadata={"mcp": {"server": server.name, "tool": tool.name, "annotations": dict(tool.annotations)}},
        )
        self.server = server
        self.mcp = tool

    def abandon(self, state: Mapping[str, Any]) -> None:
        """The turn ended while this call followed a task: ``tasks/cancel`` (cooperative: the server acknowledges
        and may still finish the work; a server that cannot be reached is logged, the turn's end stands)."""
        stored = state.get("mcp")
        if not isinstance(stored, dict) or stored.get("server") != self.server.name or "taskId" not in stored:
            return
        from agentturn.mcp.tasks import cancel_task

        cancel_task(self.server, str(stored["taskId"]))


#: JSON-RPC "Invalid params": what a server answers to a requestState it cannot verify (expired, or sealed with a
#: key it no longer has)
INVALID_PARAMS = -32602


class ToolError(Exception):
    """Ends the call with a tool error the model reads."""


def error_result(message: str) -> dict[str, Any]:
    """The same shape as any tool's failure (``agentturn.engine.tool_results.tool_failed``)."""
    return {"status": "error", "error": "tool_failed", "message": message}


def call_tool(server: MCPServer, tool: MCPTool, arguments: dict[str, Any]) -> Any:
    context = ToolContext.current()
    try:
        if server.live:
            from agentturn.mcp.legacy import call_live  # servers before 2026-07-28 only

            return call_live(server, tool, arguments, context)
        return _call(server, tool, arguments, context)
    except (ToolError, MCPError) as exc:
        _log.info("MCP call %r of server %r ended as a tool error: %s", tool.name, server.name, exc)
        return error_result(str(exc))


def _call(server: MCPServer, tool: MCPTool, arguments: dict[str, Any], context: ToolContext) -> Any:
    round_ = context.input_round
    params: dict[str, Any] = {"name": tool.name, "arguments": arguments}
    if round_ is not None and "taskId" in round_.state.get("mcp", {}):
        from agentturn.mcp.tasks import follow_task  # only a call the server made a task

        return follow_task(server, tool, context, round_, stored_round(server, tool, round_))
    if round_ is not None:
        stored = stored_round(server, tool, round_)
        params["arguments"] = stored["arguments"]
        modes = stored.get("modes", {})
        params["inputResponses"] = {
            key: input_response(round_.answers[key], modes.get(key, "form"))
            for key in stored["keys"]
            if key in round_.answers
        }
        if "requestState" in stored:
            params["requestState"] = stored["requestState"]
    if not tool.read_only:
        # The key is the same on every retry of this logical call: the server can recognise a repeat.
        params["_meta"] = {IDEMPOTENCY_META_KEY: context.idempotency_key}
    asked = round_.number if round_ is not None else 0
    # One deadline for the whole execution (a state-only retry included): a tool step that starts inside the
    # run function's yield margin ends before the function's own timeout.
    end = time.monotonic() + server.timeout
    while True:
        try:
            result = send(
                server,
                "tools/call",
                params,
                capabilities=TASK_CALL_CAPABILITIES,
                name=tool.name,
                extra_headers=_param_headers(tool, params["arguments"]),
                timeout=end - time.monotonic(),
            )
        except MCPRemoteError as refused:
            if refused.code != INVALID_PARAMS or "requestState" not in params:
                raise
            # The server no longer accepts the state it gave (it expires, or its key changed with a restart),
            # while a person took days to answer. Sent again without it, the answers still name the server's
            # own questions: a server that needs more asks again (a new round, pre-filled), never a failure.
            _log.info("MCP server %r refused its requestState on %r; retried without it", server.name, tool.name)
            params = {k: v for k, v in params.items() if k != "requestState"}
            continue
        result_type = result.get("resultType", "complete")  # servers before 2026-07-28 omit it
        state = result.get("requestState")
        if result_type != "input_required" or result.get("inputRequests") or not isinstance(state, str):
            break
        # State and no question: the spec lets a client retry at once (a new id, the state, no responses).
        asked += 1
        if asked >= server.max_rounds:
            raise ToolError(f"MCP server {server.name!r} asked for input {asked} times; the call was given up")
        params = {**{k: v for k, v in params.items() if k != "inputResponses"}, "requestState": state}
    if result_type == "task":
        from agentturn.mcp.tasks import task_created

        raise task_created(server, tool, params["arguments"], context, result)
    if result_type == "input_required":
        raise next_round(server, tool, params["arguments"], context, round_, result, asked)
    if result_type != "complete":
        raise ToolError(f"MCP server {server.name!r} answered an unknown resultType {result_type!r}")
    return complete(server, tool, result)


def _param_headers(tool: MCPTool, arguments: dict[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers the tool's ``x-mcp-header`` annotations ask for (absent values: no header)."""
    headers: dict[str, str] = {}
    for path, name in tool.header_params:
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, bool):
            headers[f"Mcp-Param-{name}"] = "true" if value else "false"
        elif isinstance(value, int | str):
            headers[f"Mcp-Param-{name}"] = str(value)
    return headers


def stored_round(server: MCPServer, tool: MCPTool, round_: InputRound) -> dict[str, Any]:
    stored = round_.state.get("mcp")
    if not isinstance(stored, dict) or stored.get("server") != server.name or stored.get("tool") != tool.name:
        raise ToolError(f"the waiting input round does not belong to {server.name!r}/{tool.name!r}")
    return stored


def next_round(
    server: MCPServer,
    tool: MCPTool,
    arguments: dict[str, Any],
    context: ToolContext,
    round_: InputRound | None,
    result: dict[str, Any],
    asked: int,
) -> InputRoundRequired:
    if asked >= server.max_rounds:
        raise ToolError(
            f"MCP server {server.name!r} asked for input {asked + 1} times on {tool.name!r}; "
            f"the limit is {server.max_rounds}, so the call was given up"
        )
    state = result.get("requestState")
    if state is not None and not isinstance(state, str):
        raise ToolError(f"MCP server {server.name!r} sent a requestState that is not a string")
    if state is not None and len(state.encode()) > server.max_request_state_bytes:
        raise ToolError(
            f"MCP server {server.name!r} sent a requestState of {len(state.encode())} bytes; "
            f"at most {server.max_request_state_bytes} are kept while a person answers"
        )
    requests = result.get("inputRequests")
    if requests is None or requests == {}:
        # Only state, no question: the spec lets a client retry at once; a retry that keeps asking nothing
        # ends at the round limit like any other.
        raise ToolError(f"MCP server {server.name!r} asked for input without any question")
    if not isinstance(requests, dict):
        raise ToolError(f"MCP server {server.name!r} sent inputRequests that is not an object")
    cards: list[InputRequest] = []
    for key, request in requests.items():
        cards.append(_card(server, key, request, round_))
    modes = {card.key: str(card.origin.get("mode", "form")) for card in cards}
    stored: dict[str, Any] = {
        "server": server.name,
        "url": server.url,
        "tool": tool.name,
        "arguments": arguments,
        "toolCallId": context.tool_call_id,
        "keys": list(requests),
    }
    if any(mode != "form" for mode in modes.values()):
        stored["modes"] = modes
    if state is not None:
        stored["requestState"] = state
    try:
        return InputRoundRequired(cards, {"mcp": stored})
    except ValueError as exc:  # arguments and state together too large to keep
        raise ToolError(f"MCP server {server.name!r} asked for input, but the call cannot wait: {exc}") from None


def _card(server: MCPServer, key: str, request: Any, round_: InputRound | None) -> InputRequest:
    if not isinstance(request, dict) or not isinstance(request.get("params"), dict):
        raise ToolError(f"MCP server {server.name!r} sent input request {key!r} that is not a request object")
    if request.get("method") != "elicitation/create":
        # Only elicitation was declared: anything else breaks the server's side of the protocol.
        raise ToolError(
            f"MCP server {server.name!r} asked {request.get('method')!r} for {key!r}; this client declared only "
            "elicitation"
        )
    params = request["params"]
    mode = params.get("mode", "form")
    if mode not in ("form", "url"):
        raise ToolError(f"MCP server {server.name!r} asked in mode {mode!r}, which this client did not declare")
    previous = round_.answers.get(key) if round_ is not None else None
    try:
        if mode == "url":
            return url_request(server, key, params)
        return form_request(server, key, params, previous)
    except ElicitationRefused as exc:
        raise ToolError(f"MCP server {server.name!r} asked a question agentturn will not show: {exc}") from None


def complete(server: MCPServer, tool: MCPTool, result: dict[str, Any]) -> Any:
    content = result.get("content", [])
    if not isinstance(content, list):
        raise ToolError(f"MCP server {server.name!r} answered content that is not a list")
    text = _text(content)
    if result.get("isError") is True:
        raise ToolError(f"MCP tool {tool.name!r} of server {server.name!r} failed: {text or 'no reason given'}")
    answer: dict[str, Any] = {}
    if text:
        answer["text"] = text
    if "structuredContent" in result:
        structured = result["structuredContent"]
        _check_output(server, tool, structured)
        answer["structuredContent"] = structured
    elif tool.output_schema is not None:
        raise ToolError(f"MCP tool {tool.name!r} declares an outputSchema but returned no structuredContent")
    return answer


def _check_output(server: MCPServer, tool: MCPTool, structured: Any) -> None:
    """The form validator's one rule, on the tool's ``outputSchema`` (a schema it cannot check safely is not
    used: the content passes unchecked, and the log says so)."""
    schema = tool.output_schema
    if schema is None:
        return
    if not isinstance(structured, dict):
        # The validator checks objects; a value of another type is checked as the only field of one.
        schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
        structured = {"value": structured}
    try:
        form_validator(schema)
    except SchemaRefusedError as exc:
        _log.warning("MCP tool %r: outputSchema not checked (%s)", tool.name, exc)
        return
    problems = validate_form_data(schema, structured)
    if problems:
        listed = "; ".join(f"{p['path'] or '/'}: {p['message']}" for p in problems[:5])
        raise ToolError(f"MCP tool {tool.name!r} returned structuredContent that breaks its outputSchema: {listed}")


def _text(content: list[Any]) -> str:
    """Text content as is; other content named, not inlined (the model gets no base64)."""
    parts: list[str] = []
    for item in content:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "text" and isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif kind == "resource_link":
            parts.append(f"[resource {item.get('name') or ''} {item.get('uri') or ''}]".replace("  ", " "))
        elif kind == "resource" and isinstance(item.get("resource"), dict):
            resource = item["resource"]
            if isinstance(resource.get("text"), str):
                parts.append(resource["text"])
            else:
                parts.append(f"[resource {resource.get('uri') or ''} ({resource.get('mimeType') or 'binary'})]")
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {item.get('mimeType') or ''} not shown]")
    return "\n".join(parts)
