"""A cold container's first invocation loads what its route needs and nothing more.

The import-time side is ``tests/packaging/test_handler_imports.py``; here a fresh interpreter imports a handler
and answers one real event on the emulator, and the test looks at what that loaded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Final

from tests.functional.harness import Deployment, FakeLambdaContext, http_event
from tests.support.lambda_process import lambda_env
from tests.support.task_root import last_json_line

ROOT: Final = Path(__file__).resolve().parents[2]

_FIRST_SWEEP: Final = """
import json, sys
import functions.sweeper.app as app
from agentturn.local.lambda_context import LocalLambdaContext
event = json.loads(open(sys.argv[1]).read())
result = app.handler(event, LocalLambdaContext(function_name="agentturn-sweeper", timeout_ms=60_000))
print(json.dumps({"result": result, "modules": sorted(sys.modules)}))
"""


def test_a_cold_sweeper_sweeps_without_the_form_validator_the_agents_or_the_tracer(deployment: Deployment) -> None:
    # GIVEN a run Lambda out of time whose hand-off message could not be sent: a runnable turn nobody works on
    restore = deployment.break_queue_sends(deployment.run_app.api.services)
    try:
        response = deployment.run(
            http_event("http_start_turn.json", body={"input": "create a high priority login incident ticket"}),
            FakeLambdaContext(budget_ms=50),
        )
    finally:
        restore()
    assert response.status == 503
    env = lambda_env(tracing=False, function_name="agentturn-sweeper")
    # WHEN a fresh interpreter imports the sweeper handler and answers one scheduled event
    answer = last_json_line(
        [sys.executable, "-c", _FIRST_SWEEP, str(ROOT / "tests" / "events" / "eventbridge_schedule.json")],
        cwd=ROOT,
        env=env,
    )
    # THEN it handed the turn over again ...
    assert answer["result"]["enqueued"] == 1
    assert [json.loads(m["Body"])["turnId"] for m in deployment.receive()] != []
    modules = set(answer["modules"])
    assert "agentturn.engine.runner" in modules
    # ... without the form validator (no form is defined or checked: jsonschema, regex, the formats), the agents'
    # module or the X-Ray SDK
    for name in (
        "jsonschema",
        "agentturn.forms.validation",
        "regex",
        "agentturn.demo",
        "aws_xray_sdk",
        "aws_lambda_powertools.event_handler",
    ):
        assert not any(m == name or m.startswith(f"{name}.") for m in modules), name
