"""The two example pages in front of the real ``agentturn dev``, in Chromium, with the same checks:

- ``/examples/agui.html``: the official ``@ag-ui/client``;
- ``/examples/copilotkit.html``: CopilotKit's own headless React hooks (``@copilotkit/react-core/v2/headless``:
  ``useAgent``, ``useInterrupt``, which reads AG-UI's standard interrupts and answers them with one spec
  ``resume`` array) on an ``HttpAgent``.

A form card and approvals are rendered from interrupts and answered through ``resume``, and the same pending card
is back after a page reload (the client keeps nothing: agentturn does). Screenshots in
``.artifacts/e2e/<example>/``."""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.agents import DECISIONS_AGENT_ID
from tests.e2e.conftest import ARTIFACTS


@dataclass(frozen=True)
class Example:
    name: str
    #: how the page names itself in the reason it gives a rejected call
    rejected_in: str

    @property
    def shots(self) -> Path:
        shots = ARTIFACTS / self.name
        shots.mkdir(parents=True, exist_ok=True)
        return shots

    def open(self, page: Any, agent: str) -> None:
        page.goto(f"/examples/{self.name}.html?agent={agent}&thread={self.name}-e2e-{uuid.uuid4().hex[:8]}")
        expect(page.locator("#status")).to_have_text("idle")


EXAMPLES = [
    pytest.param(Example("agui", "rejected in the AG-UI example"), id="ag-ui-client"),
    pytest.param(Example("copilotkit", "rejected in the CopilotKit example"), id="copilotkit"),
]


def _send(page: Any, text: str) -> None:
    page.locator("#input").fill(text)
    page.locator("#composer button[type=submit]").click()


@pytest.mark.parametrize("example", EXAMPLES)
def test_a_form_interrupt_is_a_card_that_survives_a_reload_and_is_answered(page: Any, example: Example) -> None:
    # GIVEN the example page on the support agent
    example.open(page, "support-agent")
    # WHEN the user asks for a ticket the tool needs details for
    _send(page, "create a high priority login incident ticket")
    card = page.locator("form.card[data-reason=input_required]")
    # THEN the form card is rendered from the interrupt's responseSchema
    expect(card).to_have_count(1)
    expect(card.locator("h3")).to_contain_text("Incident details")
    interrupt = card.get_attribute("data-interrupt")
    page.screenshot(path=str(example.shots / "form-card.png"), full_page=True)
    # WHEN the page is reloaded (a new client that knows only the thread)
    page.reload()
    # THEN the same card is back
    expect(page.locator("#status")).to_have_text("waiting for you")
    card = page.locator("form.card[data-reason=input_required]")
    expect(card).to_have_attribute("data-interrupt", interrupt or "")
    page.screenshot(path=str(example.shots / "form-card-after-reload.png"), full_page=True)
    # AND answering it through resume finishes the turn with the submitted values
    card.locator("input[name=affectedSystem]").fill("SSO")
    card.locator("select[name=impactScope]").select_option("ALL_USERS")
    card.locator("button[value=submit]").click()
    expect(page.locator("li.assistant").last).to_contain_text("affected system SSO, impact 全部用户 (All users)")
    expect(page.locator("#status")).to_have_text("idle")
    expect(page.locator("form.card")).to_have_count(0)
    page.screenshot(path=str(example.shots / "form-answered.png"), full_page=True)


@pytest.mark.parametrize("example", EXAMPLES)
def test_two_approvals_answered_approve_with_edits_and_reject(page: Any, example: Example) -> None:
    # GIVEN the example page on the agent that asks for two refunds at once
    example.open(page, DECISIONS_AGENT_ID)
    _send(page, "refund both orders")
    cards = page.locator("form.card[data-reason=tool_call]")
    expect(cards).to_have_count(2)
    expect(cards.nth(0).locator("h3")).to_have_text("Refund 10 for order O-1?")
    page.screenshot(path=str(example.shots / "approvals.png"), full_page=True)
    # WHEN the first is approved with edited arguments (held until every interrupt has its answer)
    cards.nth(0).locator("textarea").fill('{"orderId": "O-1", "amount": 7}')
    cards.nth(0).locator("button[value=approve]").click()
    expect(page.locator("form.card .answered")).to_have_count(1)
    # AND the second rejected
    page.locator("form.card[data-reason=tool_call]").nth(1).locator("button[value=reject]").click()
    answer = page.locator("li.assistant").last
    expect(answer).to_contain_text("O-1")
    expect(answer).to_contain_text("rejected")
    # THEN the edited call ran with the edit; the rejected one did not run
    expect(page.locator("li.tool", has_text='"refunded":"O-1","amount":7')).to_have_count(1)
    expect(page.locator("li.tool", has_text=example.rejected_in)).to_have_count(1)
    expect(page.locator("#status")).to_have_text("idle")
    page.screenshot(path=str(example.shots / "approvals-answered.png"), full_page=True)


def test_the_agui_example_is_built_from_the_pinned_client() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        ["node", str(root / "shared/agentturn/web/src/build_examples.mjs"), "--check"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
