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
