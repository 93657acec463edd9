"""AG-UI 1.0 with the official client: ``@ag-ui/client`` 1.x ``HttpAgent`` (its event verifier on) against
``agentturn dev`` serving the scripted agents of :mod:`tests.agui.agents`.

The scenarios are Node tests (``client.test.mjs``, ``node:test``); this module starts the server for them, and
for the restart case stops and starts it between the interrupt and the resume (``--persist``: the state
survives the restart as it survives a deploy).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ARTIFACTS, DevProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
NODE_TIMEOUT_S = 240

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (ROOT / "node_modules" / "@ag-ui" / "client").exists(),
    reason="needs node and the AG-UI client (npm ci)",
)


def _dev(port: int, state: Path, log: str) -> DevProcess:
    return DevProcess(
        port,
        ARTIFACTS / log,
        args=["--persist", str(state), "--quiet"],
        base_env={
            "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)]),
            "AGENTTURN_AGENTS": "tests.agui.agents:agui_agents",
        },
        # The sweeper must not close the expiring test's wait before its late resume arrives: the expiry the
        # test checks is the AG-UI run's own (the interrupt's expiresAt).
        env={"AGENTTURN_EXPIRE_OVERDUE": "false"},
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DevProcess]:
    dev = _dev(free_port(), tmp_path / "state", "agui-dev-server.log").start()
    yield dev
    dev.stop()


def _node(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", *args],
        cwd=ROOT,
        env={**os.environ, "AGUI_URL": url.rstrip("/")},
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
        check=False,
    )


def test_the_official_client_drives_forms_approvals_and_errors(server: DevProcess) -> None:
    # GIVEN agentturn dev with the AG-UI test agents
    # WHEN the official client runs every scenario of client.test.mjs against it
    done = _node("--test", "--test-reporter=spec", str(HERE / "client.test.mjs"), url=server.url)
    # THEN every scenario passes, the client's verifier included
    assert done.returncode == 0, (
        done.stdout[-8000:] + done.stderr[-4000:] + "\n--- server log ---\n" + server.log()[-4000:]
    )


def test_a_client_dropping_at_every_boundary_loses_doubles_and_strands_nothing(server: DevProcess) -> None:
    # GIVEN agentturn dev; WHEN a client drops each run of a form cycle after each of its events, then reloads
    done = _node("--test", "--test-reporter=spec", str(HERE / "drops.test.mjs"), url=server.url)
    # THEN every cycle ends with its interrupt, then its answer, once each
    assert done.returncode == 0, (
        done.stdout[-6000:] + done.stderr[-3000:] + "\n--- server log ---\n" + server.log()[-3000:]
    )
    assert '"lost":0,"doubled":0,"stuck":0' in done.stdout


def test_a_form_interrupt_survives_a_restart_of_the_server(tmp_path: Path) -> None:
    state = tmp_path / "state"
    port = free_port()
    # GIVEN a form interrupt, answered by nobody yet
    first = _dev(port, state, "agui-restart-1.log").start()
    try:
        asked = _node(str(HERE / "restart_phase.mjs"), "interrupt", url=first.url)
    finally:
        assert first.stop() == 0
    assert asked.returncode == 0, asked.stderr
    before: dict[str, Any] = json.loads(asked.stdout)
    assert before["failure"] is None
    assert [i["reason"] for i in before["interrupts"]] == ["input_required"]
    # WHEN the server restarts and a new client (a reloaded page) asks for the thread, then resumes
    second = _dev(port, state, "agui-restart-2.log").start()
    try:
        resumed = _node(str(HERE / "restart_phase.mjs"), "resume", json.dumps(before), url=second.url)
    finally:
        second.stop()
    assert resumed.returncode == 0, resumed.stderr
    after: dict[str, Any] = json.loads(resumed.stdout)
    # THEN the reload shows the same interrupt, and the resume finishes the turn with the submitted data
    assert after["reload"]["failure"] is None
    assert after["reload"]["interrupts"] == before["interrupts"]
    assert after["reload"]["messages"] == ["user", "assistant"]
    assert after["resumed"]["failure"] is None
    assert after["resumed"]["types"][0] == "RUN_STARTED"
    assert "TOOL_CALL_RESULT" in after["resumed"]["types"]
    assert after["resumed"]["finished"]["outcome"] == {"type": "success"}
    assert "Kyoto" in after["resumed"]["finished"]["result"]
