"""MCP's restricted form subset (client/elicitation, revision 2026-07-28): what becomes a card, what is refused."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn.forms.definitions import FormDefinition
from agentturn.forms.rounds import InputRequest, InputRoundRequired
from agentturn.mcp.elicitation import ElicitationRefused, check_requested_schema

ACCEPTED: list[dict[str, Any]] = [
    {"type": "string", "title": "Name", "minLength": 3, "maxLength": 50, "format": "email", "default": "a@b.co"},
    {"type": "number", "minimum": 0, "maximum": 100, "default": 50},
    {"type": "integer", "description": "Age"},
    {"type": "boolean", "default": False},
    {"type": "string", "enum": ["Red", "Green"], "default": "Red"},
    {"type": "string", "oneOf": [{"const": "#F00", "title": "Red"}, {"const": "#0F0", "title": "Green"}]},
    {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "enum": ["Red", "Green", "Blue"]}},
    {"type": "array", "items": {"anyOf": [{"const": "#F00", "title": "Red"}, {"const": "#0F0", "title": "Green"}]}},
]
REFUSED: list[dict[str, Any]] = [
    {"type": "object", "properties": {}},
    {"type": "string", "pattern": "^a"},
    {"type": "string", "format": "ipv4"},
    {"type": "array", "items": {"type": "object"}},
    {"type": "integer", "multipleOf": 2},
    {"$ref": "#/$defs/x"},
    {"type": "string", "enum": [1, 2]},
]


@pytest.mark.parametrize("field", ACCEPTED)
def test_each_primitive_of_the_subset_is_a_card_field(field: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": {"f": field}, "required": ["f"]}
    assert check_requested_schema(schema) is schema
    FormDefinition("k", "m", schema)  # and the form validator takes it as it is


@pytest.mark.parametrize("field", REFUSED)
def test_anything_outside_the_subset_is_refused(field: dict[str, Any]) -> None:
    with pytest.raises(ElicitationRefused):
        check_requested_schema({"type": "object", "properties": {"f": field}})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array"},
        {"type": "object", "properties": {}, "additionalProperties": True},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
        "not a schema",
    ],
)
def test_a_requested_schema_that_is_not_a_flat_object_is_refused(schema: Any) -> None:
    with pytest.raises(ElicitationRefused):
        check_requested_schema(schema)


def test_an_input_round_needs_distinct_keys_and_bounded_json_state() -> None:
    form = FormDefinition("k", "m", {"type": "object", "properties": {}})
    with pytest.raises(ValueError, match="at least one"):
        InputRoundRequired([], {})
    with pytest.raises(ValueError, match="distinct"):
        InputRoundRequired([InputRequest("a", form), InputRequest("a", form)], {})
    with pytest.raises(ValueError, match="at most"):
        InputRoundRequired([InputRequest("a", form)], {"s": "x" * 400_000})
    with pytest.raises(TypeError):
        InputRoundRequired([InputRequest("a", form)], {"s": object()})
    kept = InputRoundRequired([InputRequest("a", form)], {"s": "é"})
    assert kept.state == {"s": "é"}
