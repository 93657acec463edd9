"""Validation of submitted form data against the frozen schema, undeclared properties refused."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend

#: The bound on regular expressions in a submission's validation: all ``pattern`` / ``patternProperties``
#: matches of one validation share this many seconds (the ``regex`` engine, which can stop a match). A
#: pattern that backtracks catastrophically (``^(a|aa)+$`` on ``"a" * 40 + "!"``) thus costs at most this
#: long, then the value is refused as "could not be checked" — never a request that runs for hours.
PATTERN_BUDGET_SECONDS: Final = 0.1
PATTERN_TIMEOUT_MESSAGE: Final = "could not be checked against its pattern in time"


class _PatternBudget:
    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def search(self, pattern: str, text: str) -> bool | None:
        """Whether ``pattern`` matches somewhere in ``text``; ``None`` when the budget ran out first."""
        import regex

        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return None
        try:
            return regex.search(pattern, text, timeout=remaining) is not None
        except TimeoutError:
            return None


def _bounded_validator(budget: _PatternBudget) -> type[Draft202012Validator]:
    def pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "string"):
            return
        matched = budget.search(pattern, instance)
        if matched is None:
            yield ValidationError(PATTERN_TIMEOUT_MESSAGE)
        elif not matched:
            yield ValidationError(f"{instance!r} does not match {pattern!r}")

    def pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for pattern, subschema in patterns.items():
            for key, value in instance.items():
                matched = budget.search(pattern, key)
                if matched is None:
                    yield ValidationError(PATTERN_TIMEOUT_MESSAGE)
                    return
                if matched:
                    yield from validator.descend(value, subschema, path=key, schema_path=pattern)

    keywords: dict[str, Callable[..., Any]] = {"pattern": pattern, "patternProperties": pattern_properties}
    return extend(Draft202012Validator, keywords)  # type: ignore[no-any-return,no-untyped-call]


#: Keywords whose subschemas describe a value of their own (a property, an item): closed when they are objects.
_VALUE_MAPS = ("properties", "patternProperties")
_VALUE_SINGLE = ("items", "additionalProperties", "unevaluatedItems", "contains")
#: Keywords whose subschemas are pieces of the schema that holds them: closing one alone would refuse the
#: properties its siblings declare, so only what they describe inside is closed.
_PART_MAPS = ("$defs", "definitions", "dependentSchemas")
_PART_LISTS = ("allOf", "anyOf", "oneOf")
_PART_SINGLE = ("if", "then", "else", "not")
_OPEN_MARKERS = ("additionalProperties", "unevaluatedProperties", "patternProperties")


def _close_objects(node: Any, *, close_self: bool = True) -> None:
    """Refuse undeclared properties wherever a schema leaves that open.

    ``unevaluatedProperties: false`` rather than ``additionalProperties`` so that properties declared
    through ``$ref`` or ``allOf`` count as declared; it only applies to object instances, so it is
    harmless on a node that turns out to describe a string.
    """
    if not isinstance(node, dict):
        return
    if close_self and not any(marker in node for marker in _OPEN_MARKERS):
        node["unevaluatedProperties"] = False
    for key in _VALUE_MAPS:
        children = node.get(key)
        if isinstance(children, dict):
            for child in children.values():
                _close_objects(child)
    for key in _VALUE_SINGLE:
        _close_objects(node.get(key))
    for child in node.get("prefixItems", []) if isinstance(node.get("prefixItems"), list) else []:
        _close_objects(child)
    for key in _PART_MAPS:
        parts = node.get(key)
        if isinstance(parts, dict):
            for part in parts.values():
                _close_objects(part, close_self=False)
    for key in _PART_LISTS:
        parts = node.get(key)
        if isinstance(parts, list):
            for part in parts:
                _close_objects(part, close_self=False)
    for key in _PART_SINGLE:
        _close_objects(node.get(key), close_self=False)


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    closed = copy.deepcopy(schema)
    _close_objects(closed)
    return closed


def _pointer(parts: Iterable[Any]) -> str:
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return "".join(f"/{p}" for p in escaped)


def _resolve_local(root: dict[str, Any], ref: str) -> Any:
    node: Any = root
    for escaped in ref.lstrip("#").split("/")[1:]:
        part = escaped.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _declared(schema: Any, root: dict[str, Any], seen: set[int] | None = None) -> set[str]:
    """Property names a schema declares itself or through local $ref and composition (cycle-safe)."""
    seen = seen if seen is not None else set()
    if not isinstance(schema, dict) or id(schema) in seen:
        return set()
    seen.add(id(schema))
    declared = set(schema.get("properties", {}))
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        declared |= _declared(_resolve_local(root, ref), root, seen)
    for key in _PART_LISTS:
        for part in schema.get(key, []) if isinstance(schema.get(key), list) else []:
            declared |= _declared(part, root, seen)
    for key in _PART_SINGLE:
        declared |= _declared(schema.get(key), root, seen)
    return declared


def _describe(error: ValidationError, root: dict[str, Any]) -> list[dict[str, str]]:
    base = list(error.absolute_path)
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        required = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [name for name in required if name not in instance]
        return [{"path": _pointer([*base, name]), "message": "is required"} for name in missing]
    if error.validator in ("unevaluatedProperties", "additionalProperties") and isinstance(instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        extra = sorted(set(instance) - _declared(schema, root))
        if extra:
            return [
                {"path": _pointer([*base, name]), "message": "is not a declared field of this form"} for name in extra
            ]
    return [{"path": _pointer(base), "message": error.message}]


def validate_form_data(schema: dict[str, Any], data: Any) -> list[dict[str, str]]:
    """Every problem with ``data`` as ``{"path": JSON Pointer, "message"}``; empty when valid."""
    if not isinstance(data, dict):
        return [{"path": "", "message": "form data must be a JSON object"}]
    strict = strict_schema(schema)
    validator = _bounded_validator(_PatternBudget(PATTERN_BUDGET_SECONDS))(strict, format_checker=FormatChecker())
    problems: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        for problem in _describe(error, strict):
            key = (problem["path"], problem["message"])
            if key not in seen:
                seen.add(key)
                problems.append(problem)
    return problems
