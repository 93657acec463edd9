"""The Lambda assets, bundled for real (no Docker), opened and imported with nothing but the asset on the path.

The deployed runtime is Python 3.12; this machine's interpreter may be another version, and compiled wheels
(pydantic_core, rpds-py) only load in the version they were built for. So this synthesis targets *this*
interpreter on *this* architecture (the ``lambdaPython`` / ``lambdaArchitecture`` context, which also
set the Lambda runtime), which makes the import test faithful; a separate test checks that the deploy
target's tree holds wheels for Lambda's Python. Both trees come from the dependency cache, so this runs
without a network once ``python -m agentturn.cdk prefetch`` has run (``scripts/test`` does it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Final

import pytest

from agentturn.cdk.bundling import DEPLOY_TARGET, BundlingError, DependencySpec, ensure_dependencies, local_target
from agentturn.cdk.bytecode import cache_tag
from tests.infra.lambda_probe import run_handler
from tests.infra.synth import Synth, file_assets, refs, synthesise

FUNCTIONS: Final = ("run", "submit", "worker", "sweeper", "retention")


def _openapi_event() -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "GET /openapi.json",
        "rawPath": "/openapi.json",
        "rawQueryString": "",
        "headers": {"authorization": "Bearer token", "host": "api.example.com", "accept": "application/json"},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api",
            "domainName": "api.example.com",
            "domainPrefix": "api",
            "http": {
                "method": "GET",
                "path": "/openapi.json",
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "pytest",
            },
            "requestId": "request-1",
            "routeKey": "GET /openapi.json",
            "stage": "$default",
            "time": "01/Dec/2026:00:00:00 +0000",
            "timeEpoch": 1_796_083_200_000,
            "authorizer": {"jwt": {"claims": {"sub": "user-1"}, "scopes": None}},
        },
        "isBase64Encoded": False,
    }


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    target = local_target()
    context = {"lambdaPython": target.python_version, "lambdaArchitecture": target.architecture}
    try:
        return synthesise(tmp_path_factory.mktemp("cdk-bundled"), context, bundle=True)
    except Exception as exc:  # jsii wraps the bundler's exception in a RuntimeError
        if "pip could not install" in str(exc):
            pytest.fail(f"no cached Lambda dependencies for {target}; run `python -m agentturn.cdk prefetch`:\n{exc}")
        raise


def _asset_dir(synth: Synth, function: str) -> Path:
    code = synth.resource(synth.system.functions[function])["Properties"]["Code"]
    return file_assets(synth.outdir, synth.stack.artifact_id)[code["S3Key"]]


def _lambda_env(synth: Synth, function: str) -> dict[str, str]:
    """What Lambda would set, with placeholder values for the resources (no request is ever sent)."""
    values = {
        synth.logical_id(synth.system.turns_table): "agentturn-test-turns",
        synth.logical_id(synth.system.conversations_table): "agentturn-test-conversations",
        synth.logical_id(synth.system.bucket): "agentturn-test-snapshots",
        synth.logical_id(synth.system.queue): "https://sqs.us-east-1.amazonaws.com/123456789012/agentturn-test",
        # The live endpoint is https://{the API's Dns.Http}/event: the whole value stands for it here.
        synth.logical_id(synth.system.live.api): "https://example.appsync-api.us-east-1.amazonaws.com/event",
        synth.logical_id(synth.system.event_bus): "agentturn-test-notices",
        synth.logical_id(synth.system.handoff_secret): "arn:aws:secretsmanager:us-east-1:123456789012:secret:h-AbCdEf",
    }
    variables = synth.resource(synth.system.functions[function])["Properties"]["Environment"]["Variables"]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_LAMBDA_FUNCTION_NAME": f"agentturn-{function}",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "AWS_EXECUTION_ENV": f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}",
    }
    for key, value in variables.items():
        env[key] = value if isinstance(value, str) else values[next(refs(value))]
    return env


@pytest.mark.parametrize("function", FUNCTIONS)
def test_asset_holds_the_function_the_package_and_wheels(bundled: Synth, function: str) -> None:
    asset = _asset_dir(bundled, function)
    assert (asset / "app.py").read_text() == (Path("functions") / function / "app.py").read_text()
    assert (asset / "agentturn" / "__init__.py").is_file()
    assert (asset / "agentturn" / "aws" / "tables.py").is_file()
    for distribution in ("pydantic", "pydantic_core", "jsonschema", "boto3", "botocore", "aws_lambda_powertools"):
        assert (asset / distribution).is_dir(), distribution
    target = local_target()
    (extension,) = (asset / "pydantic_core").glob("_pydantic_core.*.so")
    machine = "x86_64" if target.architecture == "x86_64" else "aarch64"
    assert f"cpython-{target.abi[2:]}-{machine}-linux-gnu" in extension.name
    # Byte code of the target's Python only (agentturn.cdk.bytecode; test_asset_bytecode.py checks it in full).
    assert {pyc.name.split(".")[-2] for pyc in asset.rglob("*.pyc")} == {cache_tag(target.python_version)}
    assert not (asset / "bin").exists()
    assert not (asset / ".complete").exists()


def test_the_agui_asset_starts_with_an_executable_run_sh(bundled: Synth) -> None:
    # The Lambda Web Adapter's wrapper execs $LAMBDA_TASK_ROOT/run.sh (the function's handler): it must be there,
    # executable, beside the entry module and the package.
    asset = _asset_dir(bundled, "agui")
    run_sh = asset / "run.sh"
    assert run_sh.read_text() == (Path("functions") / "agui" / "run.sh").read_text()
    assert run_sh.stat().st_mode & 0o111 == 0o111
    assert (asset / "app.py").is_file()
    assert (asset / "agentturn" / "api" / "web_adapter.py").is_file()


@pytest.mark.parametrize("function", FUNCTIONS)
def test_handler_imports_from_the_asset_alone(bundled: Synth, function: str) -> None:
    asset = _asset_dir(bundled, function)
    # One real request through the run handler: routing, identity, serialisation, lazy imports.
    event = _openapi_event() if function == "run" else None
    outcome = run_handler(asset, _lambda_env(bundled, function), event)
    assert outcome["foreign"] == [], f"{function} loaded modules from outside the asset"
    if function == "run":
        assert outcome["status"] == 200, outcome
        assert '"openapi"' in outcome["body"]


def test_deploy_target_wheels_are_built_for_the_lambda_runtime() -> None:
    """What `cdk deploy` ships: CPython 3.12 (x86_64 by default) extension modules, not this machine's."""
    target = DEPLOY_TARGET
    try:
        tree = ensure_dependencies(DependencySpec.for_target(target))
    except BundlingError as exc:
        pytest.fail(f"no cached Lambda dependencies for {target}; run `python -m agentturn.cdk prefetch`:\n{exc}")
    (extension,) = (tree / "pydantic_core").glob("_pydantic_core.*.so")
    assert extension.name == "_pydantic_core.cpython-312-x86_64-linux-gnu.so"
    (rpds,) = (tree / "rpds").glob("rpds.*.so")
    assert "cpython-312-x86_64-linux-gnu" in rpds.name
