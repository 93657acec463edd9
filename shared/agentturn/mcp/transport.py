"""One JSON-RPC request to an MCP server over streamable HTTP (revision 2026-07-28), synchronously.

Stateless by the revision: no ``initialize``, no session header; every request carries its protocol version,
the client's identity and exactly the capabilities this request can use in ``_meta``, and the standard
``Mcp-Method`` / ``Mcp-Name`` headers. The answer is a JSON body or an SSE stream whose event with this
request's id ends it. Everything is bounded: one deadline for connect, send and the whole answer (a server that
never answers, or answers a byte a minute, costs ``timeout`` and no more), and a size limit on the answer.
Standard library only: a worker that never meets an MCP server pays nothing for this module.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

from agentturn.mcp.server import MCPServer

PROTOCOL_VERSION = "2026-07-28"
CLIENT_INFO = {"name": "agentturn", "version": "0.1.0"}
_CHUNK = 64 * 1024


class MCPError(Exception):
    """The server could not be used for this request; the message says why, for the model and the logs."""


class MCPTransportError(MCPError):
    """No usable answer: unreachable, too slow, too large, not JSON-RPC, an HTTP error without one."""


class MCPRemoteError(MCPError):
    """The server answered with a JSON-RPC error."""

    def __init__(self, server: str, code: Any, message: Any, data: Any = None) -> None:
        super().__init__(f"MCP server {server!r} answered error {code!r}: {str(message)[:500]}")
        self.code = code
        self.data = data


#: JSON-RPC error of a server that does not accept the request's protocol version (its ``data.supported`` lists
#: the versions it does)
UNSUPPORTED_PROTOCOL_VERSION = -32022


def header_value(value: str) -> str:
    """A header value as the transport asks: plain visible ASCII, else the Base64 sentinel form."""
    if value and value.isascii() and value.isprintable() and value == value.strip():
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


def request_meta(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": dict(CLIENT_INFO),
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


class _Deadline:
    def __init__(self, seconds: float) -> None:
        if seconds <= 0:
            raise TimeoutError
        self._end = time.monotonic() + seconds
        self.seconds = seconds

    def remaining(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left


def send(
    server: MCPServer,
    method: str,
    params: dict[str, Any],
    *,
    capabilities: dict[str, Any] | None = None,
    name: str | None = None,
    extra_headers: dict[str, str] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """The ``result`` of ``method`` (a new JSON-RPC id each time), or :class:`MCPError`; within ``timeout``
    seconds (default: the server's) for connect, send and the whole answer."""
    request_id = uuid.uuid4().hex
    body_params = dict(params)
    meta = dict(body_params.pop("_meta", None) or {})
    meta.update(request_meta(capabilities or {}))
    body_params["_meta"] = meta
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": body_params}).encode()
    try:
        resolved = server.resolve_headers()
    except Exception as exc:  # the team's own function (a secret store): any failure means no request
        raise MCPTransportError(f"the headers of MCP server {server.name!r} could not be read: {exc}") from None
    headers = {
        **resolved,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = header_value(name)
    for header, value in (extra_headers or {}).items():
        headers[header] = header_value(value)
    try:
        # The caller's own deadline when it has one (one call with its state-only retries shares one budget).
        deadline = _Deadline(server.timeout if timeout is None else timeout)
        try:
            return _exchange(server, body, headers, request_id, deadline)
        except MCPRemoteError as refused:
            if not _version_listed(refused):
                raise
        # The server refused this version while listing it as supported (a fleet mid-deploy, an instance that
        # answered for another): negotiation picks the one version both speak, so the request is sent once more,
        # with a new id. A server that does not list it gets the refusal as is: this client speaks no other.
        request_id = uuid.uuid4().hex
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": body_params}).encode()
        return _exchange(server, body, headers, request_id, deadline)
    except TimeoutError:
        raise MCPTransportError(
            f"MCP server {server.name!r} did not answer {method} within {server.timeout:g} s"
        ) from None
    except (OSError, http.client.HTTPException) as exc:
        raise MCPTransportError(f"MCP server {server.name!r} is unreachable: {type(exc).__name__}: {exc}") from None


def _version_listed(refused: MCPRemoteError) -> bool:
    if refused.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(refused.data, dict):
        return False
    supported = refused.data.get("supported")
    return isinstance(supported, list) and PROTOCOL_VERSION in supported


def _connection(server: MCPServer, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(server.url)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    if parts.scheme == "https":
        context = ssl.create_default_context()
        return http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout, context=context), path
    return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout), path


def _exchange(
    server: MCPServer, body: bytes, headers: dict[str, str], request_id: str, deadline: _Deadline
) -> dict[str, Any]:
    connection, path = _connection(server, deadline.remaining())
    try:
        connection.request("POST", path, body=body, headers=headers)
        if connection.sock is not None:
            connection.sock.settimeout(deadline.remaining())
        response = connection.getresponse()
        kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if kind == "text/event-stream" and response.status == 200:
            message = _from_stream(server, response, request_id, deadline, connection)
        else:
            raw = _read_all(server, response, deadline, connection)
            message = _parse(server, raw, response.status)
    finally:
        connection.close()
    return _result(server, message, request_id)


def _read_all(
    server: MCPServer, response: http.client.HTTPResponse, deadline: _Deadline, connection: http.client.HTTPConnection
) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if connection.sock is not None:
            connection.sock.settimeout(deadline.remaining())
        chunk = response.read1(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > server.max_response_bytes:
            raise MCPTransportError(
                f"MCP server {server.name!r} sent more than {server.max_response_bytes} bytes; the answer was dropped"
            )
        chunks.append(chunk)
        deadline.remaining()


def _parse(server: MCPServer, raw: bytes, status: int) -> Any:
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        if status != 200:
            raise MCPTransportError(f"MCP server {server.name!r} answered HTTP {status}") from None
        raise MCPTransportError(f"MCP server {server.name!r} answered something that is not JSON") from None


def _from_stream(
    server: MCPServer,
    response: http.client.HTTPResponse,
    request_id: str,
    deadline: _Deadline,
    connection: http.client.HTTPConnection,
) -> Any:
    """The first JSON-RPC response for ``request_id`` on an SSE stream (notifications before it are skipped)."""
    size = 0
    data: list[str] = []
    while True:
        if connection.sock is not None:
            connection.sock.settimeout(deadline.remaining())
        line = response.readline(_CHUNK)
        if not line:
            raise MCPTransportError(f"MCP server {server.name!r} closed its stream without an answer")
        size += len(line)
        if size > server.max_response_bytes:
            raise MCPTransportError(f"MCP server {server.name!r} sent more than {server.max_response_bytes} bytes")
        deadline.remaining()
        text = line.decode("utf-8", errors="replace").rstrip("\r\n")
        if text.startswith("data:"):
            data.append(text[5:].removeprefix(" "))
            continue
        if text or not data:
            continue
        payload, data = "\n".join(data), []
        try:
            message = json.loads(payload)
        except json.JSONDecodeError:
            raise MCPTransportError(f"MCP server {server.name!r} streamed something that is not JSON") from None
        if isinstance(message, dict) and message.get("id") == request_id:
            return message


def _result(server: MCPServer, message: Any, request_id: str) -> dict[str, Any]:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise MCPTransportError(f"MCP server {server.name!r} answered something that is not JSON-RPC 2.0")
    error = message.get("error")
    if error is not None:
        if isinstance(error, dict):
            raise MCPRemoteError(server.name, error.get("code"), error.get("message"), error.get("data"))
        raise MCPRemoteError(server.name, None, error)
    if message.get("id") != request_id:
        raise MCPTransportError(f"MCP server {server.name!r} answered another request id")
    result = message.get("result")
    if not isinstance(result, dict):
        raise MCPTransportError(f"MCP server {server.name!r} answered without a result object")
    return result
