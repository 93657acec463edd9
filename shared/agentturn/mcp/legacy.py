"""Servers of revisions before 2026-07-28: a session per operation, and a question asked live during a held call.

Such a server cannot hand its question back as ``input_required``: it sends ``elicitation/create`` on the call's
own stream and keeps the call (and its state) in memory until the client answers on the same session. agentturn
still shows that question as the same card as a durable one, but the call is held open while the card waits:
a thread of the worker process that made the call keeps the connection (:class:`HeldCall`), the turn waits as
usual, and the replay that follows the person's answer hands it to that thread, which posts it to the server and
reads on. The wait is bounded by ``MCPServer.live_wait``: past it the thread answers ``cancel`` itself, the card
expires with the same deadline, and the model is told. A replay in a process that does not hold the call (a
restart, another worker) cannot answer it: the model is told the call's outcome is unknown.
"""

from __future__ import annotations

import http.client
import json
import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentturn.mcp.server import MCPServer
from agentturn.mcp.transport import (
    CLIENT_INFO,
    MCPError,
    MCPRemoteError,
    MCPTransportError,
    _connection,
    _Deadline,
    header_value,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentturn.agents.tools import ToolContext
    from agentturn.mcp.listing import MCPTool

_log = logging.getLogger("agentturn.mcp")
_LINE = 64 * 1024
#: JSON-RPC "Method not found": what a server's request other than elicitation and ping is answered
_METHOD_NOT_FOUND = -32601
#: seconds a finished held call is kept for a replay that has not come yet
_KEEP_FINISHED = 900.0


class _Session:
    """One ``initialize``d session: requests carry its id and the negotiated revision."""

    def __init__(self, server: MCPServer, capabilities: dict[str, Any]) -> None:
        self.server = server
        self.capabilities = capabilities
        self.session_id: str | None = None
        self.version = server.revision

    def headers(self) -> dict[str, str]:
        try:
            resolved = self.server.resolve_headers()
        except Exception as exc:  # the team's own function (a secret store): any failure means no request
            raise MCPTransportError(
                f"the headers of MCP server {self.server.name!r} could not be read: {exc}"
            ) from None
        headers = {
            **resolved,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": self.version,
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = header_value(self.session_id)
        return headers

    def post(
        self, message: dict[str, Any], deadline: _Deadline
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        connection, path = _connection(self.server, deadline.remaining())
        connection.request("POST", path, body=json.dumps(message).encode(), headers=self.headers())
        if connection.sock is not None:
            connection.sock.settimeout(deadline.remaining())
        return connection, connection.getresponse()

    def open(self, deadline: _Deadline) -> None:
        request_id = uuid.uuid4().hex
        init = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": self.server.revision,
                "capabilities": self.capabilities,
                "clientInfo": dict(CLIENT_INFO),
            },
        }
        connection, response = self.post(init, deadline)
        try:
            self.session_id = response.getheader("Mcp-Session-Id")
            result = _response(self.server, _messages(self.server, connection, response, deadline), request_id)
        finally:
            connection.close()
        version = result.get("protocolVersion")
        if version not in ("2025-11-25", "2025-06-18"):
            raise MCPTransportError(f"MCP server {self.server.name!r} answered initialize with revision {version!r}")
        self.version = str(version)
        connection, response = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, deadline)
        try:
            response.read()
        finally:
            connection.close()

    def reply(self, message: dict[str, Any], deadline: _Deadline) -> None:
        """Posts a response to a request of the server (it answers 202, nothing to read)."""
        connection, response = self.post(message, deadline)
        try:
            response.read()
            if response.status >= 400:
                raise MCPTransportError(f"MCP server {self.server.name!r} refused an answer: HTTP {response.status}")
        finally:
            connection.close()

    def close(self) -> None:
        """Ends the session (best effort: the server drops it on its own otherwise)."""
        if self.session_id is None:
            return
        try:
            connection, path = _connection(self.server, 2.0)
            connection.request("DELETE", path, headers=self.headers())
            connection.getresponse().read()
            connection.close()
        except (OSError, http.client.HTTPException, MCPError):
            pass


def _messages(
    server: MCPServer,
    connection: http.client.HTTPConnection,
    response: http.client.HTTPResponse,
    deadline: _Deadline,
) -> Iterator[Any]:
    """The JSON-RPC messages of one answer: a JSON body, or each event of an SSE stream, read within ``deadline``
    (which the caller may move on between messages)."""
    kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
    if kind != "text/event-stream" or response.status != 200:
        raw = response.read(server.max_response_bytes + 1)
        if len(raw) > server.max_response_bytes:
            raise MCPTransportError(f"MCP server {server.name!r} sent more than {server.max_response_bytes} bytes")
        try:
            yield json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise MCPTransportError(f"MCP server {server.name!r} answered HTTP {response.status}, not JSON") from None
        return
    data: list[str] = []
    size = 0
    while True:
        if connection.sock is not None:
            connection.sock.settimeout(deadline.remaining())
        line = response.readline(_LINE)
        if not line:
            raise MCPTransportError(f"MCP server {server.name!r} closed its stream without an answer")
        size += len(line)
        if size > server.max_response_bytes:
            raise MCPTransportError(f"MCP server {server.name!r} sent more than {server.max_response_bytes} bytes")
        text = line.decode("utf-8", errors="replace").rstrip("\r\n")
        if text.startswith("data:"):
            data.append(text[5:].removeprefix(" "))
            continue
        if text or not data:
            continue
        payload, data = "\n".join(data), []
        try:
            yield json.loads(payload)
        except json.JSONDecodeError:
            raise MCPTransportError(f"MCP server {server.name!r} streamed something that is not JSON") from None


def _response(server: MCPServer, messages: Iterator[Any], request_id: str) -> dict[str, Any]:
    for message in messages:
        if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
            return _result(server, message)
    raise MCPTransportError(f"MCP server {server.name!r} sent no answer")


def _result(server: MCPServer, message: dict[str, Any]) -> dict[str, Any]:
    error = message.get("error")
    if error is not None:
        if isinstance(error, dict):
            raise MCPRemoteError(server.name, error.get("code"), error.get("message"), error.get("data"))
        raise MCPRemoteError(server.name, None, error)
    result = message.get("result")
    if not isinstance(result, dict):
        raise MCPTransportError(f"MCP server {server.name!r} answered without a result object")
    return result


def send(server: MCPServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The ``result`` of one request in a session of its own (listing: nothing is asked, nothing is held)."""
    session = _Session(server, {})
    request_id = uuid.uuid4().hex
    try:
        deadline = _Deadline(server.timeout)
        session.open(deadline)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        connection, response = session.post(message, deadline)
        try:
            return _response(server, _messages(server, connection, response, deadline), request_id)
        finally:
            connection.close()
    except TimeoutError:
        raise MCPTransportError(
            f"MCP server {server.name!r} did not answer {method} within {server.timeout:g} s"
        ) from None
    except (OSError, http.client.HTTPException) as exc:
        raise MCPTransportError(f"MCP server {server.name!r} is unreachable: {type(exc).__name__}: {exc}") from None
    finally:
        session.close()


@dataclass(frozen=True)
class LiveQuestion:
    """``elicitation/create`` sent by the server during the call."""

    request_id: Any
    params: dict[str, Any]

    @property
    def key(self) -> str:
        return f"elicitation-{self.request_id}"


@dataclass(frozen=True)
class LiveDone:
    result: dict[str, Any] | None
    error: MCPError | None = None


@dataclass
class HeldCall:
    """A ``tools/call`` held open by a thread of this process, with the questions the server asks on it."""

    server: MCPServer
    params: dict[str, Any]
    events: queue.Queue[LiveQuestion | LiveDone] = field(default_factory=queue.Queue)
    answers: queue.Queue[dict[str, Any]] = field(default_factory=queue.Queue)
    #: what the model is told of questions that were answered ``cancel`` because nobody answered in time
    notes: list[str] = field(default_factory=list)
    finished_at: float | None = None

    def start(self) -> None:
        threading.Thread(target=self._run, name=f"mcp-held-{self.server.name}", daemon=True).start()

    def _run(self) -> None:
        try:
            done = LiveDone(self._call())
        except MCPError as exc:
            done = LiveDone(None, exc)
        except TimeoutError:
            done = LiveDone(None, MCPTransportError(f"MCP server {self.server.name!r} did not answer in time"))
        except (OSError, http.client.HTTPException) as exc:
            done = LiveDone(None, MCPTransportError(f"MCP server {self.server.name!r} is unreachable: {exc}"))
        self.finished_at = time.monotonic()
        self.events.put(done)

    def _call(self) -> dict[str, Any]:
        session = _Session(self.server, {"elicitation": {"form": {}, "url": {}}})
        request_id = uuid.uuid4().hex
        try:
            deadline = _Deadline(self.server.timeout)
            session.open(deadline)
            message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": self.params}
            connection, response = session.post(message, deadline)
            try:
                for incoming in _messages(self.server, connection, response, deadline):
                    if not isinstance(incoming, dict):
                        continue
                    if incoming.get("id") == request_id and "method" not in incoming:
                        return _result(self.server, incoming)
                    if "method" in incoming and "id" in incoming:
                        answer = self._answer(incoming)
                        # A fresh deadline once answered: the server may take its whole time again.
                        deadline = _Deadline(self.server.timeout)
                        session.reply({"jsonrpc": "2.0", "id": incoming["id"], **answer}, deadline)
                        if connection.sock is not None:
                            connection.sock.settimeout(deadline.remaining())
                raise MCPTransportError(f"MCP server {self.server.name!r} sent no answer")
            finally:
                connection.close()
        finally:
            session.close()

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The response to a request of the server: an elicitation waits for the person, up to ``live_wait``."""
        if request["method"] == "ping":
            return {"result": {}}
        if request["method"] != "elicitation/create" or not isinstance(request.get("params"), dict):
            return {"error": {"code": _METHOD_NOT_FOUND, "message": f"{request['method']!r} is not supported"}}
        params = request["params"]
        self.events.put(LiveQuestion(request["id"], params))
        try:
            result = self.answers.get(timeout=self.server.live_wait)
        except queue.Empty:
            result = {"action": "cancel"}
            self.notes.append(
                f"MCP server {self.server.name!r} asked {str(params.get('message', ''))[:200]!r} during the call; "
                f"nobody answered within {self.server.live_wait:g} s, so it was answered cancel (a server before "
                "revision 2026-07-28 holds its question only while the call is open)"
            )
        return {"result": result}


_lock = threading.Lock()
_held: dict[tuple[str, str], HeldCall] = {}


def _register(key: tuple[str, str], held: HeldCall) -> None:
    now = time.monotonic()
    with _lock:
        for stale in [
            k for k, h in _held.items() if h.finished_at is not None and now - h.finished_at > _KEEP_FINISHED
        ]:
            del _held[stale]
        _held[key] = held


def held_call(turn_id: str, tool_call_id: str) -> HeldCall | None:
    with _lock:
        return _held.get((turn_id, tool_call_id))


def call_live(server: MCPServer, tool: MCPTool, arguments: dict[str, Any], context: ToolContext) -> Any:
    """A call of a server of an older revision: started (and held) on the first run, answered on each replay."""
    from agentturn.forms.rounds import RoundAction
    from agentturn.mcp.calls import IDEMPOTENCY_META_KEY, ToolError, stored_round
    from agentturn.mcp.elicitation import input_response

    key = (context.turn_id, context.tool_call_id)
    round_ = context.input_round
    if round_ is None:
        params: dict[str, Any] = {"name": tool.name, "arguments": arguments}
        if not tool.read_only:
            params["_meta"] = {IDEMPOTENCY_META_KEY: context.idempotency_key}
        started = HeldCall(server, params)
        _register(key, started)
        started.start()
        return _follow(server, tool, arguments, context, started, 0)
    stored = stored_round(server, tool, round_)
    held = held_call(*key)
    if held is None:
        raise ToolError(
            f"MCP server {server.name!r} (revision {server.revision}) asked a question during a call that this "
            "process no longer holds (it restarted, or another worker continued the turn): the question cannot be "
            "answered now, and whether the call did anything is unknown"
        )
    (question,) = stored["keys"]
    answer = round_.answers.get(question)
    if answer is None or answer.action is RoundAction.CANCEL:
        held.notes.append(
            f"MCP server {server.name!r} asked during the call; the card was not answered within "
            f"{server.live_wait:g} s, so the server was answered cancel"
        )
    held.answers.put(
        input_response(answer, stored.get("modes", {}).get(question, "form")) if answer else {"action": "cancel"}
    )
    return _follow(server, tool, stored["arguments"], context, held, round_.number)


def _follow(
    server: MCPServer, tool: MCPTool, arguments: dict[str, Any], context: ToolContext, held: HeldCall, asked: int
) -> Any:
    """Waits for the held call's next event: a question becomes a round (one card, expiring with the held
    wait), the end becomes the tool's result."""
    from agentturn.forms.rounds import InputRoundRequired
    from agentturn.mcp.calls import ToolError, complete
    from agentturn.mcp.elicitation import ElicitationRefused, url_request

    while True:
        try:
            event = held.events.get(timeout=server.timeout + 1.0)
        except queue.Empty:
            raise ToolError(
                f"MCP server {server.name!r} did not answer {tool.name!r} within {server.timeout:g} s"
            ) from None
        if isinstance(event, LiveDone):
            with _lock:
                _held.pop((context.turn_id, context.tool_call_id), None)
            if event.error is not None:
                raise event.error
            answer = complete(server, tool, event.result or {})
            if held.notes:
                answer["note"] = "; ".join(held.notes)
            return answer
        mode = event.params.get("mode", "form")
        refusal: str | None = None
        if asked >= server.max_rounds:
            refusal = f"it asked {asked + 1} times; the limit is {server.max_rounds}"
        elif mode not in ("form", "url"):
            refusal = f"mode {mode!r} was not declared"
        if refusal is None:
            try:
                card = (url_request if mode == "url" else _form)(server, event.key, event.params)
            except ElicitationRefused as exc:
                refusal = str(exc)
        if refusal is not None:
            # The call is still open on the server: it is told no, and the model is told why.
            held.notes.append(
                f"MCP server {server.name!r} asked a question agentturn will not show ({refusal}): declined"
            )
            held.answers.put({"action": "decline"})
            continue
        stored = {
            "server": server.name,
            "url": server.url,
            "tool": tool.name,
            "arguments": arguments,
            "toolCallId": context.tool_call_id,
            "keys": [event.key],
            "live": True,
            "modes": {event.key: mode},
        }
        raise InputRoundRequired([card], {"mcp": stored}, expires_in=server.live_wait)


def _form(server: MCPServer, key: str, params: dict[str, Any]) -> Any:
    from agentturn.mcp.elicitation import form_request

    return form_request(server, key, params, None)
