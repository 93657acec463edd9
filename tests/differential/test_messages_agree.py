"""The console's own checks and the server say the same words for the same problem.

One case per keyword (and per format), each with data that breaks exactly that keyword; the server's message
and the console's (web/src/form_messages.mjs, through the validator the console runs, web/src/validator.mjs)
must be equal. The server's side is made as the submit route makes it: validation finds the problems as codes
(agentturn/forms/validation.py, no words), and agentturn/forms/wording.py, the one place words are made,
says them.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from agentturn.forms import wording
from agentturn.forms.formats import FORMATS
from agentturn.forms.problems import ProblemCode
from agentturn.forms.validation import FormValidator
from tests.differential.test_ajv_agreement import ROOT, pytestmark  # noqa: F401 - same needs (node, npm ci)

SCRIPT = ROOT / "tests" / "differential" / "messages_check.mjs"

FIELD_TITLE = "Start time"


def _field(schema: dict[str, Any], **root: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"v": {"title": FIELD_TITLE, **schema}}, **root}


CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("required", _field({"type": "string"}, required=["v"]), {}),
    ("required-untitled", {"type": "object", "properties": {"v": {}}, "required": ["v"]}, {}),
    ("type", _field({"type": "integer"}), {"v": "x"}),
    ("type-list", _field({"type": ["integer", "null"]}), {"v": "x"}),
    ("enum", _field({"enum": ["ONE_USER", "ALL_USERS", 3]}), {"v": "x"}),
    ("const", _field({"const": "yes"}), {"v": "no"}),
    ("min-length-1", _field({"type": "string", "minLength": 1}), {"v": ""}),
    ("min-length-3", _field({"type": "string", "minLength": 3}), {"v": "ab"}),
    ("max-length", _field({"type": "string", "maxLength": 1}), {"v": "ab"}),
    ("pattern", _field({"type": "string", "pattern": "^\\d\\d:\\d\\d$"}), {"v": "9"}),
    (
        "pattern-hints",
        _field({"type": "string", "pattern": "^\\d\\d:\\d\\d$",
                "description": "HH:MM, 24-hour.", "examples": ["09:30"]}),
        {"v": "9"},
    ),
    ("minimum", _field({"type": "number", "minimum": 1}), {"v": 0}),
    ("exclusive-minimum", _field({"type": "number", "exclusiveMinimum": 1}), {"v": 1}),
    ("maximum", _field({"type": "number", "maximum": 200}), {"v": 201}),
    ("exclusive-maximum", _field({"type": "number", "exclusiveMaximum": 2.5}), {"v": 3}),
    ("multiple-of", _field({"type": "number", "multipleOf": 0.01}), {"v": 0.075}),
    ("min-items", _field({"type": "array", "minItems": 2}), {"v": [1]}),
    ("max-items", _field({"type": "array", "maxItems": 1}), {"v": [1, 2]}),
    ("unique-items", _field({"type": "array", "uniqueItems": True}), {"v": [1, 2, 1]}),
    ("contains", _field({"type": "array", "contains": {"const": 1}}), {"v": [2]}),
    ("min-properties", _field({"type": "object", "minProperties": 1}), {"v": {}}),
    ("max-properties", _field({"type": "object", "maxProperties": 1, "properties": {"a": {}, "b": {}}}),
     {"v": {"a": 1, "b": 2}}),
    (
        "dependent-required",
        {"type": "object", "properties": {"card": {"title": "Card"}, "cvc": {"title": "CVC"}},
         "dependentRequired": {"card": ["cvc"]}},
        {"card": "4111"},
    ),
    ("additional-properties", {"type": "object", "properties": {"a": {}}, "additionalProperties": False}, {"b": 1}),
    ("not", _field({"not": {"const": "x"}}), {"v": "x"}),
    ("any-of", _field({"anyOf": [{"type": "integer"}, {"const": "a"}]}), {"v": "b"}),
    ("one-of-many", _field({"oneOf": [{"type": "integer"}, {"minimum": 0}]}), {"v": 1}),
    ("max-contains", _field({"type": "array", "contains": {"const": 1}, "maxContains": 1}), {"v": [1, 1]}),
    ("property-names", _field({"type": "object", "propertyNames": {"maxLength": 2}}), {"v": {"long": 1}}),
    ("false", _field({}, properties={"v": False}), {"v": 1}),
    ("nested-title", {"type": "object", "properties": {"o": {
        "type": "object", "title": "Address", "properties": {"zip": {"type": "string", "title": "ZIP"}}}}},
     {"o": {"zip": 1}}),
    ("array-item", {"type": "object", "properties": {"l": {
        "type": "array", "title": "Codes", "items": {"type": "string"}}}},
     {"l": ["a", 2]}),
]  # fmt: skip

FORMAT_SAMPLES = {"int32": 2**31, "int64": 1.5}
CASES += [
    (f"format-{name}", _field({"format": name}), {"v": FORMAT_SAMPLES.get(name, "\u0000 not valid ::")})
    for name in sorted(FORMATS)
    if name not in ("float", "double", "password", "binary", "regex")  # nothing is refused by these ...
] + [("format-regex", _field({"format": "regex"}), {"v": "("})]


def console_errors(cases: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    completed = subprocess.run(
        ["node", str(SCRIPT)],
        input=json.dumps({"cases": [{"schema": s, "data": d} for _, s, d in cases]}).encode(),
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    answers: list[list[dict[str, Any]]] = json.loads(completed.stdout)
    return answers


def console_code(error: dict[str, Any]) -> ProblemCode:
    """The server's code for an error the console reports under Ajv's keyword name."""
    name, params = error["name"], error["params"]
    if name == "contains":
        only_max = "maxContains" in params and "minContains" not in params
        return ProblemCode.MAX_CONTAINS if only_max else ProblemCode.MIN_CONTAINS
    if name == "oneOf":
        return ProblemCode.ONE_OF_MANY if "passingSchemas" in params else ProblemCode.ANY_OF
    renamed = {
        "additionalProperties": ProblemCode.UNDECLARED,
        "unevaluatedProperties": ProblemCode.UNDECLARED,
        "false schema": ProblemCode.FALSE_SCHEMA,
        "unevaluatedItems": ProblemCode.FALSE_SCHEMA,
    }
    return renamed.get(name) or ProblemCode(name)


@pytest.fixture(scope="module")
def console() -> dict[str, list[dict[str, Any]]]:
    return {name: errors for (name, _, _), errors in zip(CASES, console_errors(CASES), strict=True)}


@pytest.mark.parametrize(("name", "schema", "data"), CASES, ids=[c[0] for c in CASES])
def test_the_console_and_the_server_say_the_same_words(
    console: dict[str, list[dict[str, Any]]], name: str, schema: dict[str, Any], data: dict[str, Any]
) -> None:
    # GIVEN data that breaks one keyword / WHEN both sides check it
    problems = FormValidator(schema).problems(data, refuse_undeclared=False)
    server = [item["message"] for item in wording.messages(problems)]
    # THEN they find the same problem, by the same code (the JSON Schema keyword that refuses the value) ...
    assert server, name
    assert sorted(p.code for p in problems) == sorted(console_code(e) for e in console[name])
    # ... and refuse it with the same sentence, which names the field and shows no code
    assert sorted(server) == sorted(e["message"] for e in console[name])
    assert all("'" not in m and "\\" not in m for m in server), server


#: Codes only the server answers: about the submission as a whole, or a check that ran out of time (the browser
#: has no budget: DISAGREEMENTS.md), or about a property part 2 of the rule refuses.
SERVER_ONLY = {
    ProblemCode.NOT_AN_OBJECT,
    ProblemCode.NOT_JSON,
    ProblemCode.TOO_LARGE,
    ProblemCode.TOO_DEEP,
    ProblemCode.OUT_OF_TIME,
    ProblemCode.TOO_MANY,
    ProblemCode.UNUSABLE_SCHEMA,
    ProblemCode.NOT_CHECKED_IN_TIME,
    ProblemCode.NAME_NOT_CHECKED_IN_TIME,
}


def test_every_code_a_person_can_meet_in_both_places_is_compared() -> None:
    # GIVEN the cases above / WHEN the server checks each
    found = {p.code for _, schema, data in CASES for p in FormValidator(schema).problems(data, refuse_undeclared=False)}
    # THEN together they produce every code the console can also produce: none is worded on one side only
    missing = set(ProblemCode) - SERVER_ONLY - found
    assert missing == set(), sorted(missing)
    # AND every code has its sentence in the one place words are made
    assert set(wording._SENTENCES) == set(ProblemCode)
