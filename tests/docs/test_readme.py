"""Every Python snippet of the README runs as shown: in document order, in one interpreter (later snippets
build on earlier ones, as a reader would type them), from the folder of a project `agentturn init` made
(the CDK snippet names its package), with nothing added between them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest

from agentturn.cli.scaffold import init_project

ROOT: Final = Path(__file__).resolve().parents[2]
README: Final = ROOT / "README.md"

#: Executes the blocks it is given, one after the other, in one namespace, then reports what the test checks.
_RUNNER: Final = r"""
import contextlib, io, json, sys, traceback
blocks = json.loads(sys.stdin.read())
namespace = {"__name__": "__readme__"}
printed = []
for number, block in enumerate(blocks, 1):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
    except BaseException:
        print("FAILED " + json.dumps({"block": number, "error": traceback.format_exc()}))
        raise SystemExit(1)
    printed.append(out.getvalue())
done, tickets = namespace["done"], namespace["tickets"]
print("RESULT " + json.dumps({
    "printed": printed,
    "meeting": [done.status.value, done.final_output],
    "tickets": list(tickets.values()),
    "declined": namespace["runner"].restore(namespace["turn"].id).status.value,
    "functions": sorted(namespace["system"].functions),
}))
"""


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_the_readme_has_the_snippets_this_test_runs() -> None:
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 6
    assert any("AgentTurn(" in block for block in blocks)
    assert any("require_form(" in block for block in blocks)


def test_every_python_snippet_runs_as_shown(tmp_path: Path) -> None:
    # GIVEN the README's Python snippets and a project made by `agentturn init`
    project = tmp_path / "access-desk"
    init_project(project)
    env = {
        **os.environ,
        # What `cdk synth` would give the app, minus the Lambda bundles (the template is what matters here).
        "CDK_CONTEXT_JSON": json.dumps({"aws:cdk:bundling-stacks": []}),
        "CDK_OUTDIR": str(tmp_path / "cdk.out"),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
    }
    # WHEN they run one after the other
    result = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(python_blocks(README.read_text())),
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED ")]
    if failed:
        report = json.loads(failed[0].removeprefix("FAILED "))
        pytest.fail(f"README python block {report['block']} failed:\n{report['error']}", pytrace=False)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    outcome: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    # THEN each does what its text says
    assert outcome["meeting"] == ["COMPLETED", "Room A-301 is booked for the review."]
    assert "COMPLETED Room A-301 is booked for the review.\n" in outcome["printed"]
    assert outcome["tickets"] == [{"id": "T-1", "title": "login is down", "affectedSystem": "SSO"}]
    assert outcome["declined"] == "RUNNING"  # accepted for a worker, which tells the model it was declined
    assert outcome["functions"] == ["agui", "retention", "run", "submit", "sweeper", "worker"]


def test_the_adapter_kit_snippet_is_a_test_module_that_passes(tmp_path: Path) -> None:
    # GIVEN the README's conformance-suite snippet saved as a test module, as a reader would
    (block,) = [block for block in python_blocks(README.read_text()) if "TurnStoreSuite" in block]
    (tmp_path / "test_my_store.py").write_text(block)
    # WHEN pytest runs it THEN the shipped suite runs against the store it names, and passes
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_store.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    passed = re.search(r"(\d+) passed", result.stdout)
    assert passed is not None and int(passed.group(1)) >= 20, result.stdout
