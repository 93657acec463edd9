"""A page written with AWS Amplify's AppSync Events client (``aws-amplify`` 6, ``events.connect``) runs against
``agentturn dev`` with nothing changed but its configuration (``tests/amplify``: ``page.mjs`` is the page's
code, ``configure.mjs`` its configuration, ``run.mjs`` drives them in Node with the real client).

Amplify derives ``wss://<endpoint host:port>/event/realtime`` from its ``API.Events.endpoint`` and speaks only
TLS to it: ``agentturn dev`` serves the live timeline there too, with a certificate it makes at start.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest

from tests.e2e.agents import SLOW_SUPPORT_ID
from tests.e2e.conftest import ROOT, DevProcess, free_port

AMPLIFY: Final = ROOT / "tests" / "amplify"


def _require_amplify() -> None:
    if shutil.which("node") is None:
        pytest.skip("needs Node.js")
    if not (AMPLIFY / "node_modules" / "aws-amplify").is_dir():
        if os.environ.get("CI"):
            pytest.fail("tests/amplify has no node_modules: scripts/test runs `npm ci --prefix tests/amplify`")
        pytest.skip("tests/amplify has no node_modules (npm ci --prefix tests/amplify)")


def test_an_amplify_page_follows_a_form_cycle_and_its_publish_settles(tmp_path: Path) -> None:
    # GIVEN agentturn dev (the demo agents and the test agents) and its Amplify endpoint
    _require_amplify()
    server = DevProcess(
        free_port(),
        tmp_path / "dev.log",
        args=["--events-port", "0", "--quiet"],
        base_env={
            "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)]),
            "AGENTTURN_AGENTS": "tests.e2e.agents:e2e_agents",
        },
    ).start()
    try:
        _, info = server.request("GET", "/_dev/info")
        live = info["live"]
        assert live["amplifyEndpoint"].startswith("https://127.0.0.1:")
        # WHEN the page's code runs in Node with the real client, configured for it
        env = {
            **os.environ,
            "ENDPOINT": live["amplifyEndpoint"],
            "NODE_EXTRA_CA_CERTS": live["certificate"],
            "API": server.url.rstrip("/"),
            "DEV_USER": info["defaultUser"],
            "OTHER_USER": "bob",
            # Its model and tool each take longer than the live feed's status window: statuses are pushed.
            "AGENT_ID": SLOW_SUPPORT_ID,
        }
        run = subprocess.run(
            ["node", "run.mjs"], cwd=AMPLIFY, env=env, capture_output=True, text=True, timeout=180, check=False
        )
        assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{server.log()}"
        result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    finally:
        assert server.stop() == 0, server.log()
    # THEN it subscribed and got the form cycle's messages: the wait for the form, then the completed turn
    assert result["started"] == "WAITING_FOR_USER" and result["submitted"] == 202
    statuses = [m["status"] for m in result["received"] if m.get("type") == "timeline"]
    assert "WAITING_FOR_USER" in statuses and statuses[-1] == "COMPLETED", result["received"]
    assert any(m.get("type") == "status" for m in result["received"])
    # AND a person's publish settles refused, as deployed (only IAM publishes); an IAM-signed one settles
    # accepted and reaches the subscriber
    assert result["personPublish"] == {"ok": False, "error": "Publish errors: UnauthorizedException"}
    assert result["iamPublish"] == {"ok": True} and result["echoed"] is True
    # AND another user's channel is refused
    assert result["otherChannel"]["ok"] is False and "Unauthorized" in result["otherChannel"]["error"]
