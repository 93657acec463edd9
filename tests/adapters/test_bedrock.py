"""The Bedrock Converse adapter against botocore's Stubber, which checks every request and response
against the bedrock-runtime service model (shapes, required members, types)."""

from __future__ import annotations

import copy
import json
import socket
from collections.abc import Iterator, Sequence
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EventStreamError
from botocore.stub import ANY, Stubber

from agentturn import (
    AiMessage,
    ChatRequest,
    ModelMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from agentturn.aws.bedrock import BedrockConverseModel
from agentturn.errors import ModelError, ModelErrorKind
from agentturn.ports.chat_model import collect
from agentturn.testing.chat_model_suite import ChatModelSuite

MODEL_ID = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
SYSTEM = "Help with incident tickets. Never guess missing fields."
TICKET_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "priority": {"type": "string", "enum": ["LOW", "NORMAL", "HIGH"]}},
    "required": ["title"],
}
TOOLS = [
    ToolSpec("create_support_ticket", "创建故障工单 (create an incident ticket)", TICKET_PARAMETERS),
    ToolSpec("lookup_user", "", {"type": "object", "properties": {"email": {"type": "string"}}}),
]
TOOL_CONFIG = {
    "tools": [
        {
            "toolSpec": {
                "name": "create_support_ticket",
                "description": "创建故障工单 (create an incident ticket)",
                "inputSchema": {"json": TICKET_PARAMETERS},
            }
        },
        # Converse refuses an empty description: it is left out
        {
            "toolSpec": {
                "name": "lookup_user",
                "inputSchema": {"json": {"type": "object", "properties": {"email": {"type": "string"}}}},
            }
        },
    ]
}
USAGE = {"inputTokens": 412, "outputTokens": 57, "totalTokens": 469}
METRICS = {"latencyMs": 1180}


def converse_response(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    """A Converse response as the service returns it (minus ResponseMetadata, which the Stubber adds)."""
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason,
        "usage": USAGE,
        "metrics": METRICS,
    }


@pytest.fixture
def client() -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1")


@pytest.fixture
def stub(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stubber:
        yield stubber
        # every stubbed call was made, no more and no fewer
        stubber.assert_no_pending_responses()


def user(text: str) -> UserMessage:
    return UserMessage(content=text)


def test_tool_use_round_trip(client: Any, stub: Stubber) -> None:
    # GIVEN a model whose first answer calls two tools, and whose second answer is text
    model = BedrockConverseModel(MODEL_ID, client=client, max_tokens=512, temperature=0.0)
    first = ChatRequest(system=SYSTEM, messages=[user("create a high priority login incident ticket")], tools=TOOLS)
    stub.add_response(
        "converse",
        converse_response(
            [
                {"text": "I'll look the user up and file the ticket."},
                {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "lookup_user", "input": {}}},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_2B1x4vXqTfC3m1aZ0bYw9g",
                        "name": "create_support_ticket",
                        "input": {"title": "登录故障 (login failure)", "priority": "HIGH"},
                    }
                },
            ],
            "tool_use",
        ),
        expected_params={
            "modelId": MODEL_ID,
            "system": [{"text": SYSTEM}],
            "messages": [{"role": "user", "content": [{"text": "create a high priority login incident ticket"}]}],
            "toolConfig": TOOL_CONFIG,
            "inferenceConfig": {"maxTokens": 512, "temperature": 0.0},
        },
    )

    # WHEN the model is asked the first time
    reply = model.chat(first)

    # THEN the reply carries the text and both tool calls, ids and inputs as Bedrock sent them
    assert reply == AiMessage(
        content="I'll look the user up and file the ticket.",
        tool_calls=[
            ToolCall(id="tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", name="lookup_user", arguments={}),
            ToolCall(
                id="tooluse_2B1x4vXqTfC3m1aZ0bYw9g",
                name="create_support_ticket",
                arguments={"title": "登录故障 (login failure)", "priority": "HIGH"},
            ),
        ],
    )

    # GIVEN both results: one failed, one an object
    lookup_failed = {"status": "error", "error": "tool_failed", "message": "KeyError: 'email'"}
    ticket = {"id": "TICKET-1A2B3C4D", "title": "登录故障 (login failure)", "priority": "HIGH"}
    second = ChatRequest(
        system=SYSTEM,
        messages=[
            *first.messages,
            reply,
            ToolMessage(tool_call_id="tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", content=lookup_failed, tool_name="lookup_user"),
            ToolMessage(
                tool_call_id="tooluse_2B1x4vXqTfC3m1aZ0bYw9g", content=ticket, tool_name="create_support_ticket"
            ),
        ],
        tools=TOOLS,
    )
    stub.add_response(
        "converse",
        converse_response([{"text": "Ticket TICKET-1A2B3C4D is filed."}], "end_turn"),
        expected_params={
            "modelId": MODEL_ID,
            "system": [{"text": SYSTEM}],
            "messages": [
                {"role": "user", "content": [{"text": "create a high priority login incident ticket"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"text": "I'll look the user up and file the ticket."},
                        {
                            "toolUse": {
                                "toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                                "name": "lookup_user",
                                "input": {},
                            }
                        },
                        {
                            "toolUse": {
                                "toolUseId": "tooluse_2B1x4vXqTfC3m1aZ0bYw9g",
                                "name": "create_support_ticket",
                                "input": {"title": "登录故障 (login failure)", "priority": "HIGH"},
                            }
                        },
                    ],
                },
                # both results in ONE user message, the failed one marked as an error
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                                "content": [{"json": lookup_failed}],
                                "status": "error",
                            }
                        },
                        {"toolResult": {"toolUseId": "tooluse_2B1x4vXqTfC3m1aZ0bYw9g", "content": [{"json": ticket}]}},
                    ],
                },
            ],
            "toolConfig": TOOL_CONFIG,
            "inferenceConfig": {"maxTokens": 512, "temperature": 0.0},
        },
    )

    # WHEN the model is asked again with the results
    final = model.chat(second)

    # THEN its answer is plain text
    assert final == AiMessage(content="Ticket TICKET-1A2B3C4D is filed.")


def test_plain_answer_without_system_or_tools(client: Any, stub: Stubber) -> None:
    # GIVEN a request with no instructions and no tools, and a model defaults otherwise
    model = BedrockConverseModel(MODEL_ID, client=client)
    stub.add_response(
        "converse",
        converse_response([{"text": "Hello!"}, {"text": "How can I help?"}], "end_turn"),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [{"role": "user", "content": [{"text": "hi"}]}],
            "inferenceConfig": {"maxTokens": 2048},
        },
    )
    # WHEN it is asked
    reply = model.chat(ChatRequest(system="  ", messages=[user("hi")]))
    # THEN no system, toolConfig or empty fields were sent, and the text blocks are joined
    assert reply == AiMessage(content="Hello!\nHow can I help?")


def test_text_result_and_plain_text_user_reply_share_the_user_message(client: Any, stub: Stubber) -> None:
    # GIVEN a tool that returned plain text, followed by the user's own words, and an empty AI message
    model = BedrockConverseModel(MODEL_ID, client=client, max_tokens=None)
    messages: list[ModelMessage] = [
        user("what time is it?"),
        AiMessage(tool_calls=[ToolCall(id="call-1-1", name="lookup_user", arguments={"email": "a@example.com"})]),
        ToolMessage(tool_call_id="call-1-1", content="Ada Lovelace", tool_name="lookup_user"),
        user("and her role?"),
    ]
    stub.add_response(
        "converse",
        converse_response([{"text": "Engineer."}], "end_turn"),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [
                {"role": "user", "content": [{"text": "what time is it?"}]},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "toolUse": {
                                "toolUseId": "call-1-1",
                                "name": "lookup_user",
                                "input": {"email": "a@example.com"},
                            }
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"toolResult": {"toolUseId": "call-1-1", "content": [{"text": "Ada Lovelace"}]}},
                        {"text": "and her role?"},
                    ],
                },
            ],
            "toolConfig": TOOL_CONFIG,
        },
    )
    # WHEN it is asked THEN consecutive user-role content is one message (Converse alternates roles)
    assert model.chat(ChatRequest(system="", messages=messages, tools=TOOLS)).content == "Engineer."


def test_a_call_left_unanswered_by_a_cancelled_turn_gets_an_error_result(client: Any, stub: Stubber) -> None:
    # GIVEN a history where an earlier turn was cancelled between a tool call and its result
    model = BedrockConverseModel(MODEL_ID, client=client, max_tokens=None)
    messages: list[ModelMessage] = [
        user("refund order O-1001"),
        AiMessage(tool_calls=[ToolCall(id="call-1-1", name="lookup_user", arguments={})]),
        user("never mind, just say hi"),
    ]
    stub.add_response(
        "converse",
        converse_response([{"text": "Hi!"}], "end_turn"),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [
                {"role": "user", "content": [{"text": "refund order O-1001"}]},
                {
                    "role": "assistant",
                    "content": [{"toolUse": {"toolUseId": "call-1-1", "name": "lookup_user", "input": {}}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": "call-1-1",
                                "content": [{"json": {"status": "error", "error": "not_executed", "message": ANY}}],
                                "status": "error",
                            }
                        },
                        {"text": "never mind, just say hi"},
                    ],
                },
            ],
            "toolConfig": TOOL_CONFIG,
        },
    )
    # WHEN the model is asked THEN the request is one Converse accepts (every toolUse has its toolResult)
    assert model.chat(ChatRequest(system="", messages=messages, tools=TOOLS)).content == "Hi!"


def test_without_tools_earlier_tool_blocks_are_sent_as_text(client: Any, stub: Stubber) -> None:
    # GIVEN an agent without tools continuing a conversation in which another agent used one
    model = BedrockConverseModel(MODEL_ID, client=client, max_tokens=None)
    messages: list[ModelMessage] = [
        user("who is a@example.com?"),
        AiMessage(tool_calls=[ToolCall(id="call-1-1", name="lookup_user", arguments={"email": "a@example.com"})]),
        ToolMessage(tool_call_id="call-1-1", content={"name": "Ada"}, tool_name="lookup_user"),
        AiMessage(content="That is Ada."),
        user("thanks"),
    ]
    stub.add_response(
        "converse",
        converse_response([{"text": "You're welcome."}], "end_turn"),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [
                {"role": "user", "content": [{"text": "who is a@example.com?"}]},
                {
                    "role": "assistant",
                    "content": [{"text": '[called tool lookup_user with {"email": "a@example.com"}]'}],
                },
                {"role": "user", "content": [{"text": '[result of tool lookup_user: {"name": "Ada"}]'}]},
                {"role": "assistant", "content": [{"text": "That is Ada."}]},
                {"role": "user", "content": [{"text": "thanks"}]},
            ],
        },
    )
    # WHEN it is asked THEN no toolUse/toolResult block is sent without a toolConfig (Converse refuses that)
    assert model.chat(ChatRequest(system="", messages=messages)).content == "You're welcome."


@pytest.mark.parametrize(
    ("code", "status", "kind", "retryable"),
    [
        ("ThrottlingException", 429, ModelErrorKind.THROTTLED, True),
        # a code this adapter does not know yet: by its status
        ("SomethingNewException", 500, ModelErrorKind.SERVER_ERROR, True),
        ("SomethingNewException", 400, ModelErrorKind.INVALID_REQUEST, False),
    ],
)
def test_client_errors_carry_the_code_status_and_message(
    client: Any, stub: Stubber, code: str, status: int, kind: ModelErrorKind, retryable: bool
) -> None:
    # GIVEN Bedrock refusing the call
    model = BedrockConverseModel(MODEL_ID, client=client)
    stub.add_client_error(
        "converse", service_error_code=code, service_message="Too many tokens", http_status_code=status
    )
    # WHEN the model is asked
    with pytest.raises(ModelError) as raised:
        model.chat(ChatRequest(system=SYSTEM, messages=[user("hi")]))
    # THEN the error is typed, names the model and the code, and says whether a retry may help
    error = raised.value
    assert (error.kind, error.retryable, error.status, error.code) == (kind, retryable, status, code)
    assert (error.provider, error.model) == ("bedrock", MODEL_ID)
    assert str(error) == f"bedrock model {MODEL_ID!r}: {kind.value}: {code}: Too many tokens"


def test_missing_region_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN no region anywhere, and a model that makes its own client
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    model = BedrockConverseModel(MODEL_ID)
    # WHEN it is first used THEN the error says what to set (constructing it made no client)
    with pytest.raises(ModelError, match="AWS_REGION") as raised:
        model.chat(ChatRequest(system="", messages=[user("hi")]))
    assert raised.value.kind is ModelErrorKind.CONFIGURATION


def test_unreachable_endpoint_is_a_connection_error() -> None:
    # GIVEN a client whose endpoint is a 127.0.0.1 port where nothing listens, and no retries
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=f"http://127.0.0.1:{port}",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=5),
    )
    # WHEN the model is asked THEN a retryable connection error, not a botocore exception
    with pytest.raises(ModelError, match="cannot reach Bedrock") as raised:
        BedrockConverseModel(MODEL_ID, client=client).chat(ChatRequest(system="", messages=[user("hi")]))
    assert (raised.value.kind, raised.value.retryable) == (ModelErrorKind.CONNECTION, True)


def test_constructor_refuses_contradictory_arguments(client: Any) -> None:
    with pytest.raises(ValueError, match="either client or region"):
        BedrockConverseModel(MODEL_ID, client=client, region="eu-west-1")
    with pytest.raises(ValueError, match="model_id"):
        BedrockConverseModel(" ")


# ------------------------------------------------------------------------------ the shipped conformance suite

#: How Bedrock says each failure (the suite checks the kind and ``retryable`` the adapter reports).
FAILURES: dict[ModelErrorKind, tuple[str, int]] = {
    ModelErrorKind.THROTTLED: ("ThrottlingException", 429),
    ModelErrorKind.INVALID_REQUEST: ("ValidationException", 400),
    ModelErrorKind.AUTH: ("AccessDeniedException", 403),
    ModelErrorKind.NOT_FOUND: ("ResourceNotFoundException", 404),
    ModelErrorKind.TIMEOUT: ("ModelTimeoutException", 408),
    ModelErrorKind.SERVER_ERROR: ("ServiceUnavailableException", 503),
}


def text_events(text: str, stop_reason: str = "end_turn", size: int = 5) -> list[dict[str, Any]]:
    """A ConverseStream answer in text, as its events arrive (one content block, in pieces of ``size``)."""
    deltas = [
        {"contentBlockDelta": {"delta": {"text": text[i : i + size]}, "contentBlockIndex": 0}}
        for i in range(0, len(text), size)
    ]
    return [
        {"messageStart": {"role": "assistant"}},
        *deltas,
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": stop_reason}},
        {"metadata": {"usage": USAGE, "metrics": {"latencyMs": 812}}},
    ]


def tool_use_events(calls: Sequence[ToolCall], size: int = 6) -> list[dict[str, Any]]:
    """A ConverseStream answer calling tools: each toolUse block opens with its id and name, then its input
    arrives as pieces of JSON text."""
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    for index, call in enumerate(calls):
        events.append(
            {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": call.id, "name": call.name}},
                    "contentBlockIndex": index,
                }
            }
        )
        raw = json.dumps(call.arguments, ensure_ascii=False)
        for start in range(0, len(raw), size):
            piece = {"toolUse": {"input": raw[start : start + size]}}
            events.append({"contentBlockDelta": {"delta": piece, "contentBlockIndex": index}})
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
    return [*events, {"messageStop": {"stopReason": "tool_use"}}]


class BedrockScript:
    """Bedrock's side of the suite: Converse answers queued on the Stubber, requests recorded from the
    client's own parameter-build event (after the Stubber has checked them against the service model).

    A streamed answer is queued on the Stubber as a ConverseStream response (its request checked like any
    other); the client's ``after-call`` event then puts the scripted events where botocore's event stream
    would be, since the Stubber cannot hold a stream of more than one event."""

    failure_kinds = frozenset(FAILURES)

    def __init__(self, client: Any, stub: Stubber) -> None:
        self.model = BedrockConverseModel(MODEL_ID, client=client, max_tokens=None)
        self.stub = stub
        self.streaming = False
        self.requests: list[dict[str, Any]] = []
        self.streams: list[list[Any]] = []
        client.meta.events.register("before-parameter-build.bedrock-runtime.Converse", self._record)
        client.meta.events.register("before-parameter-build.bedrock-runtime.ConverseStream", self._record)
        client.meta.events.register("after-call.bedrock-runtime.ConverseStream", self._stream_events)

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.requests.append(copy.deepcopy(params))

    def _stream_events(self, parsed: dict[str, Any], **_: Any) -> None:
        if "stream" in parsed:
            parsed["stream"] = iter(self.streams.pop(0))

    def _answer(self, events: list[dict[str, Any]], response: dict[str, Any]) -> None:
        if self.streaming:
            self.stub.add_response("converse_stream", {"stream": events[0]})
            self.streams.append(events)
        else:
            self.stub.add_response("converse", response)

    def answer_text(self, text: str) -> None:
        self._answer(text_events(text), converse_response([{"text": text}], "end_turn"))

    def answer_tool_calls(self, calls: Sequence[ToolCall]) -> None:
        uses = [{"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments}} for c in calls]
        self._answer(tool_use_events(calls), converse_response(uses, "tool_use"))

    def answer_malformed_arguments(self, tool_name: str) -> None:
        # Bedrock does not pass an unparseable call on: it says the model produced one.
        text = f"Let me call {tool_name}"
        self._answer(text_events(text, "malformed_tool_use"), converse_response([{"text": text}], "malformed_tool_use"))

    def fail(self, kind: ModelErrorKind) -> None:
        code, status = FAILURES[kind]
        self.stub.add_client_error(
            "converse_stream" if self.streaming else "converse",
            service_error_code=code,
            service_message="scripted",
            http_status_code=status,
        )

    def sent_tool_results(self) -> list[tuple[str, Any]]:
        results = []
        for message in self.requests[-1]["messages"]:
            for block in message["content"]:
                if "toolResult" in block:
                    [content] = block["toolResult"]["content"]
                    results.append((block["toolResult"]["toolUseId"], content.get("json", content.get("text"))))
        return results


class TestBedrockConformance(ChatModelSuite):
    @pytest.fixture
    def provider(self, client: Any, stub: Stubber) -> BedrockScript:
        return BedrockScript(client, stub)


def test_an_exception_event_inside_the_stream_is_a_model_error(client: Any, stub: Stubber) -> None:
    # GIVEN ConverseStream that starts answering, then sends a throttling exception event
    def events() -> Iterator[dict[str, Any]]:
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockDelta": {"delta": {"text": "Let me"}, "contentBlockIndex": 0}}
        raise EventStreamError({"Error": {"Code": "throttlingException", "Message": "slow down"}}, "ConverseStream")

    stub.add_response("converse_stream", {"stream": {"messageStart": {"role": "assistant"}}})
    client.meta.events.register(
        "after-call.bedrock-runtime.ConverseStream", lambda parsed, **_: parsed.update(stream=events())
    )

    # WHEN the model streams
    told: list[str] = []
    model = BedrockConverseModel(MODEL_ID, client=client)
    with pytest.raises(ModelError) as raised:
        collect(model.stream(ChatRequest(system="", messages=[user("hi")])), told.append)

    # THEN the piece before it was told, and the error is a retryable throttle
    assert told == ["Let me"]
    assert (raised.value.kind, raised.value.retryable) == (ModelErrorKind.THROTTLED, True)
