"""A FastMCP 4 server on 127.0.0.1 for the MCP tests, run in-process by uvicorn on a thread.

Its tools: ``lookup`` (read-only, structured output), ``create_ticket`` (asks a form question through
``input_required`` and answers with what the person gave), ``boom`` (fails), ``ask_forever`` (asks again on
every retry), ``nested_question`` (a question outside MCP's form subset), ``ask_live`` (asks during the call,
``ctx.elicit``, for clients of older revisions), ``huge_state`` (a 100 KB ``requestState``), ``never_answers``
(holds the request open), ``wrong_output`` (breaks its own outputSchema).
Every JSON-RPC exchange on ``/mcp`` is recorded raw (what the server received and what it sent), so a test
can assert on the bytes; ``/garbage`` answers something that is not JSON-RPC.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

import mcp_types as mt
import uvicorn
from fastmcp import Context, FastMCP
from pydantic import BaseModel, Field

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

SYSTEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "system": {"type": "string", "title": "Affected system", "minLength": 2},
        "urgent": {"type": "boolean", "title": "Urgent"},
    },
    "required": ["system"],
}


CONNECT_URL = "https://accounts.example.com/connect?session=abc"


@dataclass
class Exchange:
    request: dict[str, Any]
    raw_request: bytes
    response: bytes
    #: time.monotonic() when the request reached the server
    received_at: float = 0.0
    #: the request's HTTP headers, names lower-cased
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorder:
    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: what ``/scripted`` answers to its next ``tools/call``: a JSON-RPC message (its ``id`` filled in), and
    #: whether as an SSE stream
    scripted: list[tuple[dict[str, Any], bool]] = field(default_factory=list)

    def calls(self, tool: str) -> list[Exchange]:
        with self.lock:
            return [
                e
                for e in self.exchanges
                if e.request.get("method") == "tools/call" and e.request.get("params", {}).get("name") == tool
            ]

    def count(self, method: str) -> int:
        with self.lock:
            return sum(1 for e in self.exchanges if e.request.get("method") == method)


class SystemAnswer(BaseModel):
    system: str


def _question(message: str, schema: dict[str, Any]) -> mt.ElicitRequest:
    return mt.ElicitRequest(params=mt.ElicitRequestFormParams(message=message, requested_schema=schema))


def build_app() -> FastMCP:
    app = FastMCP("desk")

    @app.tool(annotations={"readOnlyHint": True})
    def lookup(ticket: str) -> dict[str, Any]:
        """Look a ticket up."""
        return {"ticket": ticket, "state": "open"}

    @app.tool
    def create_ticket(title: str, ctx: Context) -> Any:
        """Create a ticket; asks which system is affected."""
        answers = ctx.input_responses or {}
        answer = answers.get("system_question")
        if answer is None or getattr(answer, "action", None) is None:
            return mt.InputRequiredResult(
                input_requests={"system_question": _question("Which system is affected?", SYSTEM_SCHEMA)},
                request_state=f"ticket:{title}",
            )
        if answer.action != "accept":
            return f"not created: the person chose {answer.action}"
        content = answer.content or {}
        urgent = content.get("urgent", False)
        return f"created {title!r} for {content.get('system')} (urgent={urgent}, state={ctx.request_state})"

    @app.tool
    def strict_ticket(ctx: Context) -> Any:
        """Asks again, under the same key, until the system is not "unknown" (as a server that refuses an
        expired or incomplete state re-asks)."""
        answer = (ctx.input_responses or {}).get("system_question")
        content = getattr(answer, "content", None) or {}
        if content.get("system") in (None, "unknown"):
            question = _question("Which system is affected?", SYSTEM_SCHEMA)
            return mt.InputRequiredResult(input_requests={"system_question": question}, request_state="again")
        return f"created for {content['system']}"

    @app.tool(annotations={"readOnlyHint": True})
    def regional(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], query: str) -> str:
        """Runs a query in a region (the region is mirrored into a header)."""
        return f"{query} in {region}"

    @app.tool
    def book_trip(ctx: Context) -> Any:
        """Asks two questions in one round."""
        answers = ctx.input_responses or {}
        if "city" not in answers or "budget" not in answers:
            city = _question("Which city?", {"type": "object", "properties": {"city": {"type": "string"}}})
            budget = _question(
                "What budget?", {"type": "object", "properties": {"amount": {"type": "integer", "minimum": 1}}}
            )
            return mt.InputRequiredResult(input_requests={"city": city, "budget": budget}, request_state="trip")
        return f"city: {answers['city'].action}, budget: {answers['budget'].action}"

    @app.tool
    async def ask_live(title: str, ctx: Context) -> str:
        """Asks during the call (``ctx.elicit``), as servers before 2026-07-28 do, and holds the call meanwhile."""
        answer = await ctx.elicit("Which system is affected?", response_type=SystemAnswer)
        if answer.action != "accept":
            return f"not created: the person chose {answer.action}"
        return f"created {title!r} for {answer.data.system}"

    @app.tool
    def boom() -> str:
        """Always fails."""
        raise RuntimeError("the ticket database is down")

    @app.tool
    def ask_forever(ctx: Context) -> Any:
        """Asks again on every retry."""
        count = int(ctx.request_state or "0") + 1
        return mt.InputRequiredResult(
            input_requests={f"q{count}": _question(f"Question {count}?", SYSTEM_SCHEMA)}, request_state=str(count)
        )

    @app.tool
    def nested_question() -> Any:
        """Asks with a nested schema."""
        schema = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}
        return mt.InputRequiredResult(input_requests={"address": _question("Where?", schema)}, request_state="n")

    @app.tool
    def huge_state() -> Any:
        """Sends 100 KB of state."""
        return mt.InputRequiredResult(
            input_requests={"ok": _question("Fine?", SYSTEM_SCHEMA)}, request_state="x" * 100_000
        )

    @app.tool
    async def never_answers() -> str:
        """Holds the request open."""
        await asyncio.sleep(30)
        return "late"

    @app.tool
    def connect_account(ctx: Context) -> Any:
        """Needs the person to connect an account on the server's own page (URL mode)."""
        answer = (ctx.input_responses or {}).get("connect")
        if answer is None:
            link = mt.ElicitRequestURLParams(
                mode="url", message="Connect your tracker account.", url=CONNECT_URL, elicitation_id="e1"
            )
            return mt.InputRequiredResult(input_requests={"connect": mt.ElicitRequest(params=link)}, request_state="c")
        return f"connection: {answer.action}"

    @app.tool
    def plain_http_link() -> Any:
        """Links to a plain-HTTP page elsewhere."""
        link = mt.ElicitRequestURLParams(mode="url", message="Go", url="http://evil.example/pay", elicitation_id="e")
        return mt.InputRequiredResult(input_requests={"pay": mt.ElicitRequest(params=link)}, request_state="p")

    @app.tool(output_schema={"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]})
    def wrong_output() -> Any:
        """Returns structured content that breaks its schema."""
        return mt.CallToolResult(content=[mt.TextContent(type="text", text="three")], structured_content={"count": "3"})

    return app


def recording(app: App, recorder: Recorder) -> App:
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"].startswith("/scripted"):
            await _scripted(recorder, receive, send)
            return
        if scope["path"].startswith("/garbage"):
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": b"<html>not json-rpc</html>"})
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        received_at = time.monotonic()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": raw, "more_body": False}
            return await receive()

        try:
            request = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            request = {}
        sent: list[bytes] = []

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.body":
                sent.append(message.get("body", b""))
                if not message.get("more_body", False):
                    # Recorded before the last byte leaves: a client that has its answer finds the exchange here.
                    with recorder.lock:
                        recorder.exchanges.append(Exchange(request, raw, b"".join(sent), received_at, headers))
            await send(message)

        await app(scope, replay, capture)

    return wrapped


#: A question a task of ``/scripted`` asks (an ``inputRequests`` entry, form mode).
DEPLOY_QUESTION: Final[dict[str, Any]] = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Deploy to production?",
        "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
    },
}

#: the one tool ``/scripted`` lists
ODD_TOOL = {"name": "odd", "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": True}}


async def _scripted(recorder: Recorder, receive: Receive, send: Send) -> None:
    """A hand-written server: lists ``odd`` and answers each call with the next scripted message."""
    chunks: list[bytes] = []
    more = True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    raw = b"".join(chunks)
    request = json.loads(raw)
    stream = False
    if request["method"] == "tools/list":
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": [ODD_TOOL]}}
    else:
        with recorder.lock:
            scripted, stream = recorder.scripted.pop(0)
        answer = {**scripted, "id": scripted.get("id", request["id"])}
    body = json.dumps(answer).encode()
    if stream:
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
        body = (
            b"event: message\ndata: " + json.dumps(progress).encode() + b"\n\nevent: message\ndata: " + body + b"\n\n"
        )
    with recorder.lock:
        recorder.exchanges.append(Exchange(request, raw, body, time.monotonic()))
    kind = b"text/event-stream" if stream else b"application/json"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
    await send({"type": "http.response.body", "body": body})


@dataclass
class RunningServer:
    url: str
    garbage_url: str
    scripted_url: str
    recorder: Recorder
    stop: Callable[[], None]

    def answer_next(self, result: dict[str, Any]) -> None:
        """``/scripted`` answers its next call with ``result``."""
        self.recorder.scripted.append(({"jsonrpc": "2.0", "result": result}, False))


def start(port: int = 0, recorder: Recorder | None = None, app: FastMCP | None = None) -> RunningServer:
    """The server on ``port`` (0: any free one); a restart passes the port and recorder of the one it replaces
    (a new process: a new request-state key, so the states the old one gave no longer verify). ``app`` serves
    another FastMCP server than :func:`build_app`'s (:mod:`tests.support.mcp_task_server`), recorded alike."""
    recorder = recorder if recorder is not None else Recorder()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    asgi = recording((app if app is not None else build_app()).http_app(), recorder)
    config = uvicorn.Config(asgi, log_level="warning", timeout_graceful_shutdown=1, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    ready = threading.Event()
    for _ in range(200):  # up to 10 s, polled
        if server.started:
            ready.set()
            break
        threading.Event().wait(0.05)
    if not ready.is_set():
        raise RuntimeError("the test MCP server did not start")

    def stop() -> None:
        server.should_exit = True
        thread.join(10)
        sock.close()

    base = f"http://127.0.0.1:{port}"
    return RunningServer(f"{base}/mcp", f"{base}/garbage", f"{base}/scripted", recorder, stop)
