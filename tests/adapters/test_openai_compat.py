"""The OpenAI-compatible adapter against a local HTTP server (127.0.0.1, ephemeral port) that serves
responses recorded from the real APIs and records exactly what the adapter sent."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentturn import (
    AiMessage,
    ChatRequest,
    ModelMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from agentturn.errors import ModelError, ModelErrorKind
from agentturn.models.openai_compat import OpenAICompatibleModel
from agentturn.ports.chat_model import TextDelta, collect
from agentturn.testing.chat_model_suite import ChatModelSuite

API_KEY = "sk-test-4f9c2b7e1d8a6e3b5c0f"
MODEL = "gpt-4o-2024-08-06"
SYSTEM = "Help with incident tickets. Never guess missing fields."
TICKET_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "priority": {"type": "string", "enum": ["LOW", "NORMAL", "HIGH"]}},
    "required": ["title"],
}
TOOLS = [ToolSpec("create_support_ticket", "创建故障工单 (create an incident ticket)", TICKET_PARAMETERS)]
WIRE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "create_support_ticket",
            "description": "创建故障工单 (create an incident ticket)",
            "parameters": TICKET_PARAMETERS,
        },
    }
]
USAGE = {
    "prompt_tokens": 112,
    "completion_tokens": 24,
    "total_tokens": 136,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {
        "reasoning_tokens": 0,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}


def completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    """A chat.completion object as OpenAI returns it."""
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "refusal": None, "annotations": [], **message},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": USAGE,
        "service_tier": "default",
        "system_fingerprint": "fp_fc9f1d7035",
    }


TOOL_CALL_RESPONSE = completion(
    {
        "content": None,
        "tool_calls": [
            {
                "id": "call_5Jq0Bv2mX0rQ6GQyUOFuF6nB",
                "type": "function",
                "function": {
                    "name": "create_support_ticket",
                    "arguments": '{"title":"登录故障 (login failure)","priority":"HIGH"}',
                },
            }
        ],
    },
    "tool_calls",
)
PLAIN_RESPONSE = completion({"content": "Ticket TICKET-1A2B3C4D is filed."}, "stop")
RATE_LIMITED = {
    "error": {
        "message": "Rate limit reached for gpt-4o in organization org-test on tokens per min (TPM): Limit 30000, "
        "Used 29512, Requested 1410. Please try again in 1.844s. Visit https://platform.openai.com/account/"
        "rate-limits to learn more.",
        "type": "tokens",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
SERVER_ERROR = {
    "error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    #: hold the answer until the test ends (a server that never replies in time)
    hang: bool = False

    @classmethod
    def json(cls, document: Any, status: int = 200, **headers: str) -> Reply:
        return cls(status, json.dumps(document).encode(), {"Content-Type": "application/json", **headers})


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class RecordingServer:
    """Answers each request with the next queued :class:`Reply` and keeps what it received."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.received: list[Received] = []
        self.release = threading.Event()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                recorder.received.append(Received("POST", self.path, headers, body))
                reply = recorder.replies.pop(0) if recorder.replies else Reply(599, b"no reply queued")
                if reply.hang:
                    recorder.release.wait(timeout=30)
                    return
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def do_GET(self) -> None:
                recorder.received.append(Received("GET", self.path, dict(self.headers.items()), b""))
                self.send_error(404)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        # a short poll interval: shutdown() waits for the serving loop's next look at its flag
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="openai-server", daemon=True
        )

    def __enter__(self) -> RecordingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingServer]:
    # a proxy of the machine must not take requests meant for 127.0.0.1
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with RecordingServer() as recording:
        yield recording


def model_on(server: RecordingServer, **kwargs: Any) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(server.url, MODEL, api_key=API_KEY, **kwargs)


def ask(text: str = "create a high priority login incident ticket") -> ChatRequest:
    return ChatRequest(system=SYSTEM, messages=[UserMessage(content=text)], tools=TOOLS)


def test_tool_call_round_trip(server: RecordingServer) -> None:
    # GIVEN a server that first calls the ticket tool, then answers in text
    model = model_on(server, extra_headers={"OpenAI-Organization": "org-test"}, temperature=0.0)
    server.replies += [Reply.json(TOOL_CALL_RESPONSE), Reply.json(PLAIN_RESPONSE)]

    # WHEN the model is asked
    reply = model.chat(ask())

    # THEN the tool call comes back with its arguments parsed
    call = ToolCall(
        id="call_5Jq0Bv2mX0rQ6GQyUOFuF6nB",
        name="create_support_ticket",
        arguments={"title": "登录故障 (login failure)", "priority": "HIGH"},
    )
    assert reply == AiMessage(content="", tool_calls=[call])
    # AND exactly this was sent
    [first] = server.received
    assert (first.method, first.path) == ("POST", "/v1/chat/completions")
    assert first.headers == {
        "accept-encoding": "identity",
        "content-length": str(len(first.body)),
        "host": server.url.removeprefix("http://").removesuffix("/v1"),
        "user-agent": "agentturn",
        "content-type": "application/json",
        "accept": "application/json",
        "authorization": f"Bearer {API_KEY}",
        "openai-organization": "org-test",
        "connection": "close",
    }
    assert first.json() == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "create a high priority login incident ticket"},
        ],
        "tools": WIRE_TOOLS,
        "temperature": 0.0,
    }

    # WHEN it is asked again with the tool's result
    ticket = {"id": "TICKET-1A2B3C4D", "title": "登录故障 (login failure)", "priority": "HIGH"}
    result = ToolMessage(tool_call_id=call.id, content=ticket, tool_name="create_support_ticket")
    final = model.chat(ChatRequest(system=SYSTEM, messages=[*ask().messages, reply, result], tools=TOOLS))

    # THEN the answer is plain text, and the call and its result were sent the OpenAI way
    assert final == AiMessage(content="Ticket TICKET-1A2B3C4D is filed.")
    second = server.received[1].json()
    assert second["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_5Jq0Bv2mX0rQ6GQyUOFuF6nB",
                    "type": "function",
                    "function": {
                        "name": "create_support_ticket",
                        "arguments": '{"title": "登录故障 (login failure)", "priority": "HIGH"}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_5Jq0Bv2mX0rQ6GQyUOFuF6nB",
            "content": '{"id": "TICKET-1A2B3C4D", "title": "登录故障 (login failure)", "priority": "HIGH"}',
        },
    ]


def test_plain_answer_without_key_tools_or_system(server: RecordingServer) -> None:
    # GIVEN a keyless server (Ollama) and a request without instructions or tools
    model = OpenAICompatibleModel(server.url + "/", "llama3.2")
    server.replies.append(Reply.json(completion({"content": "Hello! How can I help?"}, "stop")))
    # WHEN it is asked
    reply = model.chat(ChatRequest(system="", messages=[UserMessage(content="hi")]))
    # THEN the answer is the text, and no Authorization, tools or system message were sent
    assert reply == AiMessage(content="Hello! How can I help?")
    [received] = server.received
    assert received.path == "/v1/chat/completions"
    assert "authorization" not in received.headers
    assert received.json() == {"model": "llama3.2", "messages": [{"role": "user", "content": "hi"}]}


def test_unanswered_call_gets_an_error_result_and_plain_results_stay_text(server: RecordingServer) -> None:
    # GIVEN a history with a call a cancelled turn never answered, and a tool that returned plain text
    model = model_on(server)
    server.replies.append(Reply.json(PLAIN_RESPONSE))
    messages: list[ModelMessage] = [
        UserMessage(content="refund O-1001"),
        AiMessage(content="Checking.", tool_calls=[ToolCall(id="call-1-1", name="create_support_ticket")]),
        UserMessage(content="never mind; look up Ada"),
        AiMessage(tool_calls=[ToolCall(id="call-2-1", name="create_support_ticket", arguments={"title": "x"})]),
        ToolMessage(tool_call_id="call-2-1", content="Ada Lovelace"),
        ToolMessage(tool_call_id="call-from-elsewhere", content="an orphan result"),
    ]
    # WHEN the model is asked
    model.chat(ChatRequest(system="", messages=messages, tools=TOOLS))
    # THEN every call is followed by its result (a synthetic error for the unanswered one), orphans are left out
    sent = server.received[0].json()["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in sent] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call-1-1"),
        ("user", None),
        ("assistant", None),
        ("tool", "call-2-1"),
    ]
    assert json.loads(sent[2]["content"])["error"] == "not_executed"
    assert sent[1]["content"] == "Checking."
    assert sent[5]["content"] == "Ada Lovelace"


def test_rate_limit_is_a_retryable_model_error_with_retry_after(server: RecordingServer) -> None:
    # GIVEN a server that rate-limits
    model = model_on(server)
    server.replies.append(Reply.json(RATE_LIMITED, 429, **{"retry-after": "2"}))
    # WHEN the model is asked
    with pytest.raises(ModelError) as raised:
        model.chat(ask())
    # THEN the error is typed, retryable, carries the status, code and wait, and quotes the body briefly
    error = raised.value
    assert (error.kind, error.status, error.code, error.retryable, error.retry_after) == (
        ModelErrorKind.THROTTLED,
        429,
        "rate_limit_exceeded",
        True,
        2.0,
    )
    assert str(error).startswith(
        f"openai-compatible model {MODEL!r} at {server.url!r}: throttled: HTTP 429 (rate_limit_exceeded): "
        "Rate limit reached for gpt-4o"
    )
    assert len(str(error)) < 500


def test_ollama_style_error_body(server: RecordingServer) -> None:
    # GIVEN Ollama answering for a model that was never pulled ({"error": "<text>"})
    server.replies.append(Reply.json({"error": 'model "llama3.2" not found, try pulling it first'}, 404))
    with pytest.raises(ModelError, match=re.escape('HTTP 404: model "llama3.2" not found')) as raised:
        OpenAICompatibleModel(server.url, "llama3.2").chat(ask())
    assert raised.value.kind is ModelErrorKind.NOT_FOUND


def test_the_api_key_never_appears_in_an_error(server: RecordingServer) -> None:
    # GIVEN a server whose error body echoes the key it was sent
    body = {"error": {"message": f"Incorrect API key provided: {API_KEY}.", "type": "invalid_request_error"}}
    server.replies.append(Reply.json(body, 401))
    with pytest.raises(ModelError) as raised:
        model_on(server).chat(ask())
    # THEN the key is cut out of the message
    assert raised.value.kind is ModelErrorKind.AUTH
    assert API_KEY not in str(raised.value)
    assert "Incorrect API key provided: [redacted]." in str(raised.value)


def test_body_that_is_not_json_is_a_malformed_response(server: RecordingServer) -> None:
    # GIVEN a 200 whose body was cut off mid-JSON
    truncated = json.dumps(PLAIN_RESPONSE)[:120].encode()
    server.replies.append(Reply(200, truncated))
    with pytest.raises(ModelError, match="HTTP 200, body is not JSON") as raised:
        model_on(server).chat(ask())
    assert raised.value.kind is ModelErrorKind.MALFORMED_RESPONSE
    assert raised.value.retryable is False


def test_json_without_choices_is_a_malformed_response(server: RecordingServer) -> None:
    server.replies.append(Reply.json({"object": "list", "data": []}))
    with pytest.raises(ModelError, match=r"no choices\[0\]\.message") as raised:
        model_on(server).chat(ask())
    assert raised.value.kind is ModelErrorKind.MALFORMED_RESPONSE


@pytest.mark.parametrize("arguments", ['{"title": "login', "[1, 2]"])
def test_malformed_tool_arguments_are_a_model_error_naming_the_tool(server: RecordingServer, arguments: str) -> None:
    # GIVEN a tool call whose arguments are not a JSON object
    response = json.loads(json.dumps(TOOL_CALL_RESPONSE))
    response["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = arguments
    server.replies.append(Reply.json(response))
    # WHEN the model is asked THEN no tool would run on guessed arguments: the call fails, naming the tool
    with pytest.raises(ModelError, match="tool call 'create_support_ticket': arguments are not") as raised:
        model_on(server).chat(ask())
    assert raised.value.kind is ModelErrorKind.MALFORMED_RESPONSE
    assert arguments in str(raised.value)


@pytest.mark.parametrize("arguments", ["", "null", "{}"])
def test_empty_tool_arguments_are_an_empty_object(server: RecordingServer, arguments: str) -> None:
    # GIVEN a server that sends a no-argument call as "", "null" or "{}" (vLLM, Ollama and OpenAI differ)
    response = json.loads(json.dumps(TOOL_CALL_RESPONSE))
    response["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = arguments
    server.replies.append(Reply.json(response))
    # WHEN asked THEN the call has no arguments
    assert model_on(server).chat(ask()).tool_calls[0].arguments == {}


def test_timeout_is_a_retryable_model_error(server: RecordingServer) -> None:
    # GIVEN a server that does not answer within the model's timeout
    server.replies.append(Reply(hang=True))
    with pytest.raises(ModelError, match=re.escape("no reply within 0.2 s")) as raised:
        model_on(server, timeout=0.2).chat(ask())
    assert (raised.value.kind, raised.value.retryable) == (ModelErrorKind.TIMEOUT, True)


def test_refused_connection_is_a_connection_error() -> None:
    # GIVEN a port on 127.0.0.1 where nothing listens
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatibleModel(f"http://127.0.0.1:{port}/v1", "llama3.2", timeout=5)
    with pytest.raises(ModelError, match="cannot reach the endpoint") as raised:
        model.chat(ask())
    assert raised.value.kind is ModelErrorKind.CONNECTION


def test_redirects_are_not_followed(server: RecordingServer) -> None:
    # GIVEN a server that redirects (urllib would follow a 302 as a GET, Authorization header included)
    server.replies.append(Reply(302, b"", {"Location": server.url + "/elsewhere"}))
    with pytest.raises(ModelError, match="redirects are not followed") as raised:
        model_on(server).chat(ask())
    # THEN the redirect is reported and nothing was sent to its target
    assert (raised.value.kind, raised.value.status) == (ModelErrorKind.INVALID_REQUEST, 302)
    assert [r.path for r in server.received] == ["/v1/chat/completions"]


def test_constructor_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="must be an http:// or https:// URL"):
        OpenAICompatibleModel("file:///etc/passwd", MODEL)
    with pytest.raises(ValueError, match="model must not be blank"):
        OpenAICompatibleModel("http://127.0.0.1:11434/v1", "")
    # and the key is not in its repr, nor credentials of the URL
    model = OpenAICompatibleModel("https://user:pw@example.invalid/v1?x=1", MODEL, api_key=API_KEY)
    assert repr(model) == f"OpenAICompatibleModel(base_url='https://example.invalid/v1', model={MODEL!r})"


# ------------------------------------------------------------------------------ the shipped conformance suite

#: The HTTP status an OpenAI-compatible endpoint answers with for each failure.
FAILURE_STATUS: dict[ModelErrorKind, int] = {
    ModelErrorKind.THROTTLED: 429,
    ModelErrorKind.INVALID_REQUEST: 400,
    ModelErrorKind.AUTH: 401,
    ModelErrorKind.NOT_FOUND: 404,
    ModelErrorKind.TIMEOUT: 504,
    ModelErrorKind.SERVER_ERROR: 500,
}


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """A chat.completion.chunk as OpenAI streams it."""
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": MODEL,
        "system_fingerprint": "fp_fc9f1d7035",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def event_stream(chunks: Sequence[dict[str, Any]]) -> Reply:
    """Server-sent events as OpenAI sends them: one ``data:`` line per chunk, then ``data: [DONE]``."""
    body = "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Reply(200, body.encode(), {"Content-Type": "text/event-stream; charset=utf-8"})


def streamed_text(text: str, size: int = 5) -> list[dict[str, Any]]:
    pieces = [chunk({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    return [chunk({"role": "assistant", "content": "", "refusal": None}), *pieces, chunk({}, "stop")]


def streamed_calls(calls: Sequence[tuple[str, str, str]], size: int = 6) -> list[dict[str, Any]]:
    """Each call (id, name, arguments as JSON text) as OpenAI streams it: id and name, then argument pieces."""
    chunks = [chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, arguments) in enumerate(calls):
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        chunks.append(chunk({"tool_calls": [head]}))
        for start in range(0, len(arguments), size):
            piece = {"index": index, "function": {"arguments": arguments[start : start + size]}}
            chunks.append(chunk({"tool_calls": [piece]}))
    return [*chunks, chunk({}, "tool_calls")]


class OpenAIScript:
    """The endpoint's side of the suite: completions queued on the local server, requests as it received them."""

    failure_kinds = frozenset(FAILURE_STATUS)

    def __init__(self, server: RecordingServer) -> None:
        self.server = server
        self.model = model_on(server)
        self.streaming = False

    def answer_text(self, text: str) -> None:
        if self.streaming:
            self.server.replies.append(event_stream(streamed_text(text)))
            return
        self.server.replies.append(Reply.json(completion({"content": text}, "stop")))

    def answer_tool_calls(self, calls: Sequence[ToolCall]) -> None:
        self._answer_calls([(c.id, c.name, json.dumps(c.arguments, ensure_ascii=False)) for c in calls])

    def answer_malformed_arguments(self, tool_name: str) -> None:
        self._answer_calls([("call_torn", tool_name, '{"title": "login')])

    def _answer_calls(self, calls: Sequence[tuple[str, str, str]]) -> None:
        if self.streaming:
            self.server.replies.append(event_stream(streamed_calls(calls)))
            return
        wire = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]
        self.server.replies.append(Reply.json(completion({"content": None, "tool_calls": wire}, "tool_calls")))

    def fail(self, kind: ModelErrorKind) -> None:
        body = {"error": {"message": f"scripted {kind.value}", "type": "scripted", "param": None, "code": None}}
        self.server.replies.append(Reply.json(body, FAILURE_STATUS[kind]))

    def sent_tool_results(self) -> list[tuple[str, Any]]:
        results: list[tuple[str, Any]] = []
        for message in self.server.received[-1].json()["messages"]:
            if message["role"] == "tool":
                try:
                    content = json.loads(message["content"])
                except json.JSONDecodeError:
                    content = message["content"]
                results.append((message["tool_call_id"], content))
        return results


class TestOpenAICompatibleConformance(ChatModelSuite):
    @pytest.fixture
    def provider(self, server: RecordingServer) -> OpenAIScript:
        return OpenAIScript(server)


def test_a_stream_asks_for_events_and_tells_each_piece(server: RecordingServer) -> None:
    # GIVEN an endpoint that streams "Ticket filed." in pieces of 5 characters
    server.replies.append(event_stream(streamed_text("Ticket filed.")))

    # WHEN the model streams
    parts = list(model_on(server).stream(ask()))

    # THEN it asked for a stream, and told each piece as it came, then the whole reply
    sent = server.received[-1]
    assert sent.json()["stream"] is True
    assert sent.headers["accept"] == "text/event-stream"
    assert parts == [TextDelta("Ticke"), TextDelta("t fil"), TextDelta("ed."), AiMessage(content="Ticket filed.")]


def test_a_server_that_ignores_stream_is_read_whole(server: RecordingServer) -> None:
    # GIVEN an endpoint that answers a streaming request with one JSON completion
    server.replies.append(Reply.json(PLAIN_RESPONSE))

    # WHEN the model streams
    parts = list(model_on(server).stream(ask()))

    # THEN the whole text is one piece, then the reply
    assert parts == [
        TextDelta("Ticket TICKET-1A2B3C4D is filed."),
        AiMessage(content="Ticket TICKET-1A2B3C4D is filed."),
    ]


def test_an_error_inside_the_stream_is_a_retryable_model_error(server: RecordingServer) -> None:
    # GIVEN an endpoint that starts answering, then sends an error chunk
    body = (
        f"data: {json.dumps(chunk({'content': 'Let me'}))}\n\n"
        'data: {"error": {"message": "overloaded", "type": "server_error", "code": "overloaded"}}\n\n'
    )
    server.replies.append(Reply(200, body.encode(), {"Content-Type": "text/event-stream"}))

    # WHEN the model streams
    told: list[str] = []
    with pytest.raises(ModelError) as raised:
        collect(model_on(server).stream(ask()), told.append)

    # THEN the piece before the error was told, and the error says the call may pass if tried again
    assert told == ["Let me"]
    assert (raised.value.kind, raised.value.retryable, raised.value.code) == (
        ModelErrorKind.SERVER_ERROR,
        True,
        "overloaded",
    )
