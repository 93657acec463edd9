"""`agentturn init`: names, refusals and the files written (pure: no install, no AWS)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from agentturn.cli import main
from agentturn.cli.scaffold import ProjectNames, ScaffoldError, init_project


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
    assert "agentturn dev --agents helpdesk.agents:build --code helpdesk" in out
    assert main(["init", str(tmp_path / "helpdesk")]) == 2
    assert "not an empty folder" in capsys.readouterr().err
