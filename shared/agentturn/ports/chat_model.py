"""The chat model port, and a scripted model for tests and the demo.

A model answers a :class:`ChatRequest` with one :class:`AiMessage` (``chat``). A model that can stream also
has ``stream(request)``: an iterator of :class:`TextDelta` pieces of the answer's text as the provider
produces them, ending with the whole :class:`AiMessage` (tool calls assembled from their deltas). The
runner streams when the model can (:func:`can_stream`); the reply it keeps is the final message either way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias, runtime_checkable

from agentturn.agents.tools import ToolSpec
from agentturn.state.messages import AiMessage, ModelMessage


@dataclass(frozen=True)
class ChatRequest:
    """What a model is given: instructions, model-visible messages (oldest first) and the tools it may call."""

    system: str
    messages: list[ModelMessage]
    tools: list[ToolSpec] = field(default_factory=list)


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer's text, in order; the pieces of one call join to the final message's content."""

    text: str


#: What ``stream`` yields: text pieces, then exactly one whole reply, last.
StreamPart: TypeAlias = TextDelta | AiMessage


@runtime_checkable
class ChatModel(Protocol):
    def chat(self, request: ChatRequest) -> AiMessage: ...


@runtime_checkable
class StreamingChatModel(ChatModel, Protocol):
    def stream(self, request: ChatRequest) -> Iterator[StreamPart]: ...


class StreamIncompleteError(RuntimeError):
    """A model's stream ended without its whole reply (a broken adapter, not a provider failure)."""


def can_stream(model: ChatModel) -> bool:
    return callable(getattr(model, "stream", None))


def collect(parts: Iterable[StreamPart], on_text: Callable[[str], None] | None = None) -> AiMessage:
    """The final reply of a stream, telling ``on_text`` each non-empty text piece on the way."""
    reply: AiMessage | None = None
    for part in parts:
        if isinstance(part, TextDelta):
            if reply is not None:
                raise StreamIncompleteError("a stream went on after its final reply")
            if part.text and on_text is not None:
                on_text(part.text)
        else:
            reply = part
    if reply is None:
        raise StreamIncompleteError("a stream ended without its final reply")
    return reply


Sleeper = Callable[[float], None]


ScriptFunction = Callable[[ChatRequest], AiMessage]
_KEPT_REQUESTS = 256


class ScriptExhaustedError(RuntimeError):
    pass


class ScriptedChatModel:
    """A deterministic model: a list of responses, or a function of the request.

    With a list, the response is chosen by how many AI messages the conversation already holds, so the
    model is a function of the conversation so far: a second process that resumes a turn from the store
    gets the same next answer as the process that suspended it.
    """

    def __init__(
        self,
        responses_or_function: Sequence[AiMessage] | ScriptFunction,
        *,
        chunk_chars: int = 8,
        first_delay: float = 0.0,
        delta_delay: float = 0.0,
        sleep: Sleeper | None = None,
    ) -> None:
        if chunk_chars < 1:
            raise ValueError(f"chunk_chars must be at least 1, not {chunk_chars!r}")
        # ``stream`` sends the answer's text in pieces of ``chunk_chars``, after ``first_delay`` seconds and
        # then ``delta_delay`` between pieces (a model's latency); ``sleep`` is injected so tests wait on a
        # fake clock. Without delays nothing sleeps.
        self.chunk_chars = chunk_chars
        self.first_delay = first_delay
        self.delta_delay = delta_delay
        self._sleep = sleep
        if callable(responses_or_function):
            self._function: ScriptFunction | None = responses_or_function
            self._responses: list[AiMessage] = []
        else:
            self._function = None
            self._responses = list(responses_or_function)
        # The latest requests, for tests to inspect; bounded, since a warm Lambda reuses the model forever.
        self.requests: deque[ChatRequest] = deque(maxlen=_KEPT_REQUESTS)

    def stream(self, request: ChatRequest) -> Iterator[StreamPart]:
        """The same answer as :meth:`chat`, its text in pieces first."""
        reply = self.chat(request)
        self._pause(self.first_delay)
        text = reply.content
        for start in range(0, len(text), self.chunk_chars):
            if start:
                self._pause(self.delta_delay)
            yield TextDelta(text[start : start + self.chunk_chars])
        yield reply

    def _pause(self, seconds: float) -> None:
        if seconds > 0:
            if self._sleep is None:
                import time

                time.sleep(seconds)
            else:
                self._sleep(seconds)

    def chat(self, request: ChatRequest) -> AiMessage:
        self.requests.append(request)
        if self._function is not None:
            return self._function(request).deep_copy()
        answered = sum(1 for message in request.messages if isinstance(message, AiMessage))
        if answered >= len(self._responses):
            raise ScriptExhaustedError(f"script has {len(self._responses)} responses; asked for #{answered + 1}")
        return self._responses[answered].deep_copy()
