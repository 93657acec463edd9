"""Submissions against the frozen schema: every problem with its path, undeclared fields refused."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn import validate_form_data

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "affectedSystem": {"type": "string", "minLength": 1},
        "impactScope": {"type": "string", "enum": ["ONE_USER", "PARTIAL_USERS", "ALL_USERS"]},
        "contact": {
            "type": "object",
            "properties": {"email": {"type": "string", "format": "email"}},
        },
        "tags": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
    },
    "required": ["affectedSystem", "impactScope"],
}


def test_valid_data_has_no_problems() -> None:
    data = {
        "affectedSystem": "登录系统",
        "impactScope": "ALL_USERS",
        "contact": {"email": "a@b.co"},
        "tags": [{"name": "x"}],
    }
    assert validate_form_data(SCHEMA, data) == []


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"impactScope": "ALL_USERS"}, [{"path": "/affectedSystem", "message": "is required"}]),
        (
            {"affectedSystem": "x", "impactScope": "ALL_USERS", "isAdmin": True},
            [{"path": "/isAdmin", "message": "is not a declared field of this form"}],
        ),
        (
            {"affectedSystem": "x", "impactScope": "ALL_USERS", "contact": {"email": "a@b.co", "phone": "1"}},
            [{"path": "/contact/phone", "message": "is not a declared field of this form"}],
        ),
        (
            {"affectedSystem": "x", "impactScope": "ALL_USERS", "tags": [{"name": "a", "evil": 1}]},
            [{"path": "/tags/0/evil", "message": "is not a declared field of this form"}],
        ),
        (
            {"affectedSystem": "x", "impactScope": "ALL_USERS", "contact": {"email": "not-an-email"}},
            [{"path": "/contact/email", "message": "'not-an-email' is not a 'email'"}],
        ),
        (
            {"affectedSystem": 3, "impactScope": "ALL_USERS"},
            [{"path": "/affectedSystem", "message": "3 is not of type 'string'"}],
        ),
    ],
    ids=["missing", "undeclared", "undeclared-nested", "undeclared-in-array", "format", "type"],
)
def test_each_problem_has_a_path_and_a_message(data: dict[str, Any], expected: list[dict[str, str]]) -> None:
    assert validate_form_data(SCHEMA, data) == expected


def test_not_an_object_is_one_problem_at_the_root() -> None:
    assert validate_form_data(SCHEMA, ["x"]) == [{"path": "", "message": "form data must be a JSON object"}]


def test_properties_declared_through_all_of_or_ref_count_as_declared() -> None:
    schema = {
        "type": "object",
        "$defs": {"base": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"b": {"type": "integer"}}}],
    }
    assert validate_form_data(schema, {"a": "x", "b": 1}) == []
    assert validate_form_data(schema, {"a": "x", "c": 1}) == [
        {"path": "/c", "message": "is not a declared field of this form"}
    ]


def test_an_explicitly_open_schema_stays_open() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}
    assert validate_form_data(schema, {"a": "x", "extra": 1}) == []
    assert validate_form_data(schema, {"a": "x", "extra": "no"}) == [
        {"path": "/extra", "message": "'no' is not of type 'integer'"}
    ]


def test_validation_does_not_change_the_schema() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    validate_form_data(schema, {"b": 1})
    assert schema == {"type": "object", "properties": {"a": {"type": "string"}}}
