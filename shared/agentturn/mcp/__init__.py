"""MCP servers as a tool source for agents (streamable HTTP, revision 2026-07-28), with durable elicitation.

One module per concern: :mod:`~agentturn.mcp.server` (the description a team writes), :mod:`~agentturn.mcp.transport`
(one JSON-RPC request), :mod:`~agentturn.mcp.listing` (tools, cached per process), :mod:`~agentturn.mcp.calls` (a
call, its input rounds, its result), :mod:`~agentturn.mcp.elicitation` (questions as cards, answers as responses),
:mod:`~agentturn.mcp.toolset` (an agent's servers as tools, and whom to ask before a call).
"""

from agentturn.mcp.server import Approve, MCPConfigError, MCPServer

__all__ = ["Approve", "MCPConfigError", "MCPServer"]
