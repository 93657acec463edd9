"""Proof by difference for the console's browser validator (web/src/validator.mjs: @cfworker/json-schema, which
needs no CSP 'unsafe-eval'): on the differential corpus it gives the server's answer on every datum.

Same corpus and rules as test_ajv_agreement.py (part 1 of the validation rule; the cases DISAGREEMENTS.md keeps
out of the corpus stay out). ``AGENTTURN_LONG=1`` runs the larger generated corpus.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentturn.forms.schema_rules import SchemaRefusedError
from agentturn.forms.validation import FormValidator
from tests.differential.corpus import Case, generated, hand_written

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("browser_check.mjs")
GENERATED = 3000 if os.environ.get("AGENTTURN_LONG") == "1" else 200

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (ROOT / "node_modules" / "@cfworker" / "json-schema").exists(),
    reason="needs node and the console's npm packages (npm ci)",
)


def browser_answers(cases: list[Case]) -> list[list[Any]]:
    completed = subprocess.run(
        ["node", str(SCRIPT)],
        input=json.dumps({"cases": [{"schema": s, "data": d} for s, d in cases]}).encode(),
        capture_output=True,
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    answers: list[list[Any]] = json.loads(completed.stdout)
    return answers


def compare(cases: list[Case]) -> tuple[int, list[str]]:
    """(data checked, disagreements) over the schemas the server accepts."""
    checked, unexplained = 0, []
    for (schema, data), answers in zip(cases, browser_answers(cases), strict=True):
        try:
            validator = FormValidator(schema)
        except SchemaRefusedError:
            continue
        for datum, browser in zip(data, answers, strict=True):
            checked += 1
            ours = validator.validate(datum, refuse_undeclared=False) == []
            if isinstance(browser, dict) or ours != browser:
                unexplained.append(
                    f"server={ours} browser={browser} schema={json.dumps(schema)} data={json.dumps(datum)}"
                )
    return checked, unexplained


def test_hand_written_edge_cases_agree_with_the_browser_validator() -> None:
    # GIVEN every sample string against every pattern and format, numbers against multipleOf, and more
    checked, unexplained = compare(hand_written())
    # THEN the browser's validator answers as the server does on every one
    print(f"browser validator, hand-written: {checked} data, {len(unexplained)} disagreements")
    assert unexplained == [], f"{len(unexplained)} disagreements:\n" + "\n".join(unexplained[:20])


@pytest.mark.timeout(1800)
def test_generated_schemas_and_data_agree_with_the_browser_validator() -> None:
    # GIVEN schemas and data generated from every keyword the validator knows
    checked, unexplained = compare(generated(GENERATED))
    # THEN the browser's validator answers as the server does on every datum
    print(f"browser validator, generated: {checked} data, {len(unexplained)} disagreements")
    assert unexplained == [], f"{len(unexplained)} disagreements:\n" + "\n".join(unexplained[:20])
