"""The list of a person's conversations (``GET /conversations``): what is listed, and the port that lists it.

A conversation is listed under the owner its turns name (``turn.metadata["ownerId"]``, set by the HTTP API
from the verified caller). The listing entry is written as part of the write that already happens when a
turn takes its conversation (``ChatMemory.set_active_turn``), so listing costs no extra request per turn:
its last activity is when its latest turn started, its title the start of its first turn's input.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Annotated, Final, Protocol, runtime_checkable

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:
    # A type only: the retention function takes title_of from here and never builds the turn's models.
    from agentturn.state.turn import Turn

#: The turn metadata key that names a turn's owner (the HTTP API's ``api.ownership.OWNER_KEY``).
OWNER_METADATA_KEY: Final = "ownerId"
#: A title is the first line of the first input, cut here (characters, not bytes).
TITLE_MAX_CHARS: Final = 80


class InvalidCursorError(ValueError):
    """A ``cursor`` that this listing did not hand out (or that names another owner's conversations)."""

    def __init__(self, cursor: str) -> None:
        super().__init__(cursor)
        self.cursor = cursor

    def __str__(self) -> str:
        return f"cursor {self.cursor[:40]!r} was not handed out by this listing"


class ConversationListing(BaseModel):
    """What a turn start writes into the listing."""

    model_config = ConfigDict(frozen=True)

    owner: str
    #: Kept from the conversation's first turn only.
    title: str
    #: ISO 8601 (UTC) start of the latest turn: the listing's order, newest first.
    at: str


class ConversationSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    #: The runtime's (namespaced) conversation id.
    conversation_id: str
    title: str
    last_activity_at: str


class ConversationPage(BaseModel):
    model_config = ConfigDict(frozen=True)

    conversations: list[ConversationSummary]
    #: Opaque: pass it back for the next (older) page; ``None`` when there is none.
    cursor: str | None = None


@runtime_checkable
class ConversationDirectory(Protocol):
    """Lists an owner's conversations, newest activity first (one Query per page in DynamoDB)."""

    def list_conversations(self, owner: str, limit: int, cursor: str | None = None) -> ConversationPage: ...


def title_of(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= TITLE_MAX_CHARS else line[: TITLE_MAX_CHARS - 1].rstrip() + "…"


def listing_for(turn: Turn) -> ConversationListing | None:
    """The listing a turn start writes; ``None`` for a turn without an owner (library use: nothing listed)."""
    owner = turn.metadata.get(OWNER_METADATA_KEY)
    if not isinstance(owner, str) or not owner or not turn.created_at:
        return None
    return ConversationListing(owner=owner, title=title_of(turn.input), at=turn.created_at)


#: DynamoDB's limits on key values (a sort key: 1,024 bytes; a partition key: 2,048), which a position is made of.
_SORT_KEY_BYTES: Final = 1024
_PARTITION_KEY_BYTES: Final = 2048


def _key_value(value: str, limit: int) -> str:
    """A position's part as the store keys it: non-empty, valid UTF-8 (no lone surrogate from a ``\\ud800``
    escape) and within the key size a store accepts. A cursor this listing made always is one."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("not valid UTF-8") from None
    if not 0 < size <= limit:
        raise ValueError(f"must be 1 to {limit} bytes")
    return value


class _Position(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    o: str
    a: Annotated[str, AfterValidator(lambda v: _key_value(v, _SORT_KEY_BYTES))]
    c: Annotated[str, AfterValidator(lambda v: _key_value(v, _PARTITION_KEY_BYTES))]


def encode_cursor(owner: str, at: str, conversation_id: str) -> str:
    """The position after ``(at, conversation_id)`` in ``owner``'s listing, as an opaque token."""
    raw = json.dumps(_Position(o=owner, a=at, c=conversation_id).model_dump(), separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(owner: str, cursor: str) -> tuple[str, str]:
    """``(at, conversation_id)`` of a cursor handed to ``owner``; :class:`InvalidCursorError` otherwise (also for
    one whose position no store could key: the cursor is the client's to forge)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        position = _Position.model_validate_json(raw)
    except (binascii.Error, ValueError, ValidationError):
        raise InvalidCursorError(cursor) from None
    if position.o != owner:
        raise InvalidCursorError(cursor)
    return position.a, position.c
