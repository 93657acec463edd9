"""The chat model port, and a scripted model for tests and the demo."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agentturn.messages import AiMessage, ModelMessage
from agentturn.tools import ToolSpec


@dataclass(frozen=True)
class ChatRequest:
    """What a model is given: instructions, model-visible messages (oldest first) and the tools it may call."""

    system: str
    messages: list[ModelMessage]
    tools: list[ToolSpec] = field(default_factory=list)


@runtime_checkable
class ChatModel(Protocol):
    def chat(self, request: ChatRequest) -> AiMessage: ...


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

    def __init__(self, responses_or_function: Sequence[AiMessage] | ScriptFunction) -> None:
        if callable(responses_or_function):
            self._function: ScriptFunction | None = responses_or_function
            self._responses: list[AiMessage] = []
        else:
            self._function = None
            self._responses = list(responses_or_function)
        # The latest requests, for tests to inspect; bounded, since a warm Lambda reuses the model forever.
        self.requests: deque[ChatRequest] = deque(maxlen=_KEPT_REQUESTS)

    def chat(self, request: ChatRequest) -> AiMessage:
        self.requests.append(request)
        if self._function is not None:
            return self._function(request).deep_copy()
        answered = sum(1 for message in request.messages if isinstance(message, AiMessage))
        if answered >= len(self._responses):
            raise ScriptExhaustedError(f"script has {len(self._responses)} responses; asked for #{answered + 1}")
        return self._responses[answered].deep_copy()
