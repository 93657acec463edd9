"""A chat model on Amazon Bedrock's Converse API, with tool use.

Mapping (agentturn → Converse):

- ``request.system`` → ``system=[{"text": ...}]`` (left out when blank);
- ``UserMessage`` → a ``user`` message with a text block;
- ``AiMessage`` → an ``assistant`` message: its text, then one ``toolUse`` block per call
  (``toolUseId``, ``name``, ``input``);
- ``ToolMessage`` → a ``toolResult`` block in a ``user`` message: ``content=[{"json": ...}]`` for an object,
  ``[{"text": ...}]`` for anything else; ``status: "error"`` when the result has ``"status": "error"``.
  Consecutive messages of one role become one Converse message (the results of one assistant message's
  calls share one user message, as Converse requires); blank text blocks, which Converse refuses, are left
  out;
- ``request.tools`` → ``toolConfig.tools[].toolSpec`` (``name``, ``description``, ``inputSchema.json``).

The reply's text blocks (joined by a newline) become ``AiMessage.content`` and its ``toolUse`` blocks its
``tool_calls``; reasoning blocks are not kept. botocore errors become :class:`agentturn.errors.ModelError`.

``stream`` sends the same request to ``ConverseStream`` and reads its events: each ``contentBlockDelta``
text is told as it comes; a ``toolUse`` block is assembled from its ``contentBlockStart`` (id, name) and the
JSON fragments of its deltas, parsed at ``contentBlockStop``; ``messageStop`` carries the stop reason. An
exception event inside the stream (throttling, a model stream error) is a :class:`ModelError` like a failed
call.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
    ReadTimeoutError,
)
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from agentturn.agents.tools import ToolSpec
from agentturn.errors import ModelError, ModelErrorKind
from agentturn.models._history import is_error_result, paired, result_text
from agentturn.ports.chat_model import ChatRequest, StreamPart, TextDelta
from agentturn.state.messages import AiMessage, ModelMessage, ToolCall, ToolMessage, UserMessage

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
    from mypy_boto3_bedrock_runtime.type_defs import (
        ContentBlockOutputTypeDef,
        ContentBlockTypeDef,
        ConverseRequestTypeDef,
        ConverseResponseTypeDef,
        InferenceConfigurationTypeDef,
        MessageTypeDef,
        SystemContentBlockTypeDef,
        ToolResultContentBlockTypeDef,
        ToolTypeDef,
    )

_log = logging.getLogger(__name__)

PROVIDER: Final = "bedrock"

#: Converse error codes → (kind, whether the same request may succeed later).
_CODES: Final[Mapping[str, tuple[ModelErrorKind, bool]]] = {
    "ThrottlingException": (ModelErrorKind.THROTTLED, True),
    "ServiceQuotaExceededException": (ModelErrorKind.THROTTLED, True),
    "ValidationException": (ModelErrorKind.INVALID_REQUEST, False),
    "AccessDeniedException": (ModelErrorKind.AUTH, False),
    "UnrecognizedClientException": (ModelErrorKind.AUTH, False),
    "ExpiredTokenException": (ModelErrorKind.AUTH, False),
    "InvalidSignatureException": (ModelErrorKind.AUTH, False),
    "ResourceNotFoundException": (ModelErrorKind.NOT_FOUND, False),
    "ModelTimeoutException": (ModelErrorKind.TIMEOUT, True),
    "ModelNotReadyException": (ModelErrorKind.SERVER_ERROR, True),
    "ServiceUnavailableException": (ModelErrorKind.SERVER_ERROR, True),
    "InternalServerException": (ModelErrorKind.SERVER_ERROR, True),
    "ModelErrorException": (ModelErrorKind.SERVER_ERROR, True),
    "modelStreamErrorException": (ModelErrorKind.SERVER_ERROR, True),
    "ModelStreamErrorException": (ModelErrorKind.SERVER_ERROR, True),
    "throttlingException": (ModelErrorKind.THROTTLED, True),
    "internalServerException": (ModelErrorKind.SERVER_ERROR, True),
    "serviceUnavailableException": (ModelErrorKind.SERVER_ERROR, True),
    "validationException": (ModelErrorKind.INVALID_REQUEST, False),
}

#: Stop reasons that mean the reply cannot be used as it is.
_MALFORMED_STOPS: Final = frozenset({"malformed_model_output", "malformed_tool_use"})

_Role = Literal["user", "assistant"]


class BedrockConverseModel:
    """:class:`agentturn.ChatModel` over Bedrock's ``Converse`` (``bedrock-runtime``), tools included.

    ``model_id`` is a model id or an inference profile (``"us.anthropic.claude-…"``). Give either ``client``
    (a ``bedrock-runtime`` client you made) or ``region``; without a client one is made on first use, with
    botocore's "standard" retries (throttling and transient errors are retried with backoff before a
    :class:`ModelError` is raised) and ``timeout`` seconds to read a reply. ``max_tokens=None`` leaves the
    limit to the model. ``additional_model_request_fields`` is passed through as it is (model-specific
    parameters such as ``top_k``).
    """

    def __init__(
        self,
        model_id: str,
        *,
        client: BedrockRuntimeClient | None = None,
        region: str | None = None,
        max_tokens: int | None = 2048,
        temperature: float | None = None,
        top_p: float | None = None,
        stop_sequences: Sequence[str] = (),
        additional_model_request_fields: Mapping[str, Any] | None = None,
        timeout: float = 120.0,
    ) -> None:
        if not model_id or not model_id.strip():
            raise ValueError("model_id must not be blank")
        if client is not None and region is not None:
            raise ValueError("give either client or region, not both: a client already has its region")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {max_tokens!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        self.model_id = model_id
        self.region = region
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.stop_sequences = list(stop_sequences)
        self.additional_model_request_fields = dict(additional_model_request_fields or {})
        self.timeout = timeout
        self._client = client
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r})"

    # -- ChatModel ---------------------------------------------------------------------------------------

    def chat(self, request: ChatRequest) -> AiMessage:
        arguments = self.converse_request(request)
        with self._mapped_errors():
            response = self._get_client().converse(**arguments)
        usage = response.get("usage", {})
        _log.debug(
            "bedrock %r: stopReason=%r inputTokens=%r outputTokens=%r",
            self.model_id,
            response.get("stopReason"),
            usage.get("inputTokens"),
            usage.get("outputTokens"),
        )
        return self._reply(response)

    def stream(self, request: ChatRequest) -> Iterator[StreamPart]:
        """``ConverseStream``: each text piece as it comes, then the whole reply (the same as ``chat``'s)."""
        # The same request: ConverseStream takes Converse's arguments (its typed dict differs only in the
        # guardrail's stream options, which this adapter does not set).
        arguments: Any = self.converse_request(request)
        with self._mapped_errors():
            events = self._get_client().converse_stream(**arguments)["stream"]
        blocks: dict[int, dict[str, Any]] = {}
        stop_reason = ""
        with self._mapped_errors():
            for event in events:
                if "contentBlockStart" in event:
                    start = event["contentBlockStart"]
                    use = start.get("start", {}).get("toolUse")
                    if use is not None:
                        blocks[start["contentBlockIndex"]] = {"toolUse": {**use, "input": ""}}
                elif "contentBlockDelta" in event:
                    piece = event["contentBlockDelta"]
                    delta = piece.get("delta", {})
                    block = blocks.setdefault(piece["contentBlockIndex"], {"text": ""})
                    if "text" in delta and "text" in block:
                        block["text"] += delta["text"]
                        if delta["text"]:
                            yield TextDelta(delta["text"])
                    elif "toolUse" in delta and "toolUse" in block:
                        block["toolUse"]["input"] += delta["toolUse"].get("input", "")
                elif "messageStop" in event:
                    stop_reason = str(event["messageStop"].get("stopReason", ""))
        content = [self._streamed_block(block) for _, block in sorted(blocks.items())]
        yield self._reply({"stopReason": stop_reason, "output": {"message": {"role": "assistant", "content": content}}})  # type: ignore[typeddict-item]

    def _streamed_block(self, block: dict[str, Any]) -> Any:
        if "toolUse" not in block:
            return block
        use = block["toolUse"]
        raw = use["input"]
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            raise self._error(
                ModelErrorKind.MALFORMED_RESPONSE,
                f"tool call {use.get('name')!r}: streamed input is not valid JSON: {raw[:200]!r}",
                retryable=True,
            ) from None
        return {"toolUse": {"toolUseId": use.get("toolUseId", ""), "name": use.get("name", ""), "input": arguments}}

    @contextlib.contextmanager
    def _mapped_errors(self) -> Iterator[None]:
        """botocore's failures of a call, or of reading its event stream, as :class:`ModelError`."""
        try:
            yield
        except ClientError as exc:  # EventStreamError (an exception event in a stream) is one too
            raise self._client_error(exc) from exc
        except (ReadTimeoutError, ConnectTimeoutError) as exc:
            raise self._error(ModelErrorKind.TIMEOUT, f"no reply in time: {exc}", retryable=True) from exc
        except (BotocoreConnectionError, HTTPClientError) as exc:
            raise self._error(ModelErrorKind.CONNECTION, f"cannot reach Bedrock: {exc}", retryable=True) from exc
        except (NoCredentialsError, PartialCredentialsError) as exc:
            raise self._error(ModelErrorKind.AUTH, f"no usable AWS credentials: {exc}") from exc
        except ParamValidationError as exc:
            raise self._error(ModelErrorKind.INVALID_REQUEST, f"request refused by botocore: {exc}") from exc

    # -- request -----------------------------------------------------------------------------------------

    def converse_request(self, request: ChatRequest) -> ConverseRequestTypeDef:
        """The keyword arguments of ``client.converse(...)`` for ``request``."""
        messages = _messages(request.messages, tools_declared=bool(request.tools))
        arguments: ConverseRequestTypeDef = {"modelId": self.model_id, "messages": messages}
        if request.system.strip():
            system: list[SystemContentBlockTypeDef] = [{"text": request.system}]
            arguments["system"] = system
        if request.tools:
            arguments["toolConfig"] = {"tools": [_tool(spec) for spec in request.tools]}
        inference = self._inference_config()
        if inference:
            arguments["inferenceConfig"] = inference
        if self.additional_model_request_fields:
            arguments["additionalModelRequestFields"] = self.additional_model_request_fields
        return arguments

    def _inference_config(self) -> InferenceConfigurationTypeDef:
        config: InferenceConfigurationTypeDef = {}
        if self.max_tokens is not None:
            config["maxTokens"] = self.max_tokens
        if self.temperature is not None:
            config["temperature"] = self.temperature
        if self.top_p is not None:
            config["topP"] = self.top_p
        if self.stop_sequences:
            config["stopSequences"] = list(self.stop_sequences)
        return config

    # -- response ----------------------------------------------------------------------------------------

    def _reply(self, response: ConverseResponseTypeDef) -> AiMessage:
        stop_reason = str(response.get("stopReason", ""))
        if stop_reason in _MALFORMED_STOPS:
            raise self._error(
                ModelErrorKind.MALFORMED_RESPONSE,
                f"the model produced unusable output (stopReason {stop_reason!r})",
                code=stop_reason,
                retryable=True,
            )
        message = response.get("output", {}).get("message")
        if message is None:
            raise self._error(ModelErrorKind.MALFORMED_RESPONSE, "the response has no output message")
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in message["content"]:
            if "text" in block:
                texts.append(block["text"])
            elif "toolUse" in block:
                calls.append(self._tool_call(block))
        return AiMessage(content="\n".join(text for text in texts if text), tool_calls=calls)

    def _tool_call(self, block: ContentBlockOutputTypeDef) -> ToolCall:
        use = block["toolUse"]
        arguments: Any = use.get("input")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise self._error(
                ModelErrorKind.MALFORMED_RESPONSE,
                f"tool call {use['name']!r}: input is a {type(arguments).__name__}, not an object",
            )
        return ToolCall(id=use["toolUseId"], name=use["name"], arguments=arguments)

    # -- errors ------------------------------------------------------------------------------------------

    def _client_error(self, exc: ClientError) -> ModelError:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "")) or "UnknownError"
        text = str(error.get("Message", "")) or "no message"
        status_code = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        status = int(status_code) if status_code is not None else None
        known = _CODES.get(code)
        if known is not None:
            kind, retryable = known
        elif status is not None and status >= 500:
            kind, retryable = ModelErrorKind.SERVER_ERROR, True
        else:
            kind, retryable = ModelErrorKind.INVALID_REQUEST, False
        return self._error(kind, f"{code}: {text}", status=status, code=code, retryable=retryable)

    def _error(
        self,
        kind: ModelErrorKind,
        detail: str,
        *,
        status: int | None = None,
        code: str | None = None,
        retryable: bool = False,
    ) -> ModelError:
        return ModelError(
            f"bedrock model {self.model_id!r}: {kind.value}: {detail}",
            kind=kind,
            provider=PROVIDER,
            model=self.model_id,
            status=status,
            code=code,
            retryable=retryable,
        )

    # -- client ------------------------------------------------------------------------------------------

    def _get_client(self) -> BedrockRuntimeClient:
        with self._client_lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    def _make_client(self) -> BedrockRuntimeClient:
        import boto3
        from botocore.config import Config

        config = Config(
            retries={"mode": "standard", "max_attempts": 4},
            connect_timeout=10,
            read_timeout=self.timeout,
        )
        try:
            return boto3.client("bedrock-runtime", region_name=self.region, config=config)
        except NoRegionError as exc:
            raise self._error(ModelErrorKind.CONFIGURATION, "no AWS region: pass region=... or set AWS_REGION") from exc
        except BotoCoreError as exc:
            raise self._error(ModelErrorKind.CONFIGURATION, f"cannot create a bedrock-runtime client: {exc}") from exc


def _messages(messages: Sequence[ModelMessage], *, tools_declared: bool) -> list[MessageTypeDef]:
    grouped: list[tuple[_Role, list[ContentBlockTypeDef]]] = []
    for message in paired(messages):
        role, blocks = _blocks(message) if tools_declared else _text_blocks(message)
        if not blocks:
            continue
        if grouped and grouped[-1][0] == role:
            grouped[-1][1].extend(blocks)
        else:
            grouped.append((role, blocks))
    return [{"role": role, "content": blocks} for role, blocks in grouped]


def _blocks(message: ModelMessage) -> tuple[_Role, list[ContentBlockTypeDef]]:
    if isinstance(message, UserMessage):
        return "user", _text(message.content)
    if isinstance(message, AiMessage):
        blocks = _text(message.content)
        for call in message.tool_calls:
            blocks.append({"toolUse": {"toolUseId": call.id, "name": call.name, "input": dict(call.arguments)}})
        return "assistant", blocks
    return "user", [_tool_result(message)]


def _text_blocks(message: ModelMessage) -> tuple[_Role, list[ContentBlockTypeDef]]:
    """``message`` as text only: Converse refuses toolUse and toolResult blocks in a request without tools
    (an agent without tools continuing a conversation where another agent used some)."""
    if isinstance(message, UserMessage):
        return "user", _text(message.content)
    if isinstance(message, AiMessage):
        lines = [message.content] if message.content.strip() else []
        lines += [f"[called tool {c.name} with {result_text(c.arguments)}]" for c in message.tool_calls]
        return "assistant", _text("\n".join(lines))
    return "user", _text(
        f"[result of tool {message.tool_name or message.tool_call_id}: {result_text(message.content)}]"
    )


def _text(text: str) -> list[ContentBlockTypeDef]:
    return [{"text": text}] if text.strip() else []


def _tool_result(message: ToolMessage) -> ContentBlockTypeDef:
    content = message.content
    result: list[ToolResultContentBlockTypeDef]
    if isinstance(content, dict):
        result = [{"json": content}]
    else:
        text = result_text(content)
        result = [{"text": text if text.strip() else "(empty result)"}]
    if is_error_result(content):
        return {"toolResult": {"toolUseId": message.tool_call_id, "content": result, "status": "error"}}
    return {"toolResult": {"toolUseId": message.tool_call_id, "content": result}}


def _tool(spec: ToolSpec) -> ToolTypeDef:
    if spec.description.strip():
        return {
            "toolSpec": {"name": spec.name, "description": spec.description, "inputSchema": {"json": spec.parameters}}
        }
    return {"toolSpec": {"name": spec.name, "inputSchema": {"json": spec.parameters}}}
