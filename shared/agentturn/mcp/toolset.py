"""An agent's MCP servers as tools, and the approval policy their calls pass."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentturn.agents.tools import Tool
from agentturn.mcp.calls import MCPToolAdapter
from agentturn.mcp.listing import MCPTool, list_tools
from agentturn.mcp.server import Approve, MCPConfigError, MCPServer
from agentturn.mcp.transport import MCPError

if TYPE_CHECKING:
    from agentturn.agents.agent import ApprovalPolicy, ToolApprovalDecision
    from agentturn.state.messages import ToolCall
    from agentturn.state.turn import Turn

_log = logging.getLogger("agentturn.mcp")


def checked_servers(servers: Sequence[MCPServer]) -> tuple[MCPServer, ...]:
    names: set[str] = set()
    for server in servers:
        if not isinstance(server, MCPServer):
            raise TypeError(f"mcp_servers takes MCPServer descriptions, got {type(server).__name__}")
        if server.name in names:
            raise MCPConfigError(f"two MCP servers are named {server.name!r}: give one of them another name=")
        names.add(server.name)
    return tuple(servers)


def server_tools(servers: Sequence[MCPServer]) -> list[Tool]:
    """Every tool of every server that can be listed now (a server that cannot is left out, and logged: its
    calls then come back to the model as calls of an unknown tool, not as a failed turn)."""
    tools: list[Tool] = []
    for server in servers:
        try:
            listed = list_tools(server)
        except MCPError as exc:
            _log.warning("MCP server %r offers no tools now: %s", server.name, exc)
            continue
        tools.extend(_adapter(server, tool) for tool in listed)
    return tools


#: adapters by (server, tool name), reused while the listing that made them is the cached one
_adapters: dict[tuple[int, str], tuple[MCPTool, MCPToolAdapter]] = {}


def _adapter(server: MCPServer, tool: MCPTool) -> MCPToolAdapter:
    key = (id(server), tool.name)
    known = _adapters.get(key)
    if known is not None and known[0] is tool and known[1].server is server:
        return known[1]
    adapter = MCPToolAdapter(server, tool)
    _adapters[key] = (tool, adapter)
    return adapter


def needs_approval(tool: MCPToolAdapter, arguments: Mapping[str, Any]) -> bool:
    approve = tool.server.approve
    if callable(approve) and not isinstance(approve, Approve):
        return bool(approve(tool.mcp, dict(arguments)))
    if approve is Approve.ALL:
        return True
    if approve is Approve.NONE:
        return False
    if approve is Approve.DESTRUCTIVE:
        return tool.mcp.destructive
    return not tool.mcp.read_only


def with_mcp_approval(own: ApprovalPolicy | None) -> Callable[[Turn, ToolCall, Tool], ToolApprovalDecision]:
    """The agent's policy for its own tools; for an MCP tool, the agent's policy first (a deny or a demand for
    approval stands), then the server's ``approve=``."""
    from agentturn.agents.agent import ApprovalVerdict, ToolApprovalDecision

    def policy(turn: Turn, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
        decision = own(turn, call, tool) if own is not None else ToolApprovalDecision.allow()
        if not isinstance(tool, MCPToolAdapter) or decision.verdict is not ApprovalVerdict.ALLOW:
            return decision
        if needs_approval(tool, call.arguments):
            label = tool.mcp.title or tool.mcp.name
            return ToolApprovalDecision.require_approval(f"MCP server {tool.server.name!r} wants to run {label!r}")
        return decision

    return policy
