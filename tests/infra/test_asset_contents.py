"""Each function's asset holds only what its handler (and the team's code) can import.

The closure is read from the source (:mod:`agentturn.cdk.closure`); these lists are what it gives today, so a
new import that drags a package into a function shows up here as a changed list, on purpose. That the handlers
still import and answer from their trimmed assets is ``tests/infra/test_bundle.py``'s probe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from agentturn.cdk.bundling import (
    PACKAGE_DIR,
    AssetInputs,
    BundlingError,
    DependencySpec,
    asset_closure,
    build_asset,
    local_target,
)
from agentturn.cdk.closure import AWS_SERVICES, package_closure

#: The wheels every function ships (SDK tracing off: no X-Ray SDK).
WHEELS: Final = frozenset(
    {
        "annotated-types", "attrs", "aws-lambda-powertools", "boto3", "botocore", "jmespath", "jsonschema",
        "jsonschema-specifications", "pydantic", "pydantic-core", "python-dateutil", "referencing", "regex",
        "rpds-py", "s3transfer", "six", "typing-extensions", "typing-inspection", "urllib3",
    }
)  # fmt: skip
_HTTP: Final = frozenset(
    {
        "agentturn.api.body", "agentturn.api.http", "agentturn.api.identity", "agentturn.api.openapi",
        "agentturn.api.operations", "agentturn.api.problems", "agentturn.api.resolver", "agentturn.api.routes",
        "agentturn.api.views", "agentturn.agui", "agentturn.agui.capabilities", "agentturn.agui.encoder",
        "agentturn.agui.events", "agentturn.agui.input", "agentturn.agui.interrupts", "agentturn.agui.mapping",
        "agentturn.agui.resume", "agentturn.agui.session",
    }
)  # fmt: skip
#: The runtime modules each function's asset leaves out (besides cdk, local, web, templates, testing, cli).
#: The AG-UI streaming entry's own modules: its HTTP server for the Lambda Web Adapter and its token check (the
#: other HTTP functions are behind the HTTP API's JWT authorizer).
_STREAM_ENTRY: Final = frozenset({"agentturn.api.tokens", "agentturn.api.web_adapter"})
LEFT_OUT: Final = {
    "agui": {"agentturn.api.sweeper", "agentturn.api.worker", "agentturn.aws.retention"},
    "run": {*_STREAM_ENTRY, "agentturn.api.sweeper", "agentturn.api.worker", "agentturn.aws.retention"},
    "submit": {*_STREAM_ENTRY, "agentturn.api.sweeper", "agentturn.api.worker", "agentturn.aws.retention"},
    "worker": {*_HTTP, *_STREAM_ENTRY, "agentturn.api.sweeper", "agentturn.aws.retention"},
    "sweeper": {*_HTTP, *_STREAM_ENTRY, "agentturn.api.worker", "agentturn.aws.retention"},
    "retention": {*_HTTP, *_STREAM_ENTRY, "agentturn.api.sweeper", "agentturn.api.worker", "agentturn.api.telemetry"},
}
_NEVER: Final = ("cdk", "local", "web", "templates", "testing", "cli")
_ALWAYS_LEFT_OUT: Final = frozenset({"agentturn._sources", "agentturn.aws.mcp_secrets"})


def _runtime_modules() -> set[str]:
    names = set()
    for path in PACKAGE_DIR.rglob("*.py"):
        relative = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
        if "__pycache__" in relative.parts or (len(relative.parts) > 2 and relative.parts[1] in _NEVER):
            continue
        if len(relative.parts) == 2 and relative.parts[1] in _NEVER:
            continue
        names.add(".".join(relative.parts).removesuffix(".__init__"))
    return names


@pytest.fixture(scope="module")
def spec() -> DependencySpec:
    try:
        return DependencySpec.for_target(local_target())
    except BundlingError as exc:  # pragma: no cover - the cache is filled by scripts/test
        pytest.fail(f"no cached Lambda dependencies; run `python -m agentturn.cdk prefetch`:\n{exc}")


@pytest.mark.parametrize("function", sorted(LEFT_OUT))
def test_each_function_ships_only_the_modules_it_can_import(spec: DependencySpec, function: str) -> None:
    # GIVEN the demo agents (the default setting) and SDK tracing off (the default)
    inputs = AssetInputs(modules=("agentturn.demo",), sdk_tracing=False)
    # WHEN the function's closure is read from its handler
    closure = asset_closure(function, spec, inputs)
    # THEN it holds every runtime module but the listed ones, and exactly the listed wheels
    assert _runtime_modules() - closure.modules == LEFT_OUT[function] | _ALWAYS_LEFT_OUT
    assert not {m for m in closure.modules if m.split(".")[1:2] and m.split(".")[1] in _NEVER}
    assert closure.distributions == WHEELS


def test_sdk_tracing_ships_the_xray_sdk(spec: DependencySpec) -> None:
    closure = asset_closure("worker", spec, AssetInputs(sdk_tracing=True))
    assert {"aws-xray-sdk", "wrapt"} <= closure.distributions


def test_the_teams_code_brings_the_modules_it_imports(tmp_path: Path) -> None:
    # GIVEN team code that uses the MCP secrets helper, which no handler imports
    team = tmp_path / "desk"
    team.mkdir()
    (team / "__init__.py").write_text("")
    (team / "agents.py").write_text(
        "def build():\n    from agentturn.aws.mcp_secrets import SecretHeaders\n    return SecretHeaders\n"
    )
    # WHEN the closure is read from the sweeper's handler and the team's code
    modules, _ = package_closure([Path("functions/sweeper/app.py"), team], PACKAGE_DIR)
    # THEN the helper is shipped
    assert "agentturn.aws.mcp_secrets" in modules


def test_botocore_keeps_only_the_service_models_used(spec: DependencySpec, tmp_path: Path) -> None:
    # GIVEN a team that also calls SES
    inputs = AssetInputs(aws_services=("sesv2",), sdk_tracing=False)
    # WHEN the retention function's asset is built
    build_asset("retention", spec, tmp_path / "asset", inputs)
    data = tmp_path / "asset" / "botocore" / "data"
    # THEN botocore's models are agentturn's services and the team's, plus the shared files
    assert {p.name for p in data.iterdir() if p.is_dir()} == {*AWS_SERVICES, "sesv2"}
    assert (data / "endpoints.json").is_file()
    assert not (tmp_path / "asset" / "aws_xray_sdk").exists()
    assert not (tmp_path / "asset" / "agentturn" / "cdk").exists()
