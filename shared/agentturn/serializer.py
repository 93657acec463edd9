"""How a store turns what it keeps (a turn snapshot, a timeline entry) into text and back.

Every store takes a :class:`Serializer` (default :data:`JSON`): the one place where stored models become
bytes at rest. Encrypting submitted data at rest is then a wrapper around :data:`JSON` that seals the text
it returns and opens the text it is given; no store changes.
"""

from __future__ import annotations

from typing import Final, Protocol, TypeVar

from pydantic import BaseModel, TypeAdapter

T = TypeVar("T")


class Serializer(Protocol):
    """Text for a stored model, and the model back from that text.

    ``loads`` raises ``ValueError`` (pydantic's ``ValidationError`` is one) for text it cannot read: stores
    report that as an unreadable snapshot, not as a crash.
    """

    def dumps(self, value: BaseModel) -> str: ...

    def loads(self, text: str, schema: TypeAdapter[T]) -> T: ...


class JsonSerializer:
    """The wire JSON of DESIGN.md (field aliases), as every store has always written it."""

    def dumps(self, value: BaseModel) -> str:
        return value.model_dump_json(by_alias=True)

    def loads(self, text: str, schema: TypeAdapter[T]) -> T:
        return schema.validate_json(text)


#: The default serializer of every store.
JSON: Final[Serializer] = JsonSerializer()
