"""The inbox against the dev server: a refund that waits for two of finance, approved by each from their inbox
(the dev users ``fin-ana`` and ``fin-ben``, whose tokens carry ``cognito:groups``), resumes the requester's turn."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.e2e.agents import FINANCE_AGENT_ID
from tests.e2e.conftest import axe_violations, open_console, send


def _as(page: Any, user: str, conversation: str) -> None:
    """The console reloaded as ``user`` (its user switch keeps the choice in localStorage)."""
    page.evaluate("(user) => localStorage.setItem('agentturn.devUser', user)", user)
    page.goto(f"/?agent={FINANCE_AGENT_ID}#c={conversation}")
    page.reload()  # a goto that changes only the hash would not load the page again
    expect(page.locator("#agent")).to_have_value(FINANCE_AGENT_ID)


def _approve_from_inbox(page: Any, title: str) -> None:
    item = page.get_by_test_id("inbox-item").filter(has_text=title)
    expect(item).to_be_visible()
    expect(item).to_contain_text("asked by alice")
    item.get_by_role("button", name="Approve").click()
    expect(page.locator("#inbox-status")).to_contain_text("Approved")


def test_two_of_finance_approve_from_their_inbox_and_the_requester_sees_who(page: Any, artifacts: Path) -> None:
    # GIVEN alice's refund, waiting for two of finance
    conversation = open_console(page, FINANCE_AGENT_ID)
    _as(page, "alice", conversation)
    title = f"refund order O-7 ({conversation})"
    send(page, title)
    card = page.get_by_test_id("approval-card")
    expect(card).to_be_visible()
    expect(card).to_contain_text("waiting for finance (0 of 2)")

    # WHEN the first approver opens the console THEN her inbox shows the card from alice's conversation
    _as(page, "fin-ana", "inbox-ana")
    expect(page.get_by_test_id("inbox-count")).to_have_text(re.compile(r"^[1-9]"))
    page.screenshot(path=str(artifacts / "inbox-approver-1.png"), full_page=True)
    assert axe_violations(page) == []
    _approve_from_inbox(page, title)

    # THEN alice's card reads "(1 of 2)"
    _as(page, "alice", conversation)
    expect(page.get_by_test_id("approval-card")).to_contain_text("waiting for finance (1 of 2)")
    page.screenshot(path=str(artifacts / "inbox-requester-1-of-2.png"), full_page=True)

    # WHEN the second approves THEN alice's turn resumes, and her page shows who approved
    _as(page, "fin-ben", "inbox-ben")
    _approve_from_inbox(page, title)
    _as(page, "alice", conversation)
    expect(page.get_by_test_id("ai-message").filter(has_text="Refunded")).to_be_visible()
    card = page.get_by_test_id("approval-card")
    expect(card).to_contain_text("fin-ana")
    expect(card).to_contain_text("fin-ben")
    page.screenshot(path=str(artifacts / "inbox-requester-approved.png"), full_page=True)
    assert axe_violations(page) == []
