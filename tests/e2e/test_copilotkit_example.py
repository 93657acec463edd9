"""CopilotKit in front of agentturn (``/examples/copilotkit.html``): CopilotKit's own headless React hooks
(``@copilotkit/react-core/v2/headless``: ``useAgent``, ``useInterrupt``, which reads AG-UI's standard interrupts and
answers them with one spec ``resume`` array) on an ``HttpAgent`` against the real ``agentturn dev``, in Chromium. A
form card and approvals are rendered from interrupts and answered, and the same pending card is back after a page
reload (CopilotKit keeps nothing: agentturn does). Screenshots in ``.artifacts/e2e/copilotkit/``."""

from __future__ import annotations

import uuid
from typing import Any

from playwright.sync_api import expect

from tests.e2e.agents import DECISIONS_AGENT_ID
from tests.e2e.conftest import ARTIFACTS

SHOTS = ARTIFACTS / "copilotkit"


def _open(page: Any, agent: str) -> str:
    thread = f"ck-e2e-{uuid.uuid4().hex[:8]}"
    page.goto(f"/examples/copilotkit.html?agent={agent}&thread={thread}")
    expect(page.locator("#status")).to_have_text("idle")
    return thread


def _send(page: Any, text: str) -> None:
    page.locator("#input").fill(text)
    page.locator("#composer button[type=submit]").click()


def test_a_form_interrupt_is_a_copilotkit_card_that_survives_a_reload(page: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    # GIVEN the CopilotKit page on the support agent
    _open(page, "support-agent")
    # WHEN the user asks for a ticket the tool needs details for
    _send(page, "create a high priority login incident ticket")
    card = page.locator("form.card[data-reason=input_required]")
    # THEN useInterrupt renders the form card from the interrupt's responseSchema
    expect(card).to_have_count(1)
    expect(card.locator("h3")).to_contain_text("Incident details")
    interrupt = card.get_attribute("data-interrupt")
    page.screenshot(path=str(SHOTS / "form-card.png"), full_page=True)
    # WHEN the page is reloaded (a new CopilotKit that knows only the thread)
    page.reload()
    card = page.locator("form.card[data-reason=input_required]")
    # THEN the same card is back
    expect(card).to_have_attribute("data-interrupt", interrupt or "")
    expect(page.locator("#status")).to_have_text("waiting for you")
    page.screenshot(path=str(SHOTS / "form-card-after-reload.png"), full_page=True)
    # AND answering it through CopilotKit's resume finishes the turn with the submitted values
    card.locator("input[name=affectedSystem]").fill("SSO")
    card.locator("select[name=impactScope]").select_option("ALL_USERS")
    card.locator("button[value=submit]").click()
    expect(page.locator("li.assistant").last).to_contain_text("affected system SSO, impact 全部用户 (All users)")
    expect(page.locator("#status")).to_have_text("idle")
    expect(page.locator("form.card")).to_have_count(0)
    page.screenshot(path=str(SHOTS / "form-answered.png"), full_page=True)


def test_two_approvals_answered_approve_with_edits_and_reject(page: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    _open(page, DECISIONS_AGENT_ID)
    _send(page, "refund both orders")
    cards = page.locator("form.card[data-reason=tool_call]")
    expect(cards).to_have_count(2)
    expect(cards.nth(0).locator("h3")).to_have_text("Refund 10 for order O-1?")
    page.screenshot(path=str(SHOTS / "approvals.png"), full_page=True)
    # the first approved with edited arguments: CopilotKit holds it until every interrupt has its answer
    cards.nth(0).locator("textarea").fill('{"orderId": "O-1", "amount": 7}')
    cards.nth(0).locator("button[value=approve]").click()
    expect(page.locator("form.card .answered")).to_have_count(1)
    page.locator("form.card[data-reason=tool_call]").nth(1).locator("button[value=reject]").click()
    answer = page.locator("li.assistant").last
    expect(answer).to_contain_text("O-1")
    expect(answer).to_contain_text("rejected")
    # the edited call ran with the edit; the rejected one did not run
    expect(page.locator("li.tool", has_text='"refunded":"O-1","amount":7')).to_have_count(1)
    expect(page.locator("li.tool", has_text="rejected in the CopilotKit example")).to_have_count(1)
    expect(page.locator("#status")).to_have_text("idle")
    page.screenshot(path=str(SHOTS / "approvals-answered.png"), full_page=True)
