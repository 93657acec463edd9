"""The official MCP conformance suite (``@modelcontextprotocol/conformance``) against agentturn's MCP client.

Every client scenario of revision 2026-07-28 runs, each against the suite's own mock server, with
:mod:`tests.conformance_mcp.client` as the client (an agentturn agent whose tools come from that server). The
suite decides: every scenario passes except those ``baseline.yml`` names (OAuth flows agentturn does not run,
each with its reason), and an entry of the baseline that starts passing fails the run as well.

The suite needs Node >= 22 (``fs.globSync``); the machine's Node is 20, so this folder's own ``package.json``
installs Node 22 from npm (the ``node`` package) beside the suite, and ``scripts/test`` runs ``npm ci`` here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NODE = HERE / "node_modules" / "node" / "bin" / "node"
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SPEC_VERSION = "2026-07-28"
#: one scenario (a node process, a mock server, a Python client) on a loaded machine
SCENARIO_TIMEOUT_S = 120
#: the whole revision, scenario after scenario
SUITE_TIMEOUT_S = 900
#: the suite's result folders are ``<scenario>-<ISO time>``
STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")

pytestmark = pytest.mark.skipif(
    not NODE.exists() or not SUITE.exists(),
    reason="needs Node 22 and @modelcontextprotocol/conformance: `npm ci --prefix tests/conformance_mcp` "
    "(scripts/test does it unless AGENTTURN_TEST_SKIP_INSTALL=1)",
)


def _listed_scenarios() -> list[str]:
    listed = subprocess.run(
        [str(NODE), str(SUITE), "list", "--client", "--spec-version", SPEC_VERSION],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return [line.split("- ", 1)[1].split(" [")[0] for line in listed.splitlines() if line.strip().startswith("- ")]


@pytest.mark.timeout(SUITE_TIMEOUT_S)
def test_every_client_scenario_of_2026_07_28_passes_or_is_baselined_with_its_reason(tmp_path: Path) -> None:
    # GIVEN the shim that drives agentturn's MCP client, and the baseline of the scenarios it is known to fail
    baseline = HERE / "baseline.yml"
    lines = baseline.read_text().splitlines()
    baselined = [line.split("- ", 1)[1].split("#")[0].strip() for line in lines if line.startswith("  - ")]
    scenarios = _listed_scenarios()
    assert set(baselined) <= set(scenarios), "the baseline names scenarios the suite no longer has"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)]),
        "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    # WHEN the suite runs every client scenario of the revision against it, one at a time (the suite's own
    # parallel mode starts 33 clients at once, more than a loaded two-core test machine answers in time)
    failures: list[str] = []
    for scenario in scenarios:
        run = subprocess.run(
            [
                str(NODE),
                str(SUITE),
                "client",
                "--command",
                f"{sys.executable} {HERE / 'client.py'}",
                "--scenario",
                scenario,
                "--spec-version",
                SPEC_VERSION,
                "--expected-failures",
                str(baseline),
                "--timeout",
                "60000",
                "--output-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=SCENARIO_TIMEOUT_S,
            check=False,
        )
        # THEN the suite is satisfied with each: no unexpected failure, no stale baseline entry
        if run.returncode != 0:
            failures.append(f"{scenario}:\n{run.stdout[-3000:]}{run.stderr[-1500:]}")
    assert failures == [], "\n".join(failures)
    report = f"ran {len(scenarios)} scenarios"
    # ... every scenario of the revision ran (results were written for each), and those not baselined passed
    results = {
        STAMP.sub("", path.parent.relative_to(tmp_path).as_posix()): path for path in tmp_path.rglob("checks.json")
    }
    assert sorted(results) == sorted(scenarios), report
    for scenario in set(scenarios) - set(baselined):
        checks = json.loads(results[scenario].read_text())
        failed = [check["id"] for check in checks if check["status"] == "FAILURE"]
        assert checks, f"{scenario}: no checks"
        assert failed == [], f"{scenario}: {failed}"
