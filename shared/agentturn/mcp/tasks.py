"""MCP's Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) on the client side: a ``tools/call`` the
server answers with a task (``resultType: "task"``) is followed durably.

The call's state keeps the ``taskId`` (beside the server, tool and arguments), and the tool raises
:class:`~agentturn.forms.rounds.PollLater` at the server's ``pollIntervalMs``: no worker waits between polls.
Each run polls ``tasks/get`` once: ``working`` polls later; ``input_required`` opens the same cards as a call's
input round (:func:`agentturn.mcp.calls.next_round`), whose answers go back with ``tasks/update`` before the next
poll; ``completed`` reads the task's ``result`` as a ``tools/call`` result; ``failed`` and ``cancelled`` are tool
errors the model reads. Every request about a task names it in ``Mcp-Name``, so that a load balancer can route it
to the instance holding it.
"""

from __future__ import annotations

import logging
from typing import Any

from agentturn.agents.tools import ToolContext
from agentturn.forms.rounds import InputRound, InputRoundRequired, PollLater
from agentturn.mcp.calls import (
    DEFAULT_POLL_SECONDS,
    MIN_POLL_SECONDS,
    TASK_CALL_CAPABILITIES,
    TASKS_EXTENSION,
    ToolError,
    complete,
    next_round,
)
from agentturn.mcp.elicitation import input_response
from agentturn.mcp.listing import MCPTool
from agentturn.mcp.server import MCPServer
from agentturn.mcp.transport import MCPError, send

_log = logging.getLogger("agentturn.mcp")

#: what ``tasks/update`` and ``tasks/cancel`` declare: the extension alone (SEP-2663: a server MUST refuse any
#: ``tasks/*`` request whose per-request capabilities lack it, with -32021, as FastMCP's tasks extension does)
TASK_METHOD_CAPABILITIES: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
#: what a task's status may be (SEP-2663)
WORKING, INPUT_REQUIRED, COMPLETED, FAILED, CANCELLED = "working", "input_required", "completed", "failed", "cancelled"


def _task_id(server: MCPServer, answer: dict[str, Any]) -> str:
    task_id = answer.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise ToolError(f"MCP server {server.name!r} answered a task without a taskId")
    return task_id


def _poll_seconds(answer: dict[str, Any], known: float | None) -> float:
    """The server's ``pollIntervalMs`` (it may change over the task's life), else the last one, else 5 s."""
    interval = answer.get("pollIntervalMs")
    if isinstance(interval, int | float) and not isinstance(interval, bool) and interval >= 0:
        return max(MIN_POLL_SECONDS, interval / 1000)
    return known if known is not None else DEFAULT_POLL_SECONDS


def task_created(
    server: MCPServer, tool: MCPTool, arguments: dict[str, Any], context: ToolContext, answer: dict[str, Any]
) -> PollLater:
    """The first answer was a task: keep its id and poll it later (the task is durable before it is answered)."""
    stored: dict[str, Any] = {
        "server": server.name,
        "url": server.url,
        "tool": tool.name,
        "arguments": arguments,
        "toolCallId": context.tool_call_id,
        "keys": [],
        "taskId": _task_id(server, answer),
        "pollSeconds": _poll_seconds(answer, None),
    }
    return PollLater(stored["pollSeconds"], {"mcp": _with_ttl({**stored, "learntAt": context.now}, answer)})


def _with_ttl(stored: dict[str, Any], task: dict[str, Any]) -> dict[str, Any]:
    """``stored`` with the deadline the task's latest ``ttlMs`` sets (a server may change it while the task
    lives), counted from when this client learnt of the task: its clock, not the server's ``createdAt``."""
    ttl = task.get("ttlMs")
    learnt_at = stored.get("learntAt")
    if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl >= 0 and isinstance(learnt_at, int | float):
        return {**stored, "expiresAt": learnt_at + ttl / 1000}
    return stored


def follow_task(
    server: MCPServer, tool: MCPTool, context: ToolContext, round_: InputRound, stored: dict[str, Any]
) -> Any:
    """One poll of the call's task (after sending the answers of its last round, if any)."""
    task_id = str(stored["taskId"])
    expires_at = stored.get("expiresAt")
    if isinstance(expires_at, int | float) and context.now > expires_at:
        # The server may have dropped it (SEP-2663: past its ttlMs a task may fail and be deleted at any time).
        raise ToolError(
            f"MCP task {task_id!r} of server {server.name!r} did not finish within its ttlMs; it was given up"
        )
    if round_.answers:
        modes = stored.get("modes", {})
        responses = {
            key: input_response(round_.answers[key], modes.get(key, "form"))
            for key in stored["keys"]
            if key in round_.answers
        }
        # Acknowledged at once, applied eventually: the poll below may still show the question, which is why
        # keys already answered are never asked again (the server must not reuse them, SEP-2663).
        send(
            server,
            "tasks/update",
            {"taskId": task_id, "inputResponses": responses},
            capabilities=TASK_METHOD_CAPABILITIES,
            name=task_id,
        )
        stored = {**stored, "answered": [*stored.get("answered", []), *responses]}
    task = send(server, "tasks/get", {"taskId": task_id}, capabilities=TASK_CALL_CAPABILITIES, name=task_id)
    stored = _with_ttl(stored, task)
    status = task.get("status")
    poll = _poll_seconds(task, stored.get("pollSeconds"))
    if status == COMPLETED:
        result = task.get("result")
        if not isinstance(result, dict):
            raise ToolError(f"MCP server {server.name!r} completed task {task_id!r} without a result object")
        return complete(server, tool, result)
    if status == FAILED:
        error = task.get("error")
        reason = error.get("message") if isinstance(error, dict) else None
        raise ToolError(f"MCP task {task_id!r} of server {server.name!r} failed: {reason or 'no reason given'}")
    if status == CANCELLED:
        raise ToolError(f"MCP task {task_id!r} of server {server.name!r} was cancelled")
    if status == INPUT_REQUIRED:
        answered = set(stored.get("answered", []))
        requests = task.get("inputRequests")
        fresh = {k: v for k, v in requests.items() if k not in answered} if isinstance(requests, dict) else {}
        if fresh:
            signal = next_round(
                server, tool, stored["arguments"], context, round_, {"inputRequests": fresh}, round_.number
            )
            return _ask(signal, task_id, poll, answered)
    elif status != WORKING:
        raise ToolError(f"MCP server {server.name!r} reported task {task_id!r} in unknown status {status!r}")
    raise PollLater(poll, {"mcp": {**stored, "keys": [], "pollSeconds": poll}})


def _ask(signal: InputRoundRequired, task_id: str, poll: float, answered: set[str]) -> Any:
    """The round's cards, its state naming the task: the answers are sent with ``tasks/update``.

    The task's lifetime is not kept: once a task asks a person, its ``ttlMs`` no longer cuts it short. Their
    answer is sent whenever it comes, and the server says whether the task still lives (a gone task is a tool
    error then)."""
    stored = signal.state["mcp"]
    stored.update({"taskId": task_id, "pollSeconds": poll, "answered": sorted(answered)})
    raise InputRoundRequired(signal.requests, {"mcp": stored}, expires_in=signal.expires_in)


def cancel_task(server: MCPServer, task_id: str) -> None:
    """Ask the server to stop a task nobody waits for any more (best effort)."""
    try:
        send(server, "tasks/cancel", {"taskId": task_id}, capabilities=TASK_METHOD_CAPABILITIES, name=task_id)
    except MCPError as exc:
        _log.warning("MCP server %r: tasks/cancel of %r failed: %s", server.name, task_id, exc)
