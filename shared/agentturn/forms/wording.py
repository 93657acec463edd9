"""What a person reads when a form field is refused: plain words, the field named by its title, no code.

The one place those words are made: :func:`messages` turns the problems validation found
(:class:`agentturn.forms.problems.FormProblem`: a code and its data) into ``{"path", "message"}`` items, after the
walk, never during it. ``web/src/form_messages.mjs`` says the same sentences in the browser for the console's own
checks; ``tests/differential/test_messages_agree.py`` renders the server's problems here and compares.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, Final

from agentturn.forms.problems import FORM, FormProblem, ProblemCode, Subject

_TYPE_NAMES: Final = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "yes or no",
    "array": "a list",
    "object": "a group of fields",
    "null": "empty",
}

#: What each format expects, in a person's words (``FORMAT_LABELS`` in web/src/form_messages.mjs says the same).
FORMAT_EXPECTED: Final = {
    "date": "a date such as 2024-05-31",
    "time": "a time in the form HH:MM:SS with its offset, such as 09:30:00+01:00 or 09:30:00Z",
    "date-time": "a date and time such as 2024-05-31T09:30:00Z",
    "duration": "a duration such as P3DT4H",
    "uri": "a full web address such as https://example.com/page",
    "uri-reference": "a web address or a part of one",
    "uri-template": "a URI template such as /orders/{id}",
    "url": "a web address such as https://example.com",
    "email": "an email address such as name@example.com",
    "hostname": "a host name such as example.com",
    "ipv4": "an IPv4 address such as 192.0.2.1",
    "ipv6": "an IPv6 address such as 2001:db8::1",
    "regex": "a regular expression",
    "uuid": "an identifier such as 123e4567-e89b-12d3-a456-426614174000",
    "json-pointer": "a JSON pointer such as /a/b",
    "json-pointer-uri-fragment": "a JSON pointer fragment such as #/a/b",
    "relative-json-pointer": "a relative JSON pointer such as 1/a",
    "byte": "base64-encoded data",
    "int32": "a whole number between -2147483648 and 2147483647",
    "int64": "a whole number",
    "float": "a number",
    "double": "a number",
    "password": "a password",
    "binary": "data",
    "data-url": "a file (a data: URL with base64 data)",
    "color": "a colour such as #ff8800",
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


ROOT_LABEL: Final = "The form"


def label(subject: Subject) -> str:
    """The name a person knows a value by: its title, else its field name; a list entry by its number."""
    if subject.key is None:
        return ROOT_LABEL
    if isinstance(subject.key, int):
        if subject.title:
            return f"{subject.title} {subject.key + 1}"
        return f"{label(subject.parent or FORM)}, entry {subject.key + 1}"
    return subject.title or subject.key


def _limit(say: Callable[[str, Any], str]) -> Callable[[str, dict[str, Any]], str]:
    return lambda name, p: say(name, p["limit"])


#: One sentence per code: (the subject's label, the problem's params) -> the message.
_SENTENCES: Final[dict[ProblemCode, Callable[[str, dict[str, Any]], str]]] = {
    ProblemCode.NOT_AN_OBJECT: lambda _, __: not_an_object(),
    ProblemCode.NOT_JSON: lambda _, __: not_json(),
    ProblemCode.TOO_LARGE: lambda _, p: too_large(p["limit"]),
    ProblemCode.TOO_DEEP: lambda _, p: too_deep(p["limit"]),
    ProblemCode.OUT_OF_TIME: lambda _, __: out_of_time(),
    ProblemCode.TOO_MANY: lambda _, p: too_many(p["shown"]),
    ProblemCode.UNUSABLE_SCHEMA: lambda _, p: unusable_schema(p["reason"]),
    ProblemCode.FALSE_SCHEMA: lambda name, _: not_allowed(name),
    ProblemCode.TYPE: lambda name, p: wrong_type(name, p["types"]),
    ProblemCode.ENUM: lambda name, p: enum(name, p["values"]),
    ProblemCode.CONST: lambda name, p: const(name, p["value"]),
    ProblemCode.MULTIPLE_OF: lambda name, p: multiple_of(name, p["multipleOf"]),
    ProblemCode.MAXIMUM: lambda name, p: maximum(name, p["limit"], exclusive=False),
    ProblemCode.EXCLUSIVE_MAXIMUM: lambda name, p: maximum(name, p["limit"], exclusive=True),
    ProblemCode.MINIMUM: lambda name, p: minimum(name, p["limit"], exclusive=False),
    ProblemCode.EXCLUSIVE_MINIMUM: lambda name, p: minimum(name, p["limit"], exclusive=True),
    ProblemCode.MIN_LENGTH: _limit(min_length),
    ProblemCode.MAX_LENGTH: _limit(max_length),
    ProblemCode.PATTERN: lambda name, p: pattern(name, p.get("description"), p.get("example")),
    ProblemCode.FORMAT: lambda name, p: format_(name, FORMAT_EXPECTED.get(p["format"], p["format"])),
    ProblemCode.NOT_CHECKED_IN_TIME: lambda name, _: pattern_timeout(name),
    ProblemCode.NAME_NOT_CHECKED_IN_TIME: lambda _, p: pattern_timeout(f"“{p['name']}”"),
    ProblemCode.MIN_ITEMS: _limit(min_items),
    ProblemCode.MAX_ITEMS: _limit(max_items),
    ProblemCode.UNIQUE_ITEMS: lambda name, p: unique_items(name, p["first"], p["second"]),
    ProblemCode.MIN_CONTAINS: _limit(min_contains),
    ProblemCode.MAX_CONTAINS: _limit(max_contains),
    ProblemCode.REQUIRED: lambda name, _: required(name),
    ProblemCode.DEPENDENT_REQUIRED: lambda name, p: dependent_required(name, label(p["trigger"])),
    ProblemCode.MIN_PROPERTIES: _limit(min_properties),
    ProblemCode.MAX_PROPERTIES: _limit(max_properties),
    ProblemCode.UNDECLARED: lambda _, p: undeclared(p["name"]),
    ProblemCode.PROPERTY_NAME: lambda _, p: property_name(p["name"]),
    ProblemCode.ANY_OF: lambda name, _: any_of(name),
    ProblemCode.ONE_OF_MANY: lambda name, _: one_of_many(name),
    ProblemCode.NOT: lambda name, _: not_(name),
}


def message(problem: FormProblem) -> str:
    """The sentence a person reads for one problem."""
    return _SENTENCES[problem.code](label(problem.subject), dict(problem.params))


def messages(problems: Iterable[FormProblem]) -> list[dict[str, str]]:
    """``{"path": JSON Pointer, "message"}`` per problem, in order, each distinct item once (two problems can
    read the same, say a field required by two ``allOf`` branches): what FormValidationError and the API carry."""
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for problem in problems:
        key = (problem.pointer, message(problem))
        if key not in seen:
            seen.add(key)
            out.append({"path": key[0], "message": key[1]})
    return out
