"""``agentturn demo``: a person answers the form at the prompt and sees the ticket created."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from agentturn.cli import main, play


def answers(*lines: str) -> Iterator[str]:
    yield from lines


def test_support_demo_asks_for_the_form_and_creates_the_ticket() -> None:
    # GIVEN a person who first leaves a required field empty, then answers correctly
    typed = answers("", "ALL_USERS", "统一登录系统", "ALL_USERS")
    out = io.StringIO()
    # WHEN the support scenario is played
    turn = play("support", ask=lambda prompt: next(typed), out=out)
    # THEN the server-side validation explained the problem, and after the second try the ticket exists
    text = out.getvalue()
    assert "/affectedSystem: 受影响系统 (Affected system) is required." in text
    assert turn.status.value == "COMPLETED"
    assert "Ticket TICKET-" in text and "统一登录系统" in text


def test_refund_demo_rejection_runs_no_refund() -> None:
    typed = answers("n", "too much")
    out = io.StringIO()
    turn = play("refund", ask=lambda prompt: next(typed), out=out)
    assert turn.status.value == "COMPLETED"
    assert '"status": "rejected"' in out.getvalue()
    assert "Refund REFUND-" not in out.getvalue()


def test_main_returns_130_when_input_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a terminal whose input is closed WHEN the demo asks for the form THEN it stops cleanly with 130
    def closed(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", closed)
    assert main(["demo", "meeting"]) == 130


def test_demo_runs_on_the_model_agentturn_model_chooses(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN AGENTTURN_MODEL pointing at an OpenAI-compatible endpoint (the adapter is replaced by a scripted
    # model that answers as the chosen one would, so nothing leaves the machine)
    from agentturn import AiMessage, ScriptedChatModel

    chosen: list[dict[str, str]] = []

    def from_env() -> ScriptedChatModel:
        import os

        chosen.append({k: v for k, v in os.environ.items() if k.startswith("AGENTTURN_")})
        return ScriptedChatModel(lambda request: AiMessage(content="hello from the configured model"))

    monkeypatch.setenv("AGENTTURN_MODEL", "openai")
    monkeypatch.setattr("agentturn.models.chat_model_from_env", from_env)
    # WHEN the demo is played
    assert main(["demo", "meeting"]) == 0
    # THEN the configured model answered, not the demo model
    assert chosen and chosen[0]["AGENTTURN_MODEL"] == "openai"
    assert "hello from the configured model" in capsys.readouterr().out


def test_demo_refuses_a_model_setting_it_cannot_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTTURN_MODEL", "openai")
    monkeypatch.delenv("AGENTTURN_OPENAI_MODEL", raising=False)
    assert main(["demo", "support"]) == 2
    assert "AGENTTURN_OPENAI_MODEL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("agents", "model", "shown"),
    [
        (None, None, "demo"),  # the demo agents run the demo model: the console shows its badge and prompts
        ("access_desk.agents:build", None, "own"),  # a team's agents pick their model: no demo badge or prompts
        ("access_desk.agents:build", "bedrock:anthropic.claude", "bedrock:anthropic.claude"),
    ],
)
def test_agentturn_dev_tells_the_console_the_demo_model_only_for_the_demo_agents(
    monkeypatch: pytest.MonkeyPatch, agents: str | None, model: str | None, shown: str
) -> None:
    from agentturn.local.server import DevConfig, DevServer

    for name, value in (("AGENTTURN_AGENTS", agents), ("AGENTTURN_MODEL", model)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert DevServer(DevConfig(agents=agents)).model == shown
