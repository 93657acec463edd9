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
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import boto3
import pytest

from agentturn.aws.tables import TableNames, create_tables
from agentturn.cdk import NODE_WARNINGS_SILENCED
from agentturn.cdk.bundling import local_target
from agentturn.cli.scaffold import CDK_CLI_VERSION
from tests.e2e.conftest import DevProcess, free_port
from tests.functional.harness import http_event
from tests.infra import team_env
from tests.infra.lambda_probe import run_handler
from tests.infra.synth import refs
from tests.support.emulators import Emulator, boto3_session_kwargs

#: The module's fixture installs, runs the project's tests and synthesises five bundled functions with the real CDK
#: CLI: minutes on a loaded machine, past the suite's default of 300 s per test.
pytestmark = pytest.mark.timeout(1500)

ROOT: Final = Path(__file__).resolve().parents[2]
PROJECT: Final = "access-desk"
PACKAGE: Final = "access_desk"
AGENTS: Final = f"{PACKAGE}.agents:build"


@dataclass(frozen=True)
class TeamProject:
    root: Path
    python: Path
    cdk_out: Path
    timings: dict[str, float]
    #: What `npx cdk synth` printed (stdout and stderr).
    synth_output: str

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


#: `npm install` in the printed steps fetches the CDK CLI the project pins; offline, this stand-in links this
#: checkout's node_modules instead (the same pin: test_the_scaffold_pins_the_cdk_cli_this_repository_pins).
_NPM_STAND_IN: Final = f"""#!/bin/sh
[ "$1" = install ] || {{ echo "npm stand-in: only 'install'" >&2; exit 2; }}
ln -s {ROOT / "node_modules"} node_modules
"""


@dataclass(frozen=True)
class TeamEnvironment:
    work: Path
    project: Path
    python: Path
    env: dict[str, str]
    steps: list[str]
    timings: dict[str, float]


@pytest.fixture(scope="module")
def team_environment(tmp_path_factory: pytest.TempPathFactory) -> TeamEnvironment:
    """agentturn installed from a wheel of this checkout into an environment of the team's, `agentturn init` run
    there, then the steps it prints, as printed (up to `agentturn dev` and `npx cdk synth`, tested below)."""
    work = tmp_path_factory.mktemp("team")
    timings: dict[str, float] = {}
    env = {
        **os.environ,
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INDEX": "1",  # everything comes from this checkout or the test interpreter's packages: offline
        "PIP_NO_BUILD_ISOLATION": "0",  # (pip's spelling of --no-build-isolation) the build tools are here too
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    # Not set here: agentturn.cdk must quiet jsii's Node banner itself (test_synth_prints_no_node_banner).
    for name in NODE_WARNINGS_SILENCED:
        env.pop(name, None)
    env.pop("PYTHONPATH", None)

    started = time.monotonic()
    environment = work / "venv"
    python = team_env.create(environment)
    stand_ins = work / "bin"
    stand_ins.mkdir()
    (stand_ins / "npm").write_text(_NPM_STAND_IN)
    (stand_ins / "npm").chmod(0o755)
    env["PATH"] = f"{environment / 'bin'}{os.pathsep}{stand_ins}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(environment)
    wheels = work / "wheels"
    # Built by the interpreter that runs these tests, with its build tools (the `dev` extra has them).
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", wheels, ROOT], cwd=work, env=env)
    (wheel,) = wheels.glob("agentturn-*.whl")
    # The team's environment has no pip of its own: the test interpreter's pip runs in it (its packages are seen).
    _run([python, "-m", "pip", "install", "--no-deps", wheel], cwd=work, env=env)
    timings["install agentturn (wheel of this checkout)"] = time.monotonic() - started

    started = time.monotonic()
    printed = _run([python, "-m", "agentturn.cli", "init", PROJECT], cwd=work, env=env).splitlines()[1:]
    steps = [line.strip() for line in printed]
    assert steps[0] == f"cd {PROJECT}", printed
    project = work / PROJECT
    ran: list[str] = []
    for step in steps[1:]:
        if step.startswith(("agentturn dev ", "npx cdk synth")):
            continue  # a server, and the synthesis: their own tests below
        _run(["bash", "-c", step], cwd=project, env=env)
        ran.append(step)
    assert ran == ["python3 -m pip install -e '.[dev]' && npm install", "python3 -m pytest"], steps
    timings["agentturn init, then its printed steps (install, the project's tests)"] = time.monotonic() - started
    return TeamEnvironment(work, project, python, env, steps, timings)


@pytest.fixture(scope="module")
def team_project(team_environment: TeamEnvironment) -> TeamProject:
    """The project synthesised with the real CDK CLI, as its printed `npx cdk synth` step (targeting this
    interpreter's Python, so that the bundled asset can be imported here)."""
    started = time.monotonic()
    target = local_target()
    assert "npx cdk synth" in team_environment.steps
    synth = subprocess.run(
        ["npx", "cdk", "synth", "--quiet", "-c", f"agentturn:lambdaPython={target.python_version}",
         "-c", f"agentturn:lambdaArchitecture={target.architecture}"],
        cwd=team_environment.project, env=team_environment.env, capture_output=True, text=True, timeout=900,
        check=False,
    )  # fmt: skip
    assert synth.returncode == 0, synth.stdout + synth.stderr
    timings = {**team_environment.timings, "cdk synth (5 bundled functions)": time.monotonic() - started}
    print("\nteam project timings (s): " + json.dumps({k: round(v, 1) for k, v in timings.items()}))
    return TeamProject(
        root=team_environment.project,
        python=team_environment.python,
        cdk_out=team_environment.project / "cdk.out",
        timings=timings,
        synth_output=synth.stdout + synth.stderr,
    )


def test_agentturn_comes_from_the_wheel_not_the_checkout(team_environment: TeamEnvironment) -> None:
    # GIVEN the project's environment WHEN agentturn is imported THEN it is the installed wheel, whose
    # package carries the handler sources the construct bundles
    located = subprocess.run(
        [team_environment.python, "-c", "import agentturn, agentturn._sources as s; print(agentturn.__file__); "
         "print(s.handler_sources())"],
        capture_output=True, text=True, check=True, cwd=team_environment.project, env={"PATH": os.environ["PATH"]},
    ).stdout.split()  # fmt: skip
    assert not located[0].startswith(str(ROOT)), located
    assert located[0].startswith(str(team_environment.python.parent.parent)), located
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


def test_agentturn_dev_serves_the_teams_agent_as_deployed(
    team_project: TeamProject, tmp_path: Path, browser: Any
) -> None:
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
        # AND the console shows the team's agent and its form's title, with no trace of the demo model
        _, info = server.request("GET", "/_dev/info")
        assert info["agents"] == ["access-desk"] and info["model"] == "own", info
        _console_shows_the_teams_agent(browser, server.url)
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


def _console_shows_the_teams_agent(browser: Any, url: str) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(base_url=url, viewport={"width": 1100, "height": 900})
    try:
        page = context.new_page()
        page.goto("/#c=dev-1")
        # The picker holds the demo's agents until /_dev/info is read, then only the team's.
        expect(page.locator("#agent option")).to_have_count(1, timeout=15_000)
        expect(page.locator("#agent")).to_have_value("access-desk")
        expect(page.get_by_role("group", name="Access request")).to_be_visible(timeout=15_000)
        expect(page.locator("#demo-badge")).to_be_hidden()
        expect(page.locator("#demo-banner")).to_be_hidden()
        assert "refund order" not in page.locator("body").inner_text()
    finally:
        context.close()


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


def test_synth_prints_no_node_banner(team_project: TeamProject) -> None:
    # GIVEN `npx cdk synth` on Node 20 (or 18, or a deprecated 22) with no JSII_SILENCE_* variable set by anyone
    # THEN neither jsii's end-of-life banner nor its raw b'...' relay lines reach the team's terminal
    assert "end-of-life" not in team_project.synth_output, team_project.synth_output
    assert "b'!!" not in team_project.synth_output, team_project.synth_output


def test_the_readmes_construct_snippet_is_an_app_the_cdk_cli_synthesises(team_project: TeamProject) -> None:
    # GIVEN the README's construct snippet saved as the project's app (beside the one `agentturn init` wrote),
    # and the project's synthesised bundles (the same sources: the CDK reuses them rather than bundling again)
    readme = (ROOT / "README.md").read_text()
    (snippet,) = [block for block in re.findall(r"^```python\n(.*?)^```", readme, re.M | re.S) if "AgentTurn(" in block]
    (team_project.root / "readme_app.py").write_text(snippet)
    out = team_project.root / "cdk.readme.out"
    shutil.copytree(team_project.cdk_out, out, copy_function=os.link)
    target = local_target()
    # WHEN the CDK CLI synthesises it
    synth = subprocess.run(
        ["npx", "cdk", "synth", "--quiet", "--app", "python3 readme_app.py", "--output", str(out),
         "-c", f"agentturn:lambdaPython={target.python_version}",
         "-c", f"agentturn:lambdaArchitecture={target.architecture}"],
        cwd=team_project.root, env={**_team_env(team_project)}, capture_output=True, text=True, timeout=900,
        check=False,
    )  # fmt: skip
    # THEN it succeeds quietly and the template has the snippet's worker memory and its grant
    assert synth.returncode == 0, synth.stdout + synth.stderr
    assert "end-of-life" not in synth.stderr and "b'!!" not in synth.stderr, synth.stderr
    template = json.loads((out / "AccessDesk.template.json").read_text())
    (worker,) = [
        r for key, r in template["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function" and key.startswith("AgentTurnWorkerFunction")
    ]  # fmt: skip
    assert worker["Properties"]["MemorySize"] == 2048
    assert "dynamodb:PutItem" in json.dumps(template)


def _team_env(team_project: TeamProject) -> dict[str, str]:
    environment = team_project.python.parent.parent
    env = {key: value for key, value in os.environ.items() if key not in NODE_WARNINGS_SILENCED and key != "PYTHONPATH"}
    return {
        **env,
        "PATH": f"{environment / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(environment),
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


#: A Python that is not the one running these tests and has no packages for them (Debian's own, when present).
_OTHER_PYTHON: Final = Path("/usr/bin/python3")


@pytest.mark.skipif(
    not _OTHER_PYTHON.exists() or Path(sys.executable).resolve() == _OTHER_PYTHON.resolve(),
    reason="needs a second Python 3.11 whose own packages are not the tests' (Debian's /usr/bin/python3)",
)
def test_the_team_project_test_passes_inside_a_fresh_virtual_environment(tmp_path: Path) -> None:
    # GIVEN a fresh virtual environment of another Python (Debian's, whose setuptools cannot build a wheel by
    # itself and which has no pytest), given the tests' packages the way `pip install -e '.[dev]'` gives them
    # (offline: a path file to this interpreter's folders, plus this checkout installed editable)
    if sys.version_info[:2] != tuple(
        int(part) for part in subprocess.check_output([_OTHER_PYTHON, "-c", "import sys; print(*sys.version_info[:2])"],
                                                      text=True).split()
    ):  # fmt: skip
        pytest.skip(f"{_OTHER_PYTHON} is not Python {sys.version_info[0]}.{sys.version_info[1]}")
    fresh = tmp_path / "venv"
    subprocess.run([_OTHER_PYTHON, "-m", "venv", "--without-pip", fresh], check=True, timeout=120)
    (purelib,) = (fresh / "lib").glob("python3.*/site-packages")
    (purelib / "_tests.pth").write_text("".join(f"{folder}\n" for folder in team_env.package_folders()))
    python = fresh / "bin" / "python"
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")},
        "PATH": f"{fresh / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(fresh),
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    _run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-e", ROOT], cwd=tmp_path, env=env)
    # WHEN the team-project test runs in it, as `bash scripts/test` runs it there (its environment's python)
    result = subprocess.run(
        ["bash", "scripts/test", "tests/infra/test_team_project.py", "-q", "-p", "no:cacheprovider",
         "-k", "comes_from_the_wheel or pins_the_cdk_cli"],
        cwd=ROOT, env={**env, "PYTHON": str(python), "AGENTTURN_TEST_SKIP_INSTALL": "1"},
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    # THEN it passes: the project's environment was built from that interpreter's packages, not Debian's
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "2 passed" in result.stdout, result.stdout[-2000:]
