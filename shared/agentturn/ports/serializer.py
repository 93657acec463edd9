"""How a store turns what it keeps (a turn snapshot, a timeline entry) into text and back.

Every store takes a :class:`Serializer` (default :data:`JSON`): the one place where stored models become
bytes at rest. Encrypting submitted data at rest is then a wrapper around :data:`JSON` that seals the text
it returns and opens the text it is given; no store changes.
"""

from __future__ import annotations

from typing import Final, Protocol, TypeVar

from pydantic import BaseModel, TypeAdapter

from agentturn.state.turn import SCHEMA_VERSION, Turn
from agentturn.timeline.identity import implied_identity, restore_identity

T = TypeVar("T")


class Serializer(Protocol):
    """Text for a stored model, and the model back from that text.

    ``loads`` raises ``ValueError`` (pydantic's ``ValidationError`` is one) for text it cannot read: stores
    report that as an unreadable snapshot, not as a crash.
    """

    def dumps(self, value: BaseModel) -> str: ...

    def loads(self, text: str, schema: TypeAdapter[T]) -> T: ...


class JsonSerializer:
    """The wire JSON of DESIGN.md (field aliases). A turn snapshot leaves out the timeline identity of its
    messages and cards, which the turn implies (:mod:`agentturn.timeline.identity`; ``schemaVersion`` 3)."""

    def dumps(self, value: BaseModel) -> str:
        if not isinstance(value, Turn):
            return value.model_dump_json(by_alias=True)
        exclude = implied_identity(value)
        if exclude and value.schema_version < SCHEMA_VERSION:
            # A loaded older snapshot is written back in this version's shape: no older reader may take the
            # ids it leaves out for empty ones.
            value = value.model_copy(update={"schema_version": SCHEMA_VERSION})
        return value.model_dump_json(by_alias=True, exclude=exclude)

    def loads(self, text: str, schema: TypeAdapter[T]) -> T:
        value = schema.validate_json(text)
        if isinstance(value, Turn):
            restore_identity(value)
        return value


#: The default serializer of every store.
JSON: Final[Serializer] = JsonSerializer()
