"""FormDefinition and UserInputTool: what a form is, and what the model is told about forms."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentturn import REQUEST_USER_INPUT, FormDefinition, FormRequired, UserInputTool

SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "补充故障信息",
    "properties": {"affectedSystem": {"type": "string", "title": "受影响系统"}},
    "required": ["affectedSystem"],
}


@pytest.mark.parametrize(
    ("form_key", "description", "schema", "message"),
    [
        ("", "d", SCHEMA, "form_key"),
        ("   ", "d", SCHEMA, "form_key"),
        ("k", "", SCHEMA, "description"),
        ("k", "d", {"type": "array"}, '"type": "object"'),
        ("k", "d", {"type": "object", "properties": {"a": {"type": "strin"}}}, "invalid JSON Schema"),
        ("k", "d", {"type": "object", "minProperties": -1}, "invalid JSON Schema"),
        ("k", "d", {"type": "object", "properties": {"a": {"$ref": "https://evil.example/s.json"}}}, r"remote \$ref"),
        ("k", "d", {"type": "object", "$defs": {"x": {"$ref": "other.json#/x"}}}, r"remote \$ref"),
    ],
)
def test_invalid_definitions_are_refused_when_built(
    form_key: str, description: str, schema: dict[str, Any], message: str
) -> None:
    # GIVEN/WHEN a form with a blank key or description, a non-object or invalid schema, or a remote $ref
    # THEN building it fails with a ValueError that says what is wrong
    with pytest.raises(ValueError, match=message):
        FormDefinition(form_key, description, schema)


def test_a_local_ref_is_allowed() -> None:
    schema = {"type": "object", "$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s"}}}
    assert FormDefinition("k", "d", schema).schema == schema


def test_a_definition_is_immutable_and_deep_copied_both_ways() -> None:
    # GIVEN a definition built from a dict the caller keeps
    source = copy.deepcopy(SCHEMA)
    form = FormDefinition("support_ticket_details", "when fields are missing", source)
    # WHEN the caller changes the dict deep inside, and a reader changes what it was given
    source["properties"]["affectedSystem"]["title"] = "changed"
    handed_out = form.schema
    handed_out["required"].append("x")
    # THEN the definition still holds the schema as it was built
    assert form.schema == SCHEMA
    with pytest.raises(AttributeError):
        form.form_key = "other"  # type: ignore[misc]


def test_user_input_tool_shows_keys_and_descriptions_never_schemas() -> None:
    # GIVEN two forms
    first = FormDefinition("support_ticket_details", "创建故障工单缺少受影响系统或影响范围时使用", SCHEMA)
    second = FormDefinition("meeting_room_booking", "预定会议室时收集资料", {"type": "object", "title": "会议"})
    # WHEN the control tool is built
    tool = UserInputTool(forms=[first, second])
    # THEN its single parameter is an enum of the keys, its description lists each key with its description
    assert tool.name == REQUEST_USER_INPUT
    assert tool.parameters["properties"]["formKey"]["enum"] == ["support_ticket_details", "meeting_room_booking"]
    assert tool.parameters["required"] == ["formKey"]
    assert list(tool.parameters["properties"]) == ["formKey"]
    assert "- support_ticket_details: 创建故障工单缺少受影响系统或影响范围时使用" in tool.description
    assert "- meeting_room_booking: 预定会议室时收集资料" in tool.description
    # ... and the schemas are only in the metadata, which the model never gets
    assert "补充故障信息" not in tool.description and "补充故障信息" not in str(tool.parameters)
    assert tool.metadata["forms"]["support_ticket_details"] == SCHEMA
    # its function never runs: the runner handles the call
    with pytest.raises(RuntimeError, match="control tool"):
        tool.function({"formKey": "support_ticket_details"})


def test_user_input_tool_needs_forms_with_distinct_keys() -> None:
    form = FormDefinition("k", "d", SCHEMA)
    with pytest.raises(ValueError, match="at least one form"):
        UserInputTool(forms=[])
    with pytest.raises(ValueError, match="duplicate formKey 'k'"):
        UserInputTool(forms=[form, FormDefinition("k", "other", SCHEMA)])


def test_form_required_carries_a_definition() -> None:
    form = FormDefinition("k", "d", SCHEMA)
    assert FormRequired(form).form is form
    with pytest.raises(TypeError):
        FormRequired({"type": "object"})  # type: ignore[arg-type]
