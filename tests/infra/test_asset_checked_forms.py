"""The deployed agents' form schemas are checked against JSON Schema's meta-schema once, when the asset is built
(:mod:`agentturn.cdk.checked_forms`): a cold process that defines those forms, or checks a submission to them,
never imports jsonschema; any other schema is still checked in full, and agentturn's own rules always run."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentturn.api.settings import DEFAULT_AGENTS
from agentturn.cdk.bundling import (
    DEPLOY_TARGET,
    AssetInputs,
    BundlingError,
    DependencySpec,
    Target,
    build_asset,
    local_target,
)
from agentturn.cdk.bytecode import target_interpreter
from agentturn.demo.agents import MEETING_SCHEMA, SUPPORT_TICKET_SCHEMA
from agentturn.forms import checked
from agentturn.forms.checked import CHECKED_SCHEMAS_FILE, schema_digest
from agentturn.forms.schema_rules import SchemaRefusedError, check_form_schema
from tests.support.lambda_process import lambda_env
from tests.support.task_root import last_json_line, python_in_asset

#: In the built asset, read-only: define the demo forms, check a submission to one, then define a form the build
#: never saw; report which of them brought jsonschema in.
_PROBE = """
import json, sys
from agentturn.api.agents import load_agents
from agentturn.demo.agents import SUPPORT_TICKET_SCHEMA
from agentturn.forms.validation import validate_form_data
from agentturn.forms.definitions import FormDefinition
load_agents(sys.argv[1])
problems = validate_form_data(SUPPORT_TICKET_SCHEMA, {"affectedSystem": 5})
after_known = "jsonschema" in sys.modules
try:
    FormDefinition("new", "a form the build never saw", {"type": "object", "properties": {"a": {"type": 5}}})
    refused = None
except ValueError as exc:
    refused = str(exc)
print(json.dumps({"after_known": after_known, "problems": len(problems), "refused": refused,
                  "after_new": "jsonschema" in sys.modules}))
"""


def _target() -> Target:
    """The deploy target when its interpreter is here (pyenv on the team's machines), else this interpreter's."""
    return DEPLOY_TARGET if target_interpreter(DEPLOY_TARGET.python_version) else local_target()


def _spec(target: Target) -> DependencySpec:
    try:
        return DependencySpec.for_target(target)
    except BundlingError as exc:  # pragma: no cover - the cache is filled by scripts/test
        pytest.fail(f"no cached Lambda dependencies; run `python -m agentturn.cdk prefetch`:\n{exc}")


@pytest.fixture(scope="module")
def run_asset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Target]:
    target = _target()
    asset = tmp_path_factory.mktemp("checked-forms") / "run"
    inputs = AssetInputs(modules=("agentturn.demo",), sdk_tracing=False, agents=DEFAULT_AGENTS)
    build_asset("run", _spec(target), asset, inputs)
    return asset, target


def test_the_asset_lists_the_demo_forms_schemas_its_build_checked(run_asset: tuple[Path, Target]) -> None:
    # GIVEN the run function's asset, built with the demo agents
    asset, _ = run_asset
    # WHEN its list of checked schemas is read
    listed = (asset / CHECKED_SCHEMAS_FILE).read_text(encoding="ascii").split()
    # THEN it holds exactly the digests of the demo agents' two form schemas
    assert sorted(listed) == sorted([schema_digest(SUPPORT_TICKET_SCHEMA), schema_digest(MEETING_SCHEMA)])


def test_a_cold_process_checks_known_forms_without_jsonschema_and_new_ones_in_full(
    run_asset: tuple[Path, Target],
) -> None:
    # GIVEN the asset mounted read-only with nothing else on the path, and the target's interpreter
    asset, target = run_asset
    interpreter = target_interpreter(target.python_version)
    assert interpreter is not None
    env = lambda_env(tracing=False, function_name="agentturn-run", extra={"LAMBDA_TASK_ROOT": str(asset)})
    env.pop("PYTHONPATH", None)
    # WHEN it loads the demo agents, checks a bad submission to one of their forms, then defines a new form
    found = last_json_line(python_in_asset(interpreter, asset, _PROBE, DEFAULT_AGENTS), cwd=asset, env=env)
    # THEN the known forms are defined and the submission refused without jsonschema ever loading
    assert found["after_known"] is False
    assert found["problems"] >= 1
    # AND the new form is checked against the meta-schema (jsonschema loads then) and refused
    assert found["refused"] is not None and "invalid JSON Schema" in found["refused"]
    assert found["after_new"] is True


def test_agents_that_do_not_load_at_build_leave_every_check_to_run_time(tmp_path: Path) -> None:
    # GIVEN agents whose module is not in the asset
    target = _target()
    asset = tmp_path / "run"
    inputs = AssetInputs(modules=("agentturn.demo",), sdk_tracing=False, agents="no_such_team.agents:build")
    # WHEN the asset is built
    build_asset("run", _spec(target), asset, inputs)
    # THEN it is built, without a list: every form is checked in full when it is defined
    assert (asset / "app.py").is_file()
    assert not (asset / CHECKED_SCHEMAS_FILE).exists()


def test_a_listed_schema_still_meets_agentturns_own_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a schema with a $ref cycle that never moves into the data, listed as checked at build
    cycle = {"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    monkeypatch.setattr(checked, "_checked_at_build", lambda: frozenset({schema_digest(cycle)}))
    # WHEN it is checked THEN the meta-schema is skipped but agentturn's rules still refuse it
    with pytest.raises(SchemaRefusedError, match="cycle"):
        check_form_schema(cycle)


def test_a_schema_that_is_not_plain_json_is_never_taken_for_a_listed_one() -> None:
    # GIVEN a schema holding something JSON cannot say WHEN it is digested THEN it has no digest (checked in full)
    assert schema_digest({"type": "object", "default": float("nan")}) is None
    assert checked.checked_at_build(None) is False
