"""The one pydantic base for everything that is stored or crosses the wire: camelCase JSON, snake_case Python."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=False,
        ser_json_timedelta="float",
    )

    def to_wire(self) -> dict[str, object]:
        """The JSON-compatible dict form, camelCase, as stored and as sent over HTTP."""
        return self.model_dump(mode="json", by_alias=True)

    def deep_copy(self) -> Self:
        """A deep copy sharing nothing mutable with this model.

        Rebuilt from its dump rather than by ``model_copy(deep=True)``: ``copy.deepcopy`` walks every nested
        model and dict in Python and costs several times more (a turn holding a frozen form schema: ~3×).
        """
        return self.model_validate(self.model_dump(by_alias=True))


# ------------------------------------------------------------------- the field named "schema"


@contextmanager
def schema_field_allowed() -> Iterator[None]:
    """Define a model whose field is called ``schema`` inside this block.

    pydantic warns that such a field shadows ``BaseModel.schema``, pydantic v1's deprecated classmethod.
    Shadowing it is the point: ``card.schema`` must be the JSON Schema the card carries, not that method.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message='Field name "schema" ', category=UserWarning)
        yield


#: Modules between a caller and the deprecation warning: the warning names the first frame outside them.
_INTERNAL_FRAMES = ("pydantic", "agentturn.state.wire", "agentturn.state.messages", "agentturn.api.models")


def warn_schema_underscore() -> None:
    # The old keyword reaches the validator through pydantic's own frames, so the caller's depth varies.
    frame, stacklevel = sys._getframe(1), 2
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith(_INTERNAL_FRAMES):
        frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn(
        "`schema_` is deprecated; use `schema` (the wire name never changed)", DeprecationWarning, stacklevel=stacklevel
    )


def accept_schema_underscore(data: Any) -> Any:
    """A ``model_validator(mode="before")`` body: the old keyword ``schema_=...`` still builds, with a warning."""
    if isinstance(data, dict) and "schema_" in data:
        warn_schema_underscore()
        if "schema" in data:
            raise ValueError("give `schema` or the deprecated `schema_`, not both")
        data = {("schema" if k == "schema_" else k): v for k, v in data.items()}
    return data
