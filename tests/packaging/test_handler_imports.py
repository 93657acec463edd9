"""What a Lambda handler module loads when its container starts (import time is cold-start time).

Each handler is imported in a fresh interpreter, as Lambda does, and the test looks at ``sys.modules``: a
module that a handler must not load at import — the X-Ray SDK while tracing is off, jsonschema, boto3, the
runtime's pydantic models, a model adapter — is named in the failure. This asserts behaviour, not time: the
times themselves are reported by ``bench/bench_imports.py`` (``make bench``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

import pytest

from agentturn.api.lambdas import tracing_enabled
from tests.support.lambda_process import lambda_env
from tests.support.task_root import last_json_line

ROOT: Final = Path(__file__).resolve().parents[2]
HANDLERS: Final = ("run", "submit", "worker", "sweeper", "retention", "agui")

#: Loaded by no handler at import. Each is loaded by the first request that needs it (and only then).
NEVER_AT_IMPORT: Final = (
    "aws_xray_sdk",  # Powertools' Tracer imports it even disabled: only created when tracing is on
    "jsonschema",  # the form validator: only where a form is defined or a submission checked
    "boto3",  # clients are created by the first request (Powertools itself imports only botocore's __init__)
    "botocore.session",
    "botocore.client",
    "pydantic",  # the runtime's models: the first request that reads or runs a turn loads them
    "agentturn.engine.runner",
    "agentturn.state.turn",
    "agentturn.forms.validation",
    "agentturn.models.openai_compat",  # model adapters: only when an agent uses them
    "agentturn.aws.bedrock",
    "agentturn.demo",
    "aws_lambda_powertools.event_handler",  # the HTTP resolver: built by the first HTTP request
    "aws_lambda_powertools.utilities.batch",  # the SQS batch processor: the worker's first batch
)


def _modules_after_import(module: str, *, tracing: bool) -> set[str]:
    code = f"import json, sys\nimport {module}\nprint(json.dumps(sorted(sys.modules)))"
    env = lambda_env(tracing=tracing, function_name="agentturn-test")
    return set(last_json_line([sys.executable, "-c", code], cwd=ROOT, env=env))


def _loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(f"{name}.") for m in modules)


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_handler_module_loads_only_its_logger_and_metrics_at_import(handler: str) -> None:
    # GIVEN a fresh interpreter in a Lambda environment with tracing switched off
    # WHEN the handler module is imported, as the Lambda runtime does when a container starts
    modules = _modules_after_import(f"functions.{handler}.app", tracing=False)
    # THEN none of what only a request needs is loaded yet
    loaded = sorted(name for name in NEVER_AT_IMPORT if _loaded(modules, name))
    assert loaded == [], f"functions/{handler}/app.py loads {loaded} at import"
    # and the handler's own Powertools Logger and Metrics are (the control: the import did happen)
    assert {"aws_lambda_powertools.logging.logger", "aws_lambda_powertools.metrics"} <= modules


def test_with_tracing_on_the_handler_creates_its_tracer_at_import() -> None:
    # GIVEN a Lambda environment with tracing on (POWERTOOLS_TRACE_DISABLED unset)
    # WHEN a handler module is imported
    modules = _modules_after_import("functions.worker.app", tracing=True)
    # THEN the Tracer exists, with the X-Ray SDK it records through (so the test above can see it load)
    assert _loaded(modules, "aws_xray_sdk")


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"LAMBDA_TASK_ROOT": "/var/task"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "1"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "false"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "AWS_SAM_LOCAL": "true"}, False),
        ({}, False),
    ],
)
def test_tracing_is_on_where_powertools_would_record(environ: dict[str, str], expected: bool) -> None:
    # GIVEN an environment WHEN asked whether to trace THEN Powertools' own rule decides: switched off, or
    # outside Lambda (no X-Ray daemon listens there), there is nothing to record
    assert tracing_enabled(environ) is expected


def test_the_wiring_creates_the_sqs_and_s3_clients_on_their_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentturn.api.wiring import AwsClients, LazyClient

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # GIVEN the clients a handler's services are built with on its first request
    clients = AwsClients.default(with_s3=True)
    sqs, s3 = clients.sqs, clients.s3
    assert isinstance(sqs, LazyClient) and isinstance(s3, LazyClient)
    # THEN DynamoDB's exists (every request uses it) and neither SQS's nor S3's has been created yet
    assert clients.dynamodb.meta.service_model.service_name == "dynamodb"
    assert not sqs.created and not s3.created
    # WHEN S3's is first used THEN it is created, the real client of its service, and SQS's still is not
    assert s3.meta.service_model.service_name == "s3"
    assert s3.created and not sqs.created


@pytest.mark.parametrize("module", ["agentturn.api.worker", "agentturn.aws.retention"])
def test_the_batch_modules_load_powertools_batch_without_its_parser_models(module: str) -> None:
    # GIVEN a fresh interpreter WHEN it imports what the worker's or the retention function's first batch imports
    modules = _modules_after_import(module, tracing=False)
    # THEN Powertools' batch processor is there and pydantic too, but not the parser's pydantic models of every
    # event source that Powertools builds when pydantic came first (they are never used)
    assert _loaded(modules, "aws_lambda_powertools.utilities.batch")
    assert _loaded(modules, "pydantic")
    assert not _loaded(modules, "aws_lambda_powertools.utilities.parser")


def test_the_retention_functions_first_batch_builds_no_turn_models() -> None:
    # GIVEN a fresh interpreter WHEN it imports what the retention function's first batch imports
    modules = _modules_after_import("agentturn.aws.retention", tracing=False)
    # THEN the turn's pydantic models are not built: a TTL removal is read from the stream's image as it is
    assert not _loaded(modules, "agentturn.state.turn")
    assert not _loaded(modules, "agentturn.state.messages")
