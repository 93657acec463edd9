"""Business tools and the context a tool runs in."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentturn.agents._signature import keyword_only_with_positional_fallback
from agentturn.state.messages import ToolCall

if TYPE_CHECKING:
    from agentturn.forms.rounds import InputRound

ToolFunction = Callable[[dict[str, Any]], Any]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


class Tool:
    """A tool the model may call. ``function(arguments)`` returns any JSON-serialisable value."""

    @keyword_only_with_positional_fallback(through="metadata")
    def __init__(
        self,
        name: str,
        description: str,
        function: ToolFunction,
        *,
        parameters: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotent: bool = False,
    ) -> None:
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise ValueError(f"tool name {name!r} must match {_TOOL_NAME.pattern}")
        if not callable(function):
            raise TypeError(f"tool {name!r}: function must be callable")
        self.name = name
        self.description = description
        self.function = function
        self.parameters: dict[str, Any] = copy.deepcopy(dict(parameters or _EMPTY_PARAMETERS))
        self.metadata: dict[str, Any] = copy.deepcopy(dict(metadata or {}))
        #: Running the tool again for the same call (the same ``ToolContext.idempotency_key``) changes nothing
        #: beyond what its first run did. Its result is then not saved on its own: the run's next save carries
        #: it (one write less per call), and a crash before that runs the tool again, with the same key.
        self.idempotent = idempotent

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotent: bool = False,
    ) -> Tool:
        """A tool whose parameter JSON Schema is derived from ``function``'s type hints and docstring.

        ``function`` takes typed keyword arguments (``def reserve_room(topic: str, attendees: int = 2)``); the
        model's arguments are validated with pydantic first, and refused arguments come back to the model as
        a tool error naming each field. ``name`` defaults to the function's name, ``description`` to its
        docstring's summary. Same as the ``@tool`` decorator.
        """
        from agentturn.agents.typed_tools import tool_from_function  # pydantic model building: only when used

        return tool_from_function(
            function, name=name, description=description, metadata=metadata, idempotent=idempotent
        )

    def abandon(self, state: Mapping[str, Any]) -> None:
        """Called once, best effort, after a turn ended (a cancel) while a call of this tool still kept
        ``state`` (an input round's or a poll's, :class:`agentturn.forms.rounds.PollLater`): let go of work
        started elsewhere. The default does nothing; an MCP tool cancels the server's task."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about a tool: no metadata, no schemas of forms."""

    name: str
    description: str
    parameters: dict[str, Any]


ProgressSink = Callable[[str, Mapping[str, Any] | None], None]


@dataclass(frozen=True)
class ToolContext:
    """The context of the tool call being executed; ``ToolContext.current()`` inside a tool function."""

    turn_id: str
    tool_call_id: str
    tool_call: ToolCall
    submitted_form_data: dict[str, Any] = field(default_factory=dict)
    #: True on the replay after a person submitted the form this call asked for, even when they submitted
    #: ``{}`` (a form whose fields are all optional): "submitted empty" is not "nobody was asked".
    form_submitted: bool = False
    #: On the replay after every card of an input round (``InputRoundRequired``) was settled: the state the
    #: tool gave with the round and the answers by request key; None otherwise.
    input_round: InputRound | None = None
    #: the runner's clock (epoch seconds) when the call started: what a tool compares its stored deadlines with
    now: float = 0.0
    _progress: ProgressSink | None = field(default=None, repr=False)
    _cancel_probe: Callable[[], bool] | None = field(default=None, repr=False)
    #: saves the call before its key is first handed out, when it is not saved yet (see the property)
    _make_durable: Callable[[], None] | None = field(default=None, repr=False)

    @property
    def idempotency_key(self) -> str:
        """Stable across replays of the same logical tool call: use it for every external write.

        The first time a tool asks for it, the runtime saves the call if it was not saved yet, so that a replay
        after a crash is this same call with this same key. That save can fail (another worker took the turn
        over): then this raises, the tool must not act, and whatever it returns is discarded.
        """
        if self._make_durable is not None:
            self._make_durable()
        return f"{self.turn_id}:{self.tool_call_id}"

    def emit_progress(self, stage: str, data: Mapping[str, Any] | None = None) -> None:
        if self._progress is not None:
            self._progress(stage, data)

    def is_cancellation_requested(self) -> bool:
        return self._cancel_probe() if self._cancel_probe is not None else False

    @staticmethod
    def current() -> ToolContext:
        context = _current.get()
        if context is None:
            raise RuntimeError("ToolContext.current() called outside a tool execution")
        return context


_current: ContextVar[ToolContext | None] = ContextVar("agentturn_tool_context", default=None)


@contextmanager
def tool_context(context: ToolContext) -> Iterator[ToolContext]:
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)
