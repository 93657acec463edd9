"""A team's own project, end to end: ``agentturn init`` → install against this checkout → its tests → ``cdk
synth`` with the real CLI → the bundled run handler serving the team's agent → ``agentturn dev`` serving it.

agentturn is installed into a fresh virtual environment *from a wheel of this checkout* (what a team gets
from an index), not from the editable install the other tests use; the environment sees the machine's
packages (``--system-site-packages``) so nothing is downloaded and the test runs offline. The synthesis
targets this interpreter (``-c agentturn:lambdaPython=3.x``) so that the asset can be imported here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import boto3
import pytest

from agentturn.aws.tables import TableNames, create_tables
from agentturn.cdk.bundling import local_target
from agentturn.cli.scaffold import CDK_CLI_VERSION
from tests.e2e.conftest import DevProcess, free_port
from tests.functional.harness import http_event
from tests.infra.lambda_probe import run_handler
from tests.infra.synth import refs
from tests.support.emulators import Emulator, boto3_session_kwargs

ROOT: Final = Path(__file__).resolve().parents[2]
CDK_CLI: Final = ROOT / "node_modules" / ".bin" / "cdk"
PROJECT: Final = "access-desk"
PACKAGE: Final = "access_desk"
AGENTS: Final = f"{PACKAGE}.agents:build"


@dataclass(frozen=True)
class TeamProject:
    root: Path
    python: Path
    cdk_out: Path
    timings: dict[str, float]

    @property
    def template(self) -> dict[str, Any]:
        return json.loads((self.cdk_out / "AccessDesk.template.json").read_text())  # type: ignore[no-any-return]

    def function(self, title: str) -> dict[str, Any]:
        (resource,) = [
            r
            for logical_id, r in self.template["Resources"].items()
            if r["Type"] == "AWS::Lambda::Function" and logical_id.startswith(f"AgentTurn{title}Function")
        ]
        return resource

    def asset(self, title: str) -> Path:
        s3_key = self.function(title)["Properties"]["Code"]["S3Key"]
        return self.cdk_out / f"asset.{s3_key.removesuffix('.zip')}"


def _run(command: list[str | Path], *, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    result = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"$ {' '.join(map(str, command))}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def team_project(tmp_path_factory: pytest.TempPathFactory) -> TeamProject:
    work = tmp_path_factory.mktemp("team")
    timings: dict[str, float] = {}
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INDEX": "1",  # everything comes from this checkout or the machine's packages: offline
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("PYTHONPATH", None)

    started = time.monotonic()
    environment = work / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(environment)
    python = environment / "bin" / "python"
    env["PATH"] = f"{environment / 'bin'}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(environment)
    wheels = work / "wheels"
    # The venv has no pip of its own: the machine's pip installs into it (--python), as `pip` would there.
    pip = [sys.executable, "-m", "pip", "--python", python]
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, ROOT],
        cwd=work,
        env=env,
    )
    (wheel,) = wheels.glob("agentturn-*.whl")
    _run([*pip, "install", "--no-deps", wheel], cwd=work, env=env)
    timings["install agentturn (wheel of this checkout)"] = time.monotonic() - started

    started = time.monotonic()
    _run([python, "-m", "agentturn.cli", "init", work / PROJECT], cwd=work, env=env)
    project = work / PROJECT
    _run([*pip, "install", "--no-deps", "--no-build-isolation", "-e", project], cwd=project, env=env)
    timings["agentturn init + install the project"] = time.monotonic() - started

    started = time.monotonic()
    tests = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project, env=env)
    timings["the project's tests"] = time.monotonic() - started
    assert " passed" in tests and "failed" not in tests, tests

    started = time.monotonic()
    target = local_target()
    _run(
        [CDK_CLI, "synth", "--quiet", "-c", f"agentturn:lambdaPython={target.python_version}",
         "-c", f"agentturn:lambdaArchitecture={target.architecture}"],
        cwd=project,
        env=env,
    )  # fmt: skip
    timings["cdk synth (5 bundled functions)"] = time.monotonic() - started
    print("\nteam project timings (s): " + json.dumps({k: round(v, 1) for k, v in timings.items()}))
    return TeamProject(root=project, python=python, cdk_out=project / "cdk.out", timings=timings)


def test_agentturn_comes_from_the_wheel_not_the_checkout(team_project: TeamProject) -> None:
    # GIVEN the project's environment WHEN agentturn is imported THEN it is the installed wheel, whose
    # package carries the handler sources the construct bundles
    located = subprocess.run(
        [team_project.python, "-c", "import agentturn, agentturn._sources as s; print(agentturn.__file__); "
         "print(s.handler_sources())"],
        capture_output=True, text=True, check=True, cwd=team_project.root, env={"PATH": os.environ["PATH"]},
    ).stdout.split()  # fmt: skip
    assert not located[0].startswith(str(ROOT)), located
    assert located[1].startswith(str(Path(located[0]).parent)), located


def test_the_template_serves_the_teams_agents(team_project: TeamProject) -> None:
    for title in ("Run", "Submit", "Worker", "Sweeper"):
        variables = team_project.function(title)["Properties"]["Environment"]["Variables"]
        assert variables["AGENTTURN_AGENTS"] == AGENTS
        assert team_project.function(title)["Properties"]["Runtime"] == f"python{local_target().python_version}"


def test_every_asset_holds_the_teams_package_beside_agentturn(team_project: TeamProject) -> None:
    for title in ("Run", "Submit", "Worker", "Sweeper"):
        asset = team_project.asset(title)
        assert (asset / PACKAGE / "tools.py").read_text() == (team_project.root / PACKAGE / "tools.py").read_text()
        assert (asset / "agentturn" / "engine" / "runner.py").is_file()
        # Only what runs in a Lambda: not the construct, the local server, the console or the templates.
        for absent in ("cdk", "local", "web", "templates", "functions", "testing"):
            assert not (asset / "agentturn" / absent).exists(), absent


@pytest.fixture
def deployed_resources(dynamodb_local: Emulator, moto_server: Emulator) -> dict[str, str]:
    """Tables on DynamoDB Local, queue and bucket on moto: what the function's environment would name."""
    suffix = uuid.uuid4().hex[:8]
    session = boto3.session.Session(**boto3_session_kwargs())
    sqs = session.client("sqs", endpoint_url=moto_server.endpoint_url)
    s3 = session.client("s3", endpoint_url=moto_server.endpoint_url)
    queue_url = sqs.create_queue(QueueName=f"team-{suffix}")["QueueUrl"]
    names = TableNames(
        turns_table=f"team-{suffix}-turns",
        conversations_table=f"team-{suffix}-conversations",
        idempotency_table=f"team-{suffix}-idempotency",
        snapshot_bucket=f"team-{suffix}-snapshots",
        resume_queue_url=queue_url,
    )
    create_tables(session.client("dynamodb", endpoint_url=dynamodb_local.endpoint_url), names)
    s3.create_bucket(Bucket=names.snapshot_bucket or "")
    return {
        **names.to_env(),
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_local.endpoint_url,
        "AWS_ENDPOINT_URL_SQS": moto_server.endpoint_url,
        "AWS_ENDPOINT_URL_S3": moto_server.endpoint_url,
    }


def test_the_bundled_run_handler_serves_the_teams_agent_from_the_asset_alone(
    team_project: TeamProject, deployed_resources: dict[str, str]
) -> None:
    # GIVEN the run function's asset and the environment its template sets (resources on the emulators)
    asset = team_project.asset("Run")
    template_env = team_project.function("Run")["Properties"]["Environment"]["Variables"]
    env = {
        "PATH": os.environ["PATH"],
        "LANG": "C.UTF-8",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_LAMBDA_FUNCTION_NAME": "access-desk-run",
        **{key: value for key, value in template_env.items() if isinstance(value, str)},
        **deployed_resources,
        # The live timeline and the notices stay off here (their own tests cover them): no emulator plays
        # AppSync Events, and a start turn needs neither.
        "AGENTTURN_LIVE_ENDPOINT": "",
        "AGENTTURN_EVENT_BUS": "",
    }
    unresolved = {key for key, value in template_env.items() if not isinstance(value, str)} - set(env)
    assert not unresolved, f"template variables with no emulator value: {unresolved} ({list(refs(template_env))})"
    # WHEN one real start-turn event reaches the handler
    event = http_event(
        "http_start_turn.json", path="/conversations/team-1/turns", body={"input": "I need access to a system"}
    )
    outcome = run_handler(asset, env, event, modules=[f"{PACKAGE}.tools", "agentturn"])
    body = json.loads(outcome["body"])
    # THEN the team's agent ran its tool, which asked for the team's form; every module came from the asset
    # and the tool module from the team's folder in it, not from agentturn
    assert outcome["status"] == 200, outcome
    assert body["status"] == "WAITING_FOR_USER", body
    assert body["suspension"]["formKey"] == "access_request_details"
    assert outcome["files"] == {
        f"{PACKAGE}.tools": str(asset / PACKAGE / "tools.py"),
        "agentturn": str(asset / "agentturn" / "__init__.py"),
    }
    assert outcome["foreign"] == []


def test_agentturn_dev_serves_the_teams_agent_as_deployed(team_project: TeamProject, tmp_path: Path) -> None:
    # GIVEN `agentturn dev --agents ... --code ...` in the project, from its own environment
    server = DevProcess(
        free_port(),
        tmp_path / "dev.log",
        args=["--agents", AGENTS, "--code", PACKAGE, "--quiet"],
        cwd=team_project.root,
        python=str(team_project.python),
        base_env={"PYTHONDONTWRITEBYTECODE": "1"},
    ).start()
    try:
        # WHEN someone asks the team's agent for access
        status, turn = server.request("POST", "/conversations/dev-1/turns", {"input": "I need access"})
        # THEN its form appears, and a submission resumes the turn through the queue to its end
        assert status == 200, turn
        assert turn["suspension"]["formKey"] == "access_request_details"
        action = turn["suspension"]["actionId"]
        status, accepted = server.request(
            "POST",
            f"/turns/{turn['turnId']}/actions/{action}/submit",
            {"data": {"system": "billing", "reason": "month-end close"}},
            headers={"Idempotency-Key": str(uuid.uuid4())},
        )
        assert status == 202, accepted
        current = _poll_turn(server, turn["turnId"], until="COMPLETED")
        assert "billing" in current["finalOutput"]
    finally:
        assert server.stop() == 0, server.log()


def _poll_turn(server: DevProcess, turn_id: str, *, until: str, timeout: float = 60.0) -> dict[str, Any]:
    """The turn once its status is ``until`` (the dev server's worker loop resumes it), within ``timeout``."""
    assert server.process is not None
    deadline = time.monotonic() + timeout
    while True:
        _, current = server.request("GET", f"/turns/{turn_id}")
        if current.get("status") == until:
            return current  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            pytest.fail(f"turn {turn_id} is {current.get('status')}, not {until}, after {timeout} s:\n{server.log()}")
        try:
            # Doubles as the pause between reads and the check that the server is still alive.
            server.process.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            continue
        pytest.fail(f"agentturn dev exited with {server.process.returncode}:\n{server.log()}")


def test_the_scaffold_pins_the_cdk_cli_this_repository_pins() -> None:
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    assert pinned == CDK_CLI_VERSION
