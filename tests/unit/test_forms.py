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


def _obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "$ref": "#"}, r"\$ref cycle"),
        (
            {
                "type": "object",
                "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
                "properties": {"x": {"$ref": "#/$defs/a"}},
            },
            r"\$ref cycle",
        ),
        ({"type": "object", "not": {"$ref": "#"}}, r"\$ref cycle"),
        (_obj(x={"$ref": "#/$defs/missing"}), "points at nothing"),
        ({"type": "object", "$id": "https://example.com/form"}, r"\$id is not supported"),
        (_obj(x={"$dynamicRef": "#meta"}), r"\$dynamicRef"),
        (_obj(x={"type": "string", "pattern": "^(a+)+$"}), "catastrophically"),
        (_obj(x={"type": "string", "pattern": "^(\\w+\\s?)*$"}), "catastrophically"),
        (_obj(x={"type": "string", "pattern": "^(a)\\1$"}), "backreferences"),
        (_obj(x={"type": "string", "pattern": "a{,3}"}), "lone '{'"),
        (_obj(x={"type": "string", "pattern": "\\q"}), "invalid escape"),
        ({"type": "object", "patternProperties": {"(?i)x": {}}}, "patternProperties"),
        (_obj(x={"type": "string", "format": "idn-email"}), "format 'idn-email' is checked neither"),
        ({"type": "object", "dependencies": {"a": ["b"]}}, "draft-07"),
        ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}, r"\$schema must be"),
        (_obj(x={"type": "string", "formatMinimum": "2020-01-01", "format": "date"}), "formatMinimum"),
    ],
    ids=[
        "ref-root-cycle",
        "ref-cycle-through-allof-anyof",
        "ref-cycle-through-not",
        "dangling-ref",
        "id",
        "dynamic-ref",
        "nested-quantifier",
        "nested-quantifier-optional-separator",
        "backreference",
        "python-only-quantifier",
        "invalid-ecma-escape",
        "python-only-flag",
        "unknown-format",
        "draft-07-keyword",
        "other-dialect",
        "ajv-only-keyword",
    ],
)
def test_schemas_that_cannot_be_checked_safely_are_refused_when_built(schema: dict[str, Any], message: str) -> None:
    # GIVEN/WHEN a form whose schema could never be checked safely, or not the way the console checks it
    # THEN building it fails, saying why — before any person can submit to it
    with pytest.raises(ValueError, match=message):
        FormDefinition("k", "d", schema)


def test_recursion_that_moves_into_the_data_is_allowed_and_checked() -> None:
    # GIVEN a tree: a node's children are nodes (each round of the $ref moves one level into the data)
    from agentturn import validate_form_data

    schema = {
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
        }}},
        "properties": {"root": {"$ref": "#/$defs/node"}},
    }  # fmt: skip
    FormDefinition("tree", "a tree", schema)
    ok = {"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}
    assert validate_form_data(schema, ok) == []
    bad = {"root": {"name": "a", "children": [{"name": "b", "children": [{"name": 3, "x": 1}]}]}}
    assert [p["path"] for p in validate_form_data(schema, bad)] == [
        "/root/children/0/children/0/name",
        "/root/children/0/children/0/x",
    ]


@pytest.mark.parametrize(
    "pattern", ["^(?<year>\\d{4})-\\d{2}$", "^\\p{Lu}\\p{Ll}+$", "^[^\\s@]+@[^\\s@]+$", "^([a-z]+\\.)*[a-z]+$"]
)
def test_ecma_patterns_python_would_read_differently_are_allowed(pattern: str) -> None:
    FormDefinition("k", "d", _obj(x={"type": "string", "pattern": pattern}))


def test_a_schema_that_is_not_plain_json_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="plain JSON"):
        FormDefinition("k", "d", {"type": "object", "properties": {"a": {"enum": [{1, 2}]}}})
