"""A chat model on any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, ...).

Only the standard library: one ``POST {base_url}/chat/completions`` per call; ``stream`` sends
``"stream": true`` and reads the server-sent events (``data: {chunk}`` lines up to ``data: [DONE]``), telling
each ``delta.content`` as it comes and assembling each tool call from its ``delta.tool_calls[index]``
pieces (id and name first, then fragments of the arguments). A server that ignores ``stream`` and answers
one JSON body is read as ``chat`` would.

Mapping (agentturn → chat completions):

- ``request.system`` → a first ``{"role": "system"}`` message (left out when blank);
- ``UserMessage`` → ``{"role": "user", "content": text}``;
- ``AiMessage`` → ``{"role": "assistant", "content": text or null, "tool_calls": [{"id", "type": "function",
  "function": {"name", "arguments": "<JSON string>"}}]}``;
- ``ToolMessage`` → ``{"role": "tool", "tool_call_id", "content"}``, the content a JSON string (a
  plain-text result is sent as it is);
- ``request.tools`` → ``"tools": [{"type": "function", "function": {"name", "description", "parameters"}}]``.

The reply is ``choices[0].message``. Its ``function.arguments`` is parsed as JSON: blank or ``null`` is
``{}``; anything that is not a JSON object raises :class:`ModelError` (kind ``malformed_response``, with the
tool's name and the start of the raw text) — a tool never runs on guessed arguments. Timeouts, refused
connections, HTTP errors and unusable bodies are :class:`ModelError` too, with the HTTP status and a short
excerpt of the body; the API key never appears in an error.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from email.message import Message
from typing import IO, Any, Final

from pydantic import JsonValue

from agentturn.errors import ModelError, ModelErrorKind
from agentturn.models._history import excerpt, paired, result_text
from agentturn.ports.chat_model import ChatRequest, StreamPart, TextDelta
from agentturn.state.messages import AiMessage, ModelMessage, ToolCall, UserMessage

PROVIDER: Final = "openai-compatible"

#: How much of an error body is read; the excerpt in the message is shorter still.
_MAX_ERROR_BODY: Final = 64 * 1024

_REDACTED: Final = "[redacted]"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would turn the POST into a GET and send the Authorization header along."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Message,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


class OpenAICompatibleModel:
    """:class:`agentturn.ChatModel` over ``POST {base_url}/chat/completions``.

    ``base_url`` is the API root, such as ``https://api.openai.com/v1`` or Ollama's
    ``http://localhost:11434/v1``. ``api_key`` is sent as ``Authorization: Bearer ...`` (not at all when
    ``None``); ``extra_headers`` are added to every request and win over the default ones. ``temperature``
    and ``max_tokens`` are sent only when set; ``extra_body`` is merged into the request body as it is
    (``{"max_completion_tokens": 1024}``, ``{"tool_choice": "required"}``, ...). Nothing is retried:
    a :class:`ModelError` says whether the call is ``retryable`` and, after a 429, the ``retry_after``
    the server asked for.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        extra_headers: Mapping[str, str] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url {base_url!r} must be an http:// or https:// URL")
        if not model or not model.strip():
            raise ValueError("model must not be blank")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self._api_key = api_key or None
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "agentturn"}
        if self._api_key is not None:
            self._headers["Authorization"] = f"Bearer {self._api_key}"
        self._headers.update(extra_headers or {})
        # Cut out of every error: the key, and any header value long enough to be a credential.
        self._secrets = [v for v in (extra_headers or {}).values() if len(v) >= 8]
        if self._api_key is not None:
            self._secrets.insert(0, self._api_key)
        #: Where errors say the model lives: the URL without credentials, query or fragment.
        self._where = urllib.parse.urlunsplit((parts.scheme, _host(parts), parts.path.rstrip("/"), "", ""))
        self._opener = urllib.request.build_opener(_NoRedirect())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._where!r}, model={self.model!r})"

    # -- ChatModel ---------------------------------------------------------------------------------------

    def chat(self, request: ChatRequest) -> AiMessage:
        with self._open(self.request_body(request)) as response:
            status = int(response.status)
            raw = self._read(response.read)
        return self._reply(status, raw)

    def stream(self, request: ChatRequest) -> Iterator[StreamPart]:
        """The reply as it is produced: each piece of text, then the whole message (tool calls assembled)."""
        with self._open({**self.request_body(request), "stream": True}, accept="text/event-stream") as response:
            status = int(response.status)
            if "text/event-stream" not in response.headers.get("Content-Type", ""):
                reply = self._reply(status, self._read(response.read))
                if reply.content:
                    yield TextDelta(reply.content)
                yield reply
                return
            texts: list[str] = []
            calls: dict[int, dict[str, str]] = {}
            for chunk in self._chunks(response):
                delta = _first_delta(chunk)
                if delta is None:
                    continue
                text = _content_text(delta.get("content"))
                if text:
                    texts.append(text)
                    yield TextDelta(text)
                for piece in delta.get("tool_calls") or []:
                    self._add_call_piece(calls, piece)
        built = [
            self._tool_call(
                index, {"id": call["id"], "function": {"name": call["name"], "arguments": call["arguments"]}}
            )
            for index, call in sorted(calls.items())
        ]
        yield AiMessage(content="".join(texts), tool_calls=built)

    def _open(self, body: dict[str, Any], *, accept: str = "application/json") -> http.client.HTTPResponse:
        data = json.dumps(body, ensure_ascii=False).encode()
        headers = {**self._headers, "Accept": accept} if accept != "application/json" else self._headers
        http_request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            response: http.client.HTTPResponse = self._opener.open(http_request, timeout=self.timeout)
            return response
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc) from exc
        except TimeoutError as exc:
            raise self._error(ModelErrorKind.TIMEOUT, f"no reply within {self.timeout:g} s", retryable=True) from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise self._error(
                    ModelErrorKind.TIMEOUT, f"no connection within {self.timeout:g} s", retryable=True
                ) from exc
            raise self._error(
                ModelErrorKind.CONNECTION, f"cannot reach the endpoint: {exc.reason}", retryable=True
            ) from exc
        except (http.client.HTTPException, ConnectionError) as exc:
            raise self._broken(exc) from exc

    def _read(self, read: Any) -> bytes:
        try:
            data: bytes = read()
            return data
        except TimeoutError as exc:
            raise self._error(ModelErrorKind.TIMEOUT, f"no reply within {self.timeout:g} s", retryable=True) from exc
        except (http.client.HTTPException, ConnectionError) as exc:
            raise self._broken(exc) from exc

    def _broken(self, exc: Exception) -> ModelError:
        return self._error(
            ModelErrorKind.CONNECTION, f"the connection broke: {type(exc).__name__}: {exc}", retryable=True
        )

    def _chunks(self, response: http.client.HTTPResponse) -> Iterator[Any]:
        """The JSON documents of the ``data:`` lines, up to ``[DONE]`` (or the end of the body)."""
        while True:
            line = self._read(response.readline)
            if not line:
                return
            text = line.decode("utf-8", errors="replace").strip()
            if not text.startswith("data:"):
                continue  # blank separators, comments (": keep-alive"), event: and id: fields
            payload = text[len("data:") :].strip()
            if payload == "[DONE]":
                return
            try:
                chunk = json.loads(payload)
            except json.JSONDecodeError:
                raise self._error(
                    ModelErrorKind.MALFORMED_RESPONSE, f"a stream chunk is not JSON: {self._excerpt(payload)!r}"
                ) from None
            if isinstance(chunk, dict) and chunk.get("error") is not None:
                detail, code = _error_detail(payload)
                raise self._error(
                    ModelErrorKind.SERVER_ERROR,
                    "the stream ended in an error" + (f" ({code})" if code else "") + f": {self._excerpt(detail)}",
                    code=code,
                    retryable=True,
                )
            yield chunk

    def _add_call_piece(self, calls: dict[int, dict[str, str]], piece: Any) -> None:
        index = piece.get("index") if isinstance(piece, dict) else None
        if not isinstance(index, int):
            raise self._error(
                ModelErrorKind.MALFORMED_RESPONSE, f"a streamed tool call has no index: {self._excerpt(piece)!r}"
            )
        call = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        if isinstance(piece.get("id"), str):
            call["id"] = piece["id"]
        function = piece.get("function")
        if isinstance(function, dict):
            if isinstance(function.get("name"), str):
                call["name"] += function["name"]
            if isinstance(function.get("arguments"), str):
                call["arguments"] += function["arguments"]

    # -- request -----------------------------------------------------------------------------------------

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``."""
        messages: list[dict[str, Any]] = []
        if request.system.strip():
            messages.append({"role": "system", "content": request.system})
        for message in paired(request.messages):
            wire = _message(message)
            if wire is not None:
                messages.append(wire)
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
                }
                for spec in request.tools
            ]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body)
        return body

    # -- response ----------------------------------------------------------------------------------------

    def _reply(self, status: int, raw: bytes) -> AiMessage:
        text = raw.decode("utf-8", errors="replace")
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            raise self._error(
                ModelErrorKind.MALFORMED_RESPONSE, f"HTTP {status}, body is not JSON: {self._excerpt(text)!r}"
            ) from None
        message = _first_message(document)
        if message is None:
            raise self._error(
                ModelErrorKind.MALFORMED_RESPONSE,
                f"HTTP {status}, no choices[0].message in {self._excerpt(text)!r}",
            )
        calls: list[ToolCall] = []
        for index, call in enumerate(message.get("tool_calls") or []):
            calls.append(self._tool_call(index, call))
        return AiMessage(content=_content_text(message.get("content")), tool_calls=calls)

    def _tool_call(self, index: int, call: Any) -> ToolCall:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str) or not name:
            raise self._error(
                ModelErrorKind.MALFORMED_RESPONSE, f"tool_calls[{index}] has no function name: {self._excerpt(call)!r}"
            )
        call_id = call.get("id")
        return ToolCall(
            # A missing id is left blank: the runner gives such a call an id of its own.
            id=call_id if isinstance(call_id, str) else "",
            name=name,
            arguments=self._arguments(name, function.get("arguments")),
        )

    def _arguments(self, name: str, raw: Any) -> dict[str, JsonValue]:
        if isinstance(raw, dict):  # some servers send the object itself
            return raw
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return {}
        if isinstance(raw, str):
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise self._error(
                    ModelErrorKind.MALFORMED_RESPONSE,
                    f"tool call {name!r}: arguments are not valid JSON ({exc.msg}): {self._excerpt(raw)!r}",
                ) from None
            if parsed is None:
                return {}
            if isinstance(parsed, dict):
                return parsed
        raise self._error(
            ModelErrorKind.MALFORMED_RESPONSE,
            f"tool call {name!r}: arguments are not a JSON object: {self._excerpt(raw)!r}",
        )

    # -- errors ------------------------------------------------------------------------------------------

    def _http_error(self, exc: urllib.error.HTTPError) -> ModelError:
        status = int(exc.code)
        try:
            raw = exc.read(_MAX_ERROR_BODY)
        except (OSError, http.client.HTTPException):
            raw = b""
        finally:
            exc.close()
        text = raw.decode("utf-8", errors="replace")
        detail, code = _error_detail(text)
        if 300 <= status < 400:
            location = exc.headers.get("Location", "")
            return self._error(
                ModelErrorKind.INVALID_REQUEST,
                f"HTTP {status}: redirected to {self._excerpt(location)!r}; redirects are not followed,"
                " set base_url to the final URL",
                status=status,
            )
        kind, retryable = _status_kind(status)
        return self._error(
            kind,
            f"HTTP {status}" + (f" ({code})" if code else "") + f": {self._excerpt(detail)}",
            status=status,
            code=code,
            retryable=retryable,
            retry_after=_retry_after(exc.headers.get("Retry-After")) if status == 429 else None,
        )

    def _error(
        self,
        kind: ModelErrorKind,
        detail: str,
        *,
        status: int | None = None,
        code: str | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> ModelError:
        return ModelError(
            f"{PROVIDER} model {self.model!r} at {self._where!r}: {kind.value}: {detail}",
            kind=kind,
            provider=PROVIDER,
            model=self.model,
            status=status,
            code=code,
            retryable=retryable,
            retry_after=retry_after,
        )

    def _excerpt(self, value: Any, limit: int = 300) -> str:
        """A short one-line excerpt of ``value`` with every secret of this model cut out."""
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        for secret in self._secrets:
            text = text.replace(secret, _REDACTED)
        return excerpt(text, limit)


def _host(parts: urllib.parse.SplitResult) -> str:
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port is not None else host


def _message(message: ModelMessage) -> dict[str, Any] | None:
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, AiMessage):
        if not message.tool_calls:
            return {"role": "assistant", "content": message.content} if message.content.strip() else None
        return {
            "role": "assistant",
            "content": message.content if message.content.strip() else None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": result_text(message.content)}


def _first_message(document: Any) -> dict[str, Any] | None:
    choices = document.get("choices") if isinstance(document, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, dict) else None


def _first_delta(chunk: Any) -> dict[str, Any] | None:
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None  # e.g. the last chunk of ``stream_options.include_usage``, which carries only usage
    delta = choices[0].get("delta")
    return delta if isinstance(delta, dict) else None


def _content_text(content: Any) -> str:
    """``message.content``: a string, ``null``, or (some servers) a list of ``{"type": "text", "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def _error_detail(text: str) -> tuple[str, str | None]:
    """The message and code of an error body (``{"error": {"message", "type", "code"}}``), else the body."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return text or "(empty body)", None
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(error, dict):
        message = error.get("message")
        code = error.get("code") or error.get("type")
        return (str(message) if message else text), (str(code) if code else None)
    if isinstance(error, str):  # Ollama, vLLM: {"error": "..."}
        return error, None
    return text, None


def _status_kind(status: int) -> tuple[ModelErrorKind, bool]:
    if status == 429:
        return ModelErrorKind.THROTTLED, True
    if status in (401, 403):
        return ModelErrorKind.AUTH, False
    if status == 404:
        return ModelErrorKind.NOT_FOUND, False
    if status in (408, 504):
        return ModelErrorKind.TIMEOUT, True
    if status >= 500:
        return ModelErrorKind.SERVER_ERROR, True
    return ModelErrorKind.INVALID_REQUEST, False


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (only the delta-seconds form; an HTTP date is ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
