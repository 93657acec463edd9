"""A server's tools: listed once per process (and again after ``list_ttl``), namespaced for the model."""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agentturn.mcp.server import MCPServer
from agentturn.mcp.transport import MCPError, MCPTransportError, send

_log = logging.getLogger("agentturn.mcp")

#: pages of ``tools/list`` read at most (a server that pages forever is cut off)
MAX_PAGES = 20
#: seconds a failed listing is remembered, so one run does not wait for a dead server at every step
FAILURE_TTL = 30.0
_SEPARATOR = "__"


@dataclass(frozen=True)
class MCPTool:
    """One tool as its server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    #: arguments mirrored into ``Mcp-Param-<name>`` headers: (path of ``properties`` keys, name)
    header_params: tuple[tuple[tuple[str, ...], str], ...] = ()

    @property
    def read_only(self) -> bool:
        return self.annotations.get("readOnlyHint") is True

    @property
    def destructive(self) -> bool:
        """MCP's defaults: a tool that is not read-only is destructive unless it says otherwise."""
        return not self.read_only and self.annotations.get("destructiveHint", True) is not False


def namespaced(server: str, tool: str) -> str:
    """``<server>__<tool>`` within the model's tool-name rules (64 of ``[A-Za-z0-9_-]``): a name that does not
    fit as it is gets a short digest of the original, so two tools of one server never collide."""
    plain = f"{server}{_SEPARATOR}{tool}"
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", plain):
        return plain
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", tool)[: 64 - len(server) - len(_SEPARATOR) - 9]
    return f"{server}{_SEPARATOR}{cleaned}_{digest}"


_lock = threading.Lock()
_cache: dict[tuple[str, str], tuple[float, list[MCPTool] | MCPError]] = {}


def _key(server: MCPServer) -> tuple[str, str]:
    # The headers pick the identity the server lists for: a different token may see other tools. A function of
    # headers stands for its identity itself (calling it here would read a secret store at every lookup).
    source = server.headers
    identity = f"callable:{id(source)}" if callable(source) else repr(sorted(source.items()))
    return server.url, hashlib.sha256(identity.encode()).hexdigest()


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def list_tools(server: MCPServer) -> list[MCPTool]:
    """The server's tools (cached per process); :class:`MCPError` when it cannot be listed."""
    key = _key(server)
    now = time.monotonic()
    with _lock:
        cached = _cache.get(key)
    if cached is not None and cached[0] > now:
        if isinstance(cached[1], MCPError):
            raise cached[1]
        return list(cached[1])
    try:
        tools = _fetch(server)
    except MCPError as exc:
        with _lock:
            _cache[key] = (now + FAILURE_TTL, exc)
        raise
    with _lock:
        _cache[key] = (now + server.list_ttl, tools)
    return list(tools)


def _fetch(server: MCPServer) -> list[MCPTool]:
    tools: list[MCPTool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        if server.live:
            from agentturn.mcp import legacy  # servers before 2026-07-28 only

            result = legacy.send(server, "tools/list", params)
        else:
            result = send(server, "tools/list", params)
        listed = result.get("tools")
        if not isinstance(listed, list):
            raise MCPTransportError(f"MCP server {server.name!r} listed no tools array")
        for entry in listed:
            tool = _tool(server, entry)
            if tool is not None:
                tools.append(tool)
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            return tools
    _log.warning("MCP server %r pages its tools past %d pages; the rest are ignored", server.name, MAX_PAGES)
    return tools


def _tool(server: MCPServer, entry: Any) -> MCPTool | None:
    """One listed tool, or None (logged) for an entry that cannot be offered to a model."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
        _log.warning("MCP server %r listed a tool without a name; skipped", server.name)
        return None
    schema = entry.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        _log.warning("MCP server %r: tool %r has no object inputSchema; skipped", server.name, entry["name"])
        return None
    try:
        header_params = _header_params(schema)
    except ValueError as exc:
        # The transport's rule: a tool whose x-mcp-header annotations break the constraints is not offered.
        _log.warning("MCP server %r: tool %r rejected: %s", server.name, entry["name"], exc)
        return None
    output = entry.get("outputSchema")
    annotations = entry.get("annotations")
    title = entry.get("title")
    return MCPTool(
        name=entry["name"],
        description=str(entry.get("description") or ""),
        input_schema=schema,
        output_schema=output if isinstance(output, dict) else None,
        annotations=annotations if isinstance(annotations, dict) else {},
        title=title if isinstance(title, str) else None,
        header_params=header_params,
    )


_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_HEADER_TYPES = frozenset({"string", "integer", "boolean"})


def _header_params(schema: dict[str, Any]) -> tuple[tuple[tuple[str, ...], str], ...]:
    """Every ``x-mcp-header`` of ``schema`` with the path to its property; ValueError if one breaks the rules
    (not a token, not unique, not on a string, integer or boolean, not reachable through ``properties`` alone)."""
    found: list[tuple[tuple[str, ...], str]] = []

    def walk(node: Any, path: tuple[str, ...], reachable: bool) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, path, False)
            return
        if not isinstance(node, dict):
            return
        if "x-mcp-header" in node:
            name = node["x-mcp-header"]
            if not reachable or not path:
                raise ValueError(f"x-mcp-header {name!r} is not on a property reachable through properties alone")
            if not isinstance(name, str) or not _TOKEN.match(name):
                raise ValueError(f"x-mcp-header {name!r} is not an HTTP token")
            if node.get("type") not in _HEADER_TYPES:
                raise ValueError(
                    f"x-mcp-header {name!r} is on a {node.get('type')!r}, not a string, integer or boolean"
                )
            found.append((path, name))
        for key, value in node.items():
            if key == "properties" and reachable and isinstance(value, dict):
                for prop, sub in value.items():
                    walk(sub, (*path, str(prop)), True)
            elif key != "x-mcp-header":
                walk(value, path, False)

    walk(schema, (), True)
    names = [name.lower() for _, name in found]
    if len(set(names)) != len(names):
        raise ValueError("x-mcp-header names are not unique (case-insensitively)")
    return tuple(found)
