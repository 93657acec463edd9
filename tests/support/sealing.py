"""A serializer that wraps another one and seals its text: a stand-in for encryption at rest in tests."""

from __future__ import annotations

import base64
from typing import TypeVar

from pydantic import BaseModel, TypeAdapter

from agentturn.ports.serializer import Serializer

T = TypeVar("T")


class SealingSerializer:
    """Wraps another serializer and "seals" its text (XOR + base64 stands in for a real cipher), keeping
    every text it produced so a test can look at what is stored."""

    def __init__(self, inner: Serializer, key: int = 0x5A) -> None:
        self.inner = inner
        self.key = key
        self.sealed: list[str] = []

    def dumps(self, value: BaseModel) -> str:
        plain = self.inner.dumps(value).encode()
        sealed = base64.b64encode(bytes(b ^ self.key for b in plain)).decode()
        self.sealed.append(sealed)
        return sealed

    def loads(self, text: str, schema: TypeAdapter[T]) -> T:
        plain = bytes(b ^ self.key for b in base64.b64decode(text))
        return self.inner.loads(plain.decode(), schema)
