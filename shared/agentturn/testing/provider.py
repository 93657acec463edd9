"""How the chat-model conformance suite scripts a provider's wire answers: a small protocol each adapter's
test supplies (a botocore Stubber for Bedrock, a local HTTP server for an OpenAI-compatible endpoint, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agentturn.errors import ModelErrorKind
from agentturn.ports.chat_model import ChatModel
from agentturn.state.messages import ToolCall


class ProviderScript(Protocol):
    """The provider behind one adapter instance, scripted one answer per ``chat`` call, in order.

    Every ``answer_*`` / ``fail`` queues the provider's wire answer to the next request the adapter sends.
    """

    @property
    def model(self) -> ChatModel:
        """The adapter under test, talking to this scripted provider."""
        ...

    #: When True, the answers queued from then on are sent as the provider's stream (the reply to a
    #: streaming request, such as Bedrock's ConverseStream or an OpenAI ``"stream": true`` request);
    #: when False (the default), as the reply to a plain request.
    streaming: bool

    @property
    def failure_kinds(self) -> frozenset[ModelErrorKind]:
        """The failures :meth:`fail` can script on this provider (the others are skipped, and reported)."""
        ...

    def answer_text(self, text: str) -> None:
        """The model answers ``text``, calling no tool."""
        ...

    def answer_tool_calls(self, calls: Sequence[ToolCall]) -> None:
        """The model calls these tools (with these ids and arguments), in this order, and says nothing else."""
        ...

    def answer_malformed_arguments(self, tool_name: str) -> None:
        """The model calls ``tool_name`` with arguments that are not a JSON object (or the provider reports
        that the model produced an unparseable tool call)."""
        ...

    def fail(self, kind: ModelErrorKind) -> None:
        """The provider refuses or fails the next request in the way its adapter must report as ``kind``."""
        ...

    def sent_tool_results(self) -> list[tuple[str, Any]]:
        """The tool results the adapter sent in its last request, in order: (tool call id, the result as a
        JSON value, decoded where the provider carries it as text)."""
        ...
