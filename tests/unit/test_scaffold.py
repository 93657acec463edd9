"""`agentturn init`: names, refusals and the files written (pure: no install, no AWS)."""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

from agentturn import AiMessage, InMemoryChatMemory, ResumeCommand, Runner, TurnStatus
from agentturn.cli import main
from agentturn.cli.scaffold import ProjectNames, ScaffoldError, init_project, next_steps

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "project", "package", "stack"),
    [
        ("access-desk", "access-desk", "access_desk", "AccessDesk"),
        ("Support Bot 2", "support-bot-2", "support_bot_2", "SupportBot2"),
        ("billing_agents", "billing-agents", "billing_agents", "BillingAgents"),
    ],
)
def test_names_follow_the_folder(name: str, project: str, package: str, stack: str) -> None:
    assert ProjectNames.from_name(name) == ProjectNames(project=project, package=package, stack=stack)


@pytest.mark.parametrize("name", ["2fast", "---", "class", "agentturn", "tests"])
def test_names_that_make_no_usable_package_are_refused(name: str) -> None:
    with pytest.raises(ScaffoldError):
        ProjectNames.from_name(name)


def test_a_project_is_written_with_no_placeholder_left(tmp_path: Path) -> None:
    # GIVEN an empty target WHEN the project is written
    written = init_project(tmp_path / "access-desk")
    # THEN it holds the agents, tools, tests, CDK app and README, every Python file parses, and no token stayed
    names = {path.relative_to(tmp_path / "access-desk").as_posix() for path in written}
    assert {
        "access_desk/agents.py",
        "access_desk/tools.py",
        "tests/test_agents.py",
        "app.py",
        "cdk.json",
        "pyproject.toml",
        "README.md",
        "requirements.txt",
        ".gitignore",
        "package.json",
    } <= names
    for path in written:
        text = path.read_text()
        for token in ("__project__", "__package__", "__stack__", "__agentturn_version__", "__cdk_cli_version__"):
            assert token not in text, (path, token)
        if path.suffix == ".py":
            ast.parse(text, filename=str(path))
    app = (tmp_path / "access-desk" / "app.py").read_text()
    assert 'agents="access_desk.agents:build"' in app
    assert json.loads((tmp_path / "access-desk" / "cdk.json").read_text())["app"] == "python3 app.py"


def test_the_generated_cdk_json_carries_this_repositorys_feature_flags(tmp_path: Path) -> None:
    # The construct is tested under these flags; a team's app must synthesise it under the same ones.
    init_project(tmp_path / "p")
    ours = json.loads((Path(__file__).resolve().parents[2] / "cdk.json").read_text())["context"]
    theirs = json.loads((tmp_path / "p" / "cdk.json").read_text())["context"]
    assert theirs == ours


def test_a_folder_that_holds_anything_is_left_untouched(tmp_path: Path) -> None:
    target = tmp_path / "existing"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(ScaffoldError, match="not an empty folder"):
        init_project(target)
    assert [p.name for p in target.iterdir()] == ["notes.txt"]


def test_the_command_reports_what_to_run_next(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "helpdesk")]) == 0
    out = capsys.readouterr().out
    assert "  agentturn dev --agents helpdesk.agents:build --code helpdesk\n" in out
    assert main(["init", str(tmp_path / "helpdesk")]) == 2
    assert "not an empty folder" in capsys.readouterr().err


def _commands(markdown: str, after: str) -> list[str]:
    """The commands of the first ```bash block of ``markdown`` that follow the line starting with ``after``,
    without their comments."""
    block = re.search(r"```bash\n(.*?)```", markdown[markdown.index(after) if after else 0 :], re.S)
    assert block is not None
    lines = [line.split(" # ")[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def test_init_prints_the_steps_the_readme_and_the_projects_readme_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a project written by `agentturn init access-desk`
    assert main(["init", str(tmp_path / "access-desk")]) == 0
    printed = [line.strip() for line in capsys.readouterr().out.splitlines()[1:]]
    steps = next_steps(ProjectNames.from_name("access-desk"))
    # THEN it prints `cd` and the steps; this README's "Your own agents" runs exactly them after `agentturn init`,
    # in the environment agentturn was installed in (no new venv, no install of agentturn from an index)
    assert printed == [f"cd {tmp_path / 'access-desk'}", *steps]
    ours = _commands((ROOT / "README.md").read_text(), "## Your own agents")
    after_init = ours[ours.index("agentturn init access-desk && cd access-desk") + 1 :]
    assert after_init[: len(steps)] == steps
    assert not any("venv" in step or "agentturn[" in step for step in after_init)
    # AND the project's README gives the same steps
    assert _commands((tmp_path / "access-desk" / "README.md").read_text(), "") == steps


def test_the_scaffold_uses_the_names_the_readme_teaches(tmp_path: Path) -> None:
    written = init_project(tmp_path / "access-desk")
    code = "\n".join(path.read_text() for path in written if path.suffix == ".py")
    assert "require_form(ACCESS_REQUEST_FORM)" in code
    for old in ("FormRequired", "submitted_form_data", "correlation_id", 'metadata["formKey"]', "user_input("):
        assert old not in code, old


def test_the_scaffolds_tool_completes_when_an_all_optional_form_is_submitted_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a scaffolded project whose team made every field of the access form optional
    init_project(tmp_path / "optional-desk")
    tools = tmp_path / "optional-desk" / "optional_desk" / "tools.py"
    source = tools.read_text()
    assert '"required": ["system", "reason"],' in source
    tools.write_text(source.replace('"required": ["system", "reason"],', ""))
    monkeypatch.syspath_prepend(str(tmp_path / "optional-desk"))
    agents = importlib.import_module("optional_desk.agents")
    tools_module = importlib.import_module("optional_desk.tools")
    ledger = tools_module.AccessLedger()
    runner = Runner(chat_memory=InMemoryChatMemory(), agents=agents.build(ledger=ledger))
    waiting = runner.run(agents.build(ledger=ledger)[0], "c-1", "I need access to a system")
    assert waiting.status is TurnStatus.WAITING_FOR_USER and waiting.suspension is not None
    assert waiting.suspension.form_key == "access_request_details"
    # WHEN the person submits it empty
    done = runner.resume(waiting.id, ResumeCommand.submit_form(waiting.suspension.action_id, {}))
    # THEN the tool ran with the empty answer (no second form, no FAILED form_required_again) and the agent
    # answers in words, not with a dict's repr
    assert done.status is TurnStatus.COMPLETED, done.error
    (record,) = ledger.records.values()
    assert record == {"id": record["id"], "user": "me"}
    assert done.final_output == f"Your request for access to the system is recorded as {record['id']}."
    assert isinstance(done.messages[-1], AiMessage) and "{" not in done.final_output
