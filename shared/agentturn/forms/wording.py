"""What a person reads when a form field is refused: plain words, the field named by its title, no code.

One function per JSON Schema keyword. ``web/form_messages.mjs`` says the same things in the browser for the
console's own checks (tests/differential checks the two agree on the same errors).
"""

from __future__ import annotations

import json
from typing import Any, Final

_TYPE_NAMES: Final = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "yes or no",
    "array": "a list",
    "object": "a group of fields",
    "null": "empty",
}


def show(value: Any) -> str:
    """A value as a person would type it: text as is, everything else as JSON."""
    if isinstance(value, str):
        return f"“{value}”"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def required(label: str) -> str:
    return f"{label} is required."


def undeclared(name: str) -> str:
    return f"“{name}” is not a field of this form."


def not_allowed(label: str) -> str:
    return f"{label} is not allowed here."


def wrong_type(label: str, types: list[str]) -> str:
    names = [_TYPE_NAMES.get(t, t) for t in types]
    return f"{label} must be {' or '.join(names)}."


def enum(label: str, values: list[Any]) -> str:
    if len(values) == 1:
        return const(label, values[0])
    return f"{label} must be one of: {', '.join(show(v) for v in values)}."


def const(label: str, value: Any) -> str:
    return f"{label} must be {show(value)}."


def min_length(label: str, limit: int) -> str:
    if limit == 1:
        return f"{label} must not be empty."
    return f"{label} must be at least {_count(limit, 'character', 'characters')} long."


def max_length(label: str, limit: int) -> str:
    return f"{label} must be at most {_count(limit, 'character', 'characters')} long."


def pattern(label: str, description: str | None, example: Any | None) -> str:
    text = f"{label} is not in the expected form"
    if description:
        text += f" ({description.strip().rstrip('.')})"
    if example is not None:
        text += f", for example {show(example)}"
    return text + "."


def pattern_timeout(label: str) -> str:
    return f"{label} could not be checked in time; please shorten it."


def format_(label: str, expected: str) -> str:
    return f"{label} must be {expected}."


def minimum(label: str, limit: Any, *, exclusive: bool) -> str:
    return f"{label} must be {'more than' if exclusive else 'at least'} {show(limit)}."


def maximum(label: str, limit: Any, *, exclusive: bool) -> str:
    return f"{label} must be {'less than' if exclusive else 'at most'} {show(limit)}."


def multiple_of(label: str, step: Any) -> str:
    return f"{label} must be a multiple of {show(step)}."


def min_items(label: str, limit: int) -> str:
    return f"{label} must have at least {_count(limit, 'entry', 'entries')}."


def max_items(label: str, limit: int) -> str:
    return f"{label} must have at most {_count(limit, 'entry', 'entries')}."


def unique_items(label: str, first: int, second: int) -> str:
    return f"{label} has the same entry twice (entries {first + 1} and {second + 1})."


def min_contains(label: str, limit: int) -> str:
    return f"{label} must have at least {_count(limit, 'matching entry', 'matching entries')}."


def max_contains(label: str, limit: int) -> str:
    return f"{label} must have at most {_count(limit, 'matching entry', 'matching entries')}."


def min_properties(label: str, limit: int) -> str:
    return f"{label} must have at least {_count(limit, 'field', 'fields')} filled in."


def max_properties(label: str, limit: int) -> str:
    return f"{label} must have at most {_count(limit, 'field', 'fields')} filled in."


def dependent_required(label: str, trigger: str) -> str:
    return f"{label} is required when {trigger} is given."


def property_name(name: str) -> str:
    return f"“{name}” is not an allowed name here."


def any_of(label: str) -> str:
    return f"{label} does not match any of the allowed choices."


def one_of_many(label: str) -> str:
    return f"{label} matches more than one of the choices; it must match exactly one."


def not_(label: str) -> str:
    return f"{label} has a value that is not allowed."


def out_of_time() -> str:
    return "This form could not be checked in time; please shorten what you entered."


def too_large(limit: int) -> str:
    return f"The form data is too large: at most {limit // 1024} KB can be submitted."


def too_deep(limit: int) -> str:
    return f"The form data is nested too deeply: at most {limit} levels."


def not_json() -> str:
    return "The form data must be JSON: text, finite numbers, true/false, null, lists and groups of fields."


def not_an_object() -> str:
    return "The form data must be a group of fields (a JSON object)."


def too_many(shown: int) -> str:
    return f"There are more problems; the first {shown} are shown."


def unusable_schema(reason: str) -> str:
    return f"This form cannot be checked safely, so nothing can be submitted to it ({reason})."
