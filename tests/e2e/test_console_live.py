"""The console's live timeline in Chromium: streamed text as it arrives, what the turn is doing, and polling
when the socket is killed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.e2e.agents import SLOW_ANSWER, SLOW_SUPPORT_ID, SLOW_WRITER_ID
from tests.e2e.conftest import open_console, send

TICKET = "create a high priority login incident ticket"


def test_streamed_text_appears_as_it_arrives_then_the_saved_reply(page: Any, artifacts: Path) -> None:
    # GIVEN the console subscribed to a new conversation with an agent that streams slowly
    open_console(page, SLOW_WRITER_ID)
    expect(page.locator("body")).to_have_attribute("data-live", "live")

    # WHEN the person sends a message
    send(page, "write something")

    # THEN their message shows at once (the timeline gets it with the turn's first save, after the model's
    # reply), the turn is shown thinking, and part of the answer shows before all of it
    expect(page.get_by_test_id("user-echo")).to_contain_text("write something")
    live_text = page.get_by_test_id("live-text")
    expect(live_text).to_have_text(re.compile(r"^Streaming, one piece"))
    partial = live_text.text_content() or ""
    assert SLOW_ANSWER.startswith(partial)
    assert len(partial) < len(SLOW_ANSWER), "the text arrived all at once"
    expect(page.get_by_test_id("live-phase")).to_have_text("thinking…")
    # AND the status line says the same, not "queued"
    expect(page.locator("#turn-status")).to_have_text("The agent is thinking…")
    page.screenshot(path=str(artifacts / "live-streaming.png"), full_page=True)
    # AND then the saved reply takes the preview's place
    expect(page.get_by_test_id("ai-message")).to_contain_text(SLOW_ANSWER[-40:])
    expect(page.get_by_test_id("live-stream")).to_be_hidden()
    expect(page.get_by_test_id("user-message")).to_contain_text("write something")
    expect(page.get_by_test_id("user-echo")).to_be_hidden()
    expect(page.locator("#turn-status")).to_have_attribute("data-status", "COMPLETED")


def test_a_tool_turn_shows_running_then_its_form(page: Any) -> None:
    # GIVEN the console live on the support agent, whose model and tool each take longer than the feed's status
    # window (a phase over sooner is never pushed: it would be a flicker)
    open_console(page, SLOW_SUPPORT_ID)
    expect(page.locator("body")).to_have_attribute("data-live", "live")
    seen: list[str] = []

    def record(text: str) -> None:  # Playwright exposes Python functions, not builtins such as list.append
        seen.append(text)

    page.expose_function("recordPhase", record)
    page.evaluate(
        """() => {
             const phase = document.querySelector('[data-testid=live-phase]');
             new MutationObserver(() => phase.textContent && window.recordPhase(phase.textContent))
               .observe(phase, {childList: true, characterData: true, subtree: true});
           }"""
    )

    # WHEN the person asks for a ticket (the tool asks for a form)
    send(page, TICKET)

    # THEN the form arrives, and on the way the page showed the turn thinking and running the tool
    expect(page.get_by_test_id("form-card")).to_have_count(1)
    expect(page.get_by_test_id("live-stream")).to_be_hidden()
    assert "thinking…" in seen
    assert "running create_support_ticket…" in seen


def test_what_the_previous_users_channel_still_says_is_not_drawn_for_the_next(page: Any) -> None:
    # GIVEN the default user live on a conversation, and the digest that names the next channel held, so the
    # page stays subscribed to the default user's channel after the switch
    page.add_init_script(
        """(() => {
             const digest = crypto.subtle.digest.bind(crypto.subtle);
             window.gate = null;
             crypto.subtle.digest = (...args) => (window.gate || Promise.resolve()).then(() => digest(...args));
           })()"""
    )
    conversation = open_console(page, SLOW_WRITER_ID)
    expect(page.locator("body")).to_have_attribute("data-live", "live")
    page.evaluate("() => { window.gate = new Promise((open) => (window.openGate = open)); }")
    page.locator(".settings summary").click()
    page.locator("#user").select_option("alice")
    expect(page.locator("#empty")).to_be_visible()

    # WHEN a turn of the default user's streams on that channel
    with page.expect_console_message(lambda message: "dropped a live message" in message.text):
        started = page.request.post(
            f"/conversations/{conversation}/turns", data={"input": "write something", "agentId": SLOW_WRITER_ID}
        )
        assert started.ok, started.text()

    # THEN alice's view shows none of it
    expect(page.get_by_test_id("live-stream")).to_be_hidden()
    expect(page.get_by_test_id("live-text")).to_have_text("")
    page.evaluate("() => window.openGate()")
    expect(page.locator("#empty")).to_be_visible()


def test_when_the_socket_is_killed_the_console_polls_and_reconnects(page: Any) -> None:
    # GIVEN a console whose live socket the network kills as soon as it opens, for the first three tries
    attempts: list[int] = []

    def kill(ws: Any) -> None:
        attempts.append(1)
        if len(attempts) <= 3:
            ws.close()
        else:
            ws.connect_to_server()

    page.route_web_socket(re.compile(r".*/event/realtime$"), kill)
    open_console(page, "support-agent")

    # WHEN the person asks for a ticket while the socket is down
    expect(page.locator("body")).to_have_attribute("data-live", re.compile("down|connecting"))
    send(page, TICKET)

    # THEN polling still brings the form
    expect(page.get_by_test_id("form-card")).to_have_count(1)
    # AND the socket comes back with backoff, and the page is live again
    expect(page.locator("body")).to_have_attribute("data-live", "live", timeout=30_000)
    assert len(attempts) >= 4
