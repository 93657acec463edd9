"""The one pydantic base for everything that is stored or crosses the wire: camelCase JSON, snake_case Python."""

from __future__ import annotations

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
