"""The official JSON Schema Test Suite's format cases (draft 2020-12) and its ``multipleOf`` cases (with
``1e308`` / ``0.123456789`` and the optional float-overflow one), on both sides.

The cases are the suite's own files, vendored unchanged in ``json_schema_test_suite/`` (MIT, licence beside
them). Each runs on the server (part 1 of the rule: plain JSON Schema) and in the console's validator
(web/src/validator.mjs, bundled as the console bundles it); both must give the suite's answer. A case either side
may answer otherwise is listed in ``KNOWN`` below with its reason in DISAGREEMENTS.md: none today.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentturn.forms.validation import FormValidator
from tests.differential.test_ajv_agreement import ROOT, pytestmark  # noqa: F401 - same needs (node, npm ci)

SUITE = Path(__file__).with_name("json_schema_test_suite") / "optional"
SCRIPT = Path(__file__).with_name("browser_check.mjs")

#: (file, test description) of cases a side may answer otherwise, each explained in DISAGREEMENTS.md.
KNOWN: dict[tuple[str, str], str] = {}


def _cases() -> list[tuple[str, str, dict[str, Any], Any, bool]]:
    cases = []
    for path in sorted([*SUITE.glob("format/*.json"), SUITE / "float-overflow.json", SUITE.parent / "multipleOf.json"]):
        for group in json.loads(path.read_text(encoding="utf-8")):
            # A form is an object: the suite's schema becomes the schema of its one field (its $schema is the
            # form's, draft 2020-12, and may only sit at the root).
            field = {k: v for k, v in group["schema"].items() if k != "$schema"}
            schema = {"type": "object", "properties": {"v": field}}
            for test in group["tests"]:
                cases.append(
                    (path.name, f"{group['description']}: {test['description']}", schema, test["data"], test["valid"])
                )
    return cases


CASES = _cases()


def test_the_vendored_suite_is_all_there() -> None:
    # GIVEN the vendored files / THEN every format agentturn checks and the suite covers is in them
    names = {name for name, *_ in CASES}
    assert {"date-time.json", "time.json", "duration.json", "email.json", "hostname.json", "uri.json"} <= names
    assert {"uri-reference.json", "uri-template.json", "ipv4.json", "ipv6.json", "float-overflow.json"} <= names
    assert (
        "multipleOf.json",
        "float division = inf: always invalid, but naive implementations may raise an overflow error",
    ) in {(name, description) for name, description, *_ in CASES}
    assert len(CASES) > 550


def test_the_server_answers_every_suite_case_as_the_suite_does() -> None:
    # GIVEN each case as a one-field form / WHEN the server checks its datum
    wrong = []
    for name, description, schema, data, valid in CASES:
        ours = FormValidator(schema).problems({"v": data}, refuse_undeclared=False) == []
        if ours != valid and (name, description) not in KNOWN:
            wrong.append(f"{name}: {description}: {data!r} -> {ours}")
    # THEN its answer is the suite's
    print(f"JSON Schema Test Suite on the server: {len(CASES)} cases, {len(wrong)} wrong")
    assert wrong == [], "\n".join(wrong)


@pytest.mark.timeout(300)
def test_the_console_answers_every_suite_case_as_the_suite_does() -> None:
    # GIVEN the same cases / WHEN the console's validator checks them (as bundled for the page)
    completed = subprocess.run(
        ["node", str(SCRIPT)],
        input=json.dumps({"cases": [{"schema": s, "data": [{"v": d}]} for _, _, s, d, _ in CASES]}).encode(),
        capture_output=True,
        cwd=ROOT,
        timeout=240,
        check=True,
    )
    answers = json.loads(completed.stdout)
    wrong = [
        f"{name}: {description}: {data!r} -> {answer[0]}"
        for (name, description, _, data, valid), answer in zip(CASES, answers, strict=True)
        if answer[0] is not valid and (name, description) not in KNOWN
    ]
    # THEN its answer is the suite's too
    print(f"JSON Schema Test Suite in the console: {len(CASES)} cases, {len(wrong)} wrong")
    assert wrong == [], "\n".join(wrong)
