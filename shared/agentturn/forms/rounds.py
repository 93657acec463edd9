"""Input rounds: a tool asks several questions at once, and is replayed with every answer, as often as it asks.

``FormRequired`` asks one form once. A tool that speaks for another system (an MCP server's ``input_required``
result) needs more: several questions in one round, each answered, declined or dismissed on its own card; an
opaque state that must come back exactly as it was given; and a new round when the answers raise new questions.
The tool raises :class:`InputRoundRequired` before any side effect; the turn waits on one card per request; once
every card of the round is settled the whole tool is replayed with ``ToolContext.input_round`` holding the state
it gave and the answers by request key. The state lives in the snapshot only (never on a card, never in the
timeline) and leaves it when the tool completes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agentturn.forms.definitions import FormDefinition

#: Bytes of JSON a round's state may hold: it is stored in the turn's snapshot until the tool completes (a
#: snapshot over a DynamoDB item's size spills to S3, so this bounds cost, not correctness).
MAX_ROUND_STATE_BYTES = 320 * 1024


class RoundAction(StrEnum):
    """What a person did with one card of a round (MCP's elicitation actions, one to one)."""

    ACCEPT = "accept"
    DECLINE = "decline"
    #: dismissed without a choice: the wait expired
    CANCEL = "cancel"


@dataclass(frozen=True)
class InputRequest:
    """One question of a round: ``key`` is the asker's own id for it (answers come back under it), ``form`` the
    card (its schema is what the person fills in), ``origin`` who asks, kept with the wait for readers."""

    key: str
    form: FormDefinition
    origin: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RoundAnswer:
    action: RoundAction
    #: the submitted values (accept only)
    content: dict[str, Any] | None = None


@dataclass(frozen=True)
class InputRound:
    """What a replayed tool sees: the state it gave with the round, and the answers by request key."""

    state: dict[str, Any]
    answers: dict[str, RoundAnswer]
    #: how many rounds this call has asked so far (1 on the replay after the first)
    number: int


class InputRoundRequired(Exception):
    """Raised by a tool, before any side effect, to ask one or more questions and be replayed with the answers."""

    def __init__(
        self, requests: Sequence[InputRequest], state: Mapping[str, Any], *, expires_in: float | None = None
    ) -> None:
        if not requests:
            raise ValueError("an input round needs at least one request")
        keys = [request.key for request in requests]
        if any(not isinstance(key, str) or not key for key in keys) or len(set(keys)) != len(keys):
            raise ValueError(f"input request keys must be distinct non-empty strings, got {keys!r}")
        super().__init__(f"input required: {', '.join(repr(key) for key in keys)}")
        self.requests = tuple(requests)
        self.state: dict[str, Any] = _kept_state(state, "an input round's state")
        #: seconds the round's cards may wait at most (sooner than the agent's own input timeout): a question that
        #: is only answerable for a while (an older MCP server holding its call open) expires with it, as ``cancel``
        self.expires_in = expires_in


def _kept_state(state: Mapping[str, Any], what: str) -> dict[str, Any]:
    """``state`` as the call keeps it: JSON only (it is stored as is), at most :data:`MAX_ROUND_STATE_BYTES`."""
    frozen: dict[str, Any] = json.loads(json.dumps(dict(state)))
    size = len(json.dumps(frozen, separators=(",", ":")).encode())
    if size > MAX_ROUND_STATE_BYTES:
        raise ValueError(f"{what} holds {size} bytes; at most {MAX_ROUND_STATE_BYTES} are kept")
    return frozen


class PollLater(Exception):
    """Raised by a tool whose work goes on elsewhere (an MCP server's task): the call keeps ``state`` (read back
    as ``ToolContext.input_round.state``, with no answers) and the tool runs again in ``delay`` seconds. No worker
    waits meanwhile: the turn is saved runnable with a not-before time, which the queue's delivery delay and the
    sweeper honour, like a retry's backoff; a crash between polls loses nothing."""

    def __init__(self, delay: float, state: Mapping[str, Any]) -> None:
        if not delay > 0:
            raise ValueError(f"a poll delay must be positive, got {delay!r}")
        state = _kept_state(state, "a poll's state")
        super().__init__(f"poll again in {delay:g} s")
        self.delay = float(delay)
        self.state: dict[str, Any] = state
