"""Validation of submitted form data against the frozen schema, undeclared properties refused."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError

#: Positions where a subschema describes a concrete value (not one branch of a composition).
_STRUCTURAL_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_STRUCTURAL_SINGLE = ("items", "additionalProperties", "contains", "unevaluatedItems", "propertyNames")
_OPEN_MARKERS = ("additionalProperties", "unevaluatedProperties", "patternProperties")


def _close_objects(node: Any) -> None:
    """Refuse undeclared properties wherever an object schema leaves that open.

    ``unevaluatedProperties: false`` rather than ``additionalProperties`` so that properties declared
    through ``$ref`` or ``allOf`` still count as declared. Branches of ``allOf``/``anyOf``/``oneOf`` are not
    closed on their own: a closed branch would refuse the properties its sibling declares.
    """
    if not isinstance(node, dict):
        return
    is_object = node.get("type") == "object" or "properties" in node
    if is_object and not any(marker in node for marker in _OPEN_MARKERS):
        node["unevaluatedProperties"] = False
    for key in _STRUCTURAL_MAPS:
        children = node.get(key)
        if isinstance(children, dict):
            for child in children.values():
                _close_objects(child)
    for key in _STRUCTURAL_SINGLE:
        _close_objects(node.get(key))
    prefix = node.get("prefixItems")
    if isinstance(prefix, list):
        for child in prefix:
            _close_objects(child)


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    closed = copy.deepcopy(schema)
    _close_objects(closed)
    return closed


def _pointer(parts: Iterable[Any]) -> str:
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return "".join(f"/{p}" for p in escaped)


def _declared(schema: dict[str, Any]) -> set[str]:
    declared = set(schema.get("properties", {}))
    for branch_key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(branch_key, []) or []:
            if isinstance(branch, dict):
                declared |= set(branch.get("properties", {}))
    return declared


def _describe(error: ValidationError) -> list[dict[str, str]]:
    base = list(error.absolute_path)
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        required = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [name for name in required if name not in instance]
        return [{"path": _pointer([*base, name]), "message": "is required"} for name in missing]
    if error.validator in ("unevaluatedProperties", "additionalProperties") and isinstance(instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        extra = sorted(set(instance) - _declared(schema))
        if extra:
            return [
                {"path": _pointer([*base, name]), "message": "is not a declared field of this form"} for name in extra
            ]
    return [{"path": _pointer(base), "message": error.message}]


def validate_form_data(schema: dict[str, Any], data: Any) -> list[dict[str, str]]:
    """Every problem with ``data`` as ``{"path": JSON Pointer, "message"}``; empty when valid."""
    if not isinstance(data, dict):
        return [{"path": "", "message": "form data must be a JSON object"}]
    validator = Draft202012Validator(strict_schema(schema), format_checker=FormatChecker())
    problems: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        for problem in _describe(error):
            key = (problem["path"], problem["message"])
            if key not in seen:
                seen.add(key)
                problems.append(problem)
    return problems
