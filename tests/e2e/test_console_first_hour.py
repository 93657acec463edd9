"""The console as a newcomer reads it (issue 32): approval cards in people's words, settled cards that say what
became of them, a message box that says when it cannot send, a conversations list with days and a "waiting for
you" marker, a batch of tool results named and in the cards' order, a batch that opens at its first card, no
stale "running …" line, and a phone layout whose buttons stay on their lines.

"Canned" tests serve a fixed timeline through Playwright's routing (``Canned`` of test_console_product); the
others run against the real ``agentturn dev``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import DevProcess, axe_violations, open_console, send
from tests.e2e.test_console_product import Canned, _approval, ai, user

TICKET = "create a high priority login incident ticket"
#: A tool's parameters as a model's tool declares them: keys, no titles.
UNTITLED_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"orderId": {"type": "string"}, "amount": {"type": "number", "minimum": 0}},
    "required": ["orderId", "amount"],
}


def _pending(number: int, schema: dict[str, Any] = UNTITLED_PARAMETERS) -> dict[str, Any]:
    return {
        "type": "TOOL_APPROVAL",
        "actionId": f"call-{number}",
        "message": f"Refund {10 * number} for O-{number}?",
        "toolName": "issue_refund",
        "inputTarget": "TOOL",
        "arguments": {"orderId": f"O-{number}", "amount": 10 * number},
        "argumentsFingerprint": f"fp-{number}",
        "parametersSchema": schema,
        "expiresAt": None,
    }


def _card(page: Any, number: int) -> Any:
    return page.locator(f"[data-testid=approval-card][data-message-id='t1:approval:call-{number}']")


def _waiting_on(numbers: list[int], conversation: str, history: list[dict[str, Any]] | None = None) -> Canned:
    return Canned(
        conversation,
        messages=[*(history or [user(0, "refund the orders")]), *[_approval("PENDING", n) for n in numbers]],
        turn={
            "turnId": "t1",
            "agentId": "assistant",
            "status": "WAITING_FOR_APPROVAL",
            "version": 4,
            "pendingActions": [_pending(n) for n in numbers],
            "suspension": _pending(numbers[0]),
        },
        active="t1",
    )


def _no_blocking_a11y(page: Any, state: str, selector: str | None = None) -> None:
    violations = axe_violations(page, selector)
    assert violations == [], f"{state}: {json.dumps(violations, indent=1)}"


# --------------------------------------------------------------------------------------------- approvals


def test_an_approval_card_names_fields_as_people_do_and_rejects_only_when_asked_canned(
    page: Any, artifacts: Path
) -> None:
    # GIVEN a refund waiting for a decision, whose tool names its parameters by keys only (no titles)
    canned = _waiting_on([1], "canned-labels")
    canned.install(page)
    open_console(page, "assistant", conversation=canned.conversation)
    card = _card(page, 1)
    expect(card.get_by_role("button", name="Edit, then approve")).to_be_visible()
    # THEN the summary reads "Order ID" and "Amount", never the keys
    fields = card.get_by_test_id("approval-fields")
    expect(fields.locator("dt")).to_have_text(["Order ID", "Amount"])
    # ... and no reason box is open before the person chooses to reject
    expect(card.get_by_role("textbox")).to_have_count(0)
    card.screenshot(path=str(artifacts / "first-hour-approval-pending.png"))

    # WHEN they edit: THEN the form's fields are labelled the same way
    card.get_by_role("button", name="Edit, then approve").click()
    expect(card.get_by_label("Order ID")).to_have_value("O-1")
    expect(card.get_by_label("Amount")).to_have_value("10")
    expect(card.locator("label")).not_to_contain_text(["orderId"])
    card.get_by_label("Amount").fill("-1")
    card.get_by_role("button", name="Approve with these values").click()
    expect(card).to_contain_text("Amount must be at least 0.")
    card.get_by_role("button", name="Back").click()

    # WHEN they choose to reject: THEN the reason box opens, focused, and the reason goes with the rejection
    card.get_by_role("button", name="Reject").click()
    reason = card.get_by_label(re.compile("Why not"))
    expect(reason).to_be_focused()
    _no_blocking_a11y(page, "rejecting with a reason", "[data-testid=approval-card]")
    card.screenshot(path=str(artifacts / "first-hour-approval-rejecting.png"))
    reason.fill("already refunded")
    card.get_by_role("button", name="Reject").click()
    expect(card).to_contain_text("Rejected. The agent continues")
    assert canned.answers == [("call-1/reject", {"reason": "already refunded"})]


def test_settled_cards_say_what_became_of_them_in_their_own_colour_canned(page: Any, artifacts: Path) -> None:
    # GIVEN one card in each state a decision can end in, beside one still waiting
    canned = Canned(
        "canned-settled",
        messages=[
            user(0, "refund four orders"),
            _approval("APPROVED", 1),
            _approval("REJECTED", 2),
            _approval("RESPONDED", 3, response="Refunded by phone."),
            _approval("CANCELLED", 4),
            _approval("PENDING", 5),
        ],
        turn={
            "turnId": "t1",
            "agentId": "assistant",
            "status": "WAITING_FOR_APPROVAL",
            "version": 6,
            "pendingActions": [_pending(5)],
            "suspension": _pending(5),
        },
        active="t1",
    )
    canned.install(page)
    open_console(page, "assistant", conversation=canned.conversation)
    expect(_card(page, 5).get_by_role("button", name="Edit, then approve")).to_be_visible()
    # THEN only the waiting card asks for a decision; the others say it was made (or is not needed any more)
    expect(_card(page, 5).locator(".card-kind")).to_have_text("Needs your decision")
    for number in (1, 2, 3):
        expect(_card(page, number).locator(".card-kind")).to_have_text("Decided")
    expect(_card(page, 4).locator(".card-kind")).to_have_text("No longer needs a decision")
    # ... and each outcome has its own colour: "Answered" is not the blue of "Waiting for you"
    colours = {
        number: _card(page, number)
        .get_by_test_id("card-status")
        .evaluate("e => { const s = getComputedStyle(e); return s.backgroundColor + '/' + s.color; }")
        for number in (1, 2, 3, 5)
    }
    assert len(set(colours.values())) == 4, colours
    expect(_card(page, 3).get_by_test_id("card-status")).to_have_text("Answered")
    page.screenshot(path=str(artifacts / "first-hour-settled-cards.png"), full_page=True)
    _no_blocking_a11y(page, "settled cards")


# ------------------------------------------------------------------------------------------ message box


def test_the_message_box_says_why_it_cannot_send_while_a_turn_waits_canned(page: Any, artifacts: Path) -> None:
    # GIVEN a conversation whose turn waits for a decision
    canned = _waiting_on([1], "canned-composer")
    canned.install(page)
    open_console(page, "assistant", conversation=canned.conversation)
    expect(_card(page, 1)).to_have_attribute("data-status", "PENDING")
    # THEN the message box is disabled and says what to do instead
    box = page.locator("#input")
    expect(box).to_be_disabled()
    expect(box).to_have_attribute("placeholder", re.compile("Decide above first"))
    expect(page.locator("#send")).to_be_disabled()
    page.screenshot(path=str(artifacts / "first-hour-composer-waiting.png"))
    _no_blocking_a11y(page, "message box while waiting")
    # WHEN the person decides and the turn finishes
    canned.messages = [*canned.messages[:1], _approval("APPROVED", 1), ai(2, "Refunded.")]
    canned.turn = {**canned.turn, "status": "COMPLETED", "version": 6, "pendingActions": []}
    canned.active = None
    _card(page, 1).get_by_role("button", name="Approve", exact=True).click()
    # THEN the person can write again
    expect(box).to_be_enabled()
    expect(page.locator("#send")).to_be_enabled()
    expect(box).to_have_attribute("placeholder", re.compile("Message the agent"))


def test_a_refused_message_says_why_and_can_be_dismissed(page: Any, artifacts: Path) -> None:
    conversation = open_console(page, "support-agent")
    # GIVEN a server that refuses the start for a reason of its own
    page.route(
        f"**/conversations/{conversation}/turns",
        lambda route: route.fulfill(
            status=429,
            content_type="application/problem+json",
            json={"title": "Too many requests", "detail": "Try again in a minute."},
        ),
    )
    send(page, "hello there")
    # THEN the message says it was not sent and why, the text is back in the box, and nothing else is red
    echo = page.get_by_test_id("user-echo")
    expect(echo).to_contain_text("Not sent: Too many requests: Try again in a minute.")
    expect(page.locator("#input")).to_have_value("hello there")
    page.screenshot(path=str(artifacts / "first-hour-not-sent.png"))
    _no_blocking_a11y(page, "a refused message")
    # WHEN the person dismisses it: THEN it is gone (it does not stay in the conversation)
    echo.get_by_role("button", name="Dismiss").click()
    expect(page.get_by_test_id("user-echo")).to_have_count(0)
    page.unroute_all(behavior="ignoreErrors")


# ------------------------------------------------------------------------------------ conversations list


@pytest.fixture
def british_page(browser: Any, dev_server: DevProcess) -> Iterator[Any]:
    """A page whose dates read the same on every machine (en-GB, UTC)."""
    context = browser.new_context(
        base_url=dev_server.url, viewport={"width": 1100, "height": 900}, locale="en-GB", timezone_id="UTC"
    )
    page = context.new_page()
    yield page
    context.close()


def test_the_list_shows_days_and_which_conversations_wait_for_the_person_canned(
    british_page: Any, artifacts: Path
) -> None:
    page = british_page
    now = datetime.now(UTC).replace(microsecond=0)
    listing = {
        "conversations": [
            {"conversationId": "c-waits", "title": "Refund my order", "lastActivityAt": now.isoformat()},
            {"conversationId": "c-done", "title": "Book a room", "lastActivityAt": "2025-11-20T09:05:00Z"},
        ]
    }
    page.route(re.compile(r"/conversations\?"), lambda route: route.fulfill(json=listing))
    # GIVEN one conversation waiting on a decision, one finished
    waits = _waiting_on([1], "c-waits")
    waits.install(page)
    page.route(
        "**/conversations/c-done/messages*",
        lambda route: route.fulfill(json={"conversationId": "c-done", "activeTurnId": None, "messages": []}),
    )
    open_console(page, "assistant", conversation="c-new")
    links = page.get_by_test_id("conversation-list").locator("a[data-conversation-id]")
    expect(links).to_have_count(2)
    # THEN the waiting one is marked, in words, and every time has its day
    expect(links.nth(0).get_by_test_id("conversation-waiting")).to_have_text("Waiting for you")
    expect(links.nth(1).get_by_test_id("conversation-waiting")).to_have_count(0)
    expect(links.nth(0).locator("time")).to_have_text(re.compile(r"^Today, \d{1,2}:\d\d$"))
    expect(links.nth(1).locator("time")).to_have_text("20 Nov 2025")
    # ... and the conversation opened but not written in is not listed
    expect(page.get_by_test_id("conversation-list")).not_to_contain_text("New conversation")
    page.screenshot(path=str(artifacts / "first-hour-conversations.png"))
    _no_blocking_a11y(page, "conversations list with a marker")
    # WHEN the person opens the waiting one and decides: THEN it is no longer marked while the agent works
    links.nth(0).click()
    expect(_card(page, 1)).to_have_attribute("data-status", "PENDING")
    waits.messages = [*waits.messages[:1], _approval("APPROVED", 1)]
    waits.turn = {**waits.turn, "status": "RUNNING", "version": 5, "pendingActions": []}
    _card(page, 1).get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("conversation-waiting")).to_have_count(0)
    page.unroute_all(behavior="ignoreErrors")


# ---------------------------------------------------------------------------------- a batch of tool calls


def test_a_batch_opens_at_its_first_card_and_lists_results_named_in_call_order_canned(
    page: Any, artifacts: Path
) -> None:
    page.set_viewport_size({"width": 1100, "height": 700})
    history = [
        ai(i, f"Earlier answer number {i}, long enough to take a line or two of the page. " * 2) for i in range(20)
    ]
    canned = Canned(
        "canned-batch",
        messages=[*history, user(50, "refund O-1, O-2 and O-3")],
        turn={"turnId": "t1", "agentId": "assistant", "status": "RUNNING", "version": 2},
        active="t1",
    )
    canned.install(page)
    open_console(page, "assistant", conversation=canned.conversation)
    expect(page.get_by_test_id("user-message")).to_have_count(1)
    calls = {
        "type": "ai",
        "messageId": "t1:m:60",
        "turnId": "t1",
        "content": "",
        "toolCalls": [
            {"id": f"call-{n}", "name": "issue_refund", "arguments": {"orderId": f"O-{n}", "amount": 10 * n}}
            for n in (1, 2, 3)
        ],
    }
    # WHEN a batch of three approvals lands while the person was at the bottom
    waiting = _waiting_on([1, 2, 3], canned.conversation, history=[*canned.messages, calls])
    canned.messages, canned.turn = waiting.messages, waiting.turn
    # THEN the view opens at the first card (its question in view), not at the bottom
    expect(_card(page, 3)).to_have_attribute("data-status", "PENDING")
    first_card_on_top = """() => {
        const card = document.querySelector("[data-message-id='t1:approval:call-1']").getBoundingClientRect();
        const view = document.getElementById('scroller').getBoundingClientRect();
        return card.top >= view.top && card.top < view.top + 80;
    }"""
    page.wait_for_function(first_card_on_top)
    # ... and stays there once the page has read the turn again (the status line counts the answers needed)
    expect(page.locator("#turn-status")).to_contain_text("3 answers are needed")
    assert page.evaluate(first_card_on_top)
    page.screenshot(path=str(artifacts / "first-hour-batch-lands.png"))

    # WHEN the tools finish in another order than they were called (3, 1, 2)
    def result(n: int) -> dict[str, Any]:
        return {
            "type": "tool",
            "messageId": f"t1:m:{70 + n}",
            "turnId": "t1",
            "toolCallId": f"call-{n}",
            "toolName": "issue_refund",
            "content": {"refunded": f"O-{n}"},
        }

    decided = [_approval("APPROVED", n) for n in (1, 2, 3)]
    canned.messages = [*history, user(50, "refund O-1, O-2 and O-3"), calls, *decided, result(3), result(1), result(2)]
    canned.turn = {**canned.turn, "status": "COMPLETED", "version": 9, "pendingActions": []}
    canned.active = None
    _card(page, 1).get_by_role("button", name="Approve", exact=True).click()  # (the page reads again after it)
    # THEN the results are listed in the cards' order, each naming its tool
    results = page.get_by_test_id("tool-message")
    expect(results).to_have_count(3)
    expect(results.locator("summary")).to_have_text(["Result of issue_refund"] * 3)
    order = [json.loads(r.locator("pre").text_content() or "{}")["refunded"] for r in results.all()]
    assert order == ["O-1", "O-2", "O-3"]


# ------------------------------------------------------------------------------------------ live timeline


def test_no_running_line_stays_under_a_form_that_already_waits(page: Any) -> None:
    # GIVEN the console live on the support agent, with the page's channel in the test's hands
    subscription: dict[str, Any] = {}

    def relay(ws: Any) -> None:
        server = ws.connect_to_server()

        def from_page(message: str | bytes) -> None:
            parsed = json.loads(message)
            if parsed.get("type") == "subscribe":
                subscription["id"] = parsed["id"]
            server.send(message)

        ws.on_message(from_page)
        # (a lambda: Playwright marks its handlers with an attribute, which a bound method cannot take)
        server.on_message(lambda message: ws.send(message))  # noqa: PLW0108
        subscription["page"] = ws

    page.route_web_socket(re.compile(r".*/event/realtime$"), relay)
    conversation = open_console(page, "support-agent")
    expect(page.locator("body")).to_have_attribute("data-live", "live")
    seen: list[str] = []

    def record(text: str) -> None:
        seen.append(text)

    page.expose_function("recordPhase", record)
    send(page, TICKET)
    expect(page.locator("[data-testid=form-card][data-status=PENDING]")).to_have_count(1)
    expect(page.locator("#turn-status")).to_have_attribute("data-status", "WAITING_FOR_USER")
    page.evaluate(
        """() => {
             const phase = document.querySelector('[data-testid=live-phase]');
             new MutationObserver(() => phase.textContent && window.recordPhase(phase.textContent))
               .observe(phase, {childList: true, characterData: true, subtree: true});
           }"""
    )
    turn_id = page.evaluate(
        f"fetch('/conversations/{conversation}/messages').then(r => r.json()).then(b => b.activeTurnId)"
    )

    def deliver(event: dict[str, Any]) -> None:
        subscription["page"].send(json.dumps({"type": "data", "id": subscription["id"], "event": json.dumps(event)}))

    # WHEN the channel's "running" status arrives after the save that made the turn wait (they can overtake
    # each other), followed by news of another turn (so the test knows the first was handled)
    base = {"type": "status", "conversationId": conversation}
    deliver({**base, "turnId": turn_id, "phase": "running", "toolName": "create_support_ticket"})
    deliver({**base, "turnId": "t-probe", "phase": "queued"})
    page.wait_for_function("() => document.querySelector('[data-testid=live-phase]').textContent === 'queued…'")
    # THEN the late status was not drawn under the waiting form
    assert "running create_support_ticket…" not in seen, seen


# -------------------------------------------------------------------------------------------------- phone


def test_on_a_phone_cancel_and_the_approval_buttons_keep_their_lines_canned(
    browser: Any, dev_server: DevProcess, artifacts: Path
) -> None:
    context = browser.new_context(
        base_url=dev_server.url, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    page = context.new_page()
    try:
        # GIVEN a batch of three refunds waiting for decisions (the longest status line)
        canned = _waiting_on([1, 2, 3], "canned-phone")
        canned.install(page)
        open_console(page, "assistant", conversation=canned.conversation)
        card = _card(page, 1)
        expect(card.get_by_role("button", name="Edit, then approve")).to_be_visible()
        expect(page.locator("#turn-status")).to_contain_text("3 answers are needed")
        lines = """(id) => { const r = document.createRange(); r.selectNodeContents(document.getElementById(id));
                             return r.getClientRects().length; }"""
        # THEN "Cancel turn" is one line, not wrapped
        expect(page.locator("#cancel-turn")).to_be_visible()
        assert page.evaluate(lines, "cancel-turn") == 1
        # ... and so are the confirmation's buttons
        page.locator("#cancel-turn").click()
        expect(page.locator("#cancel-confirm")).to_be_visible()
        assert [page.evaluate(lines, name) for name in ("cancel-yes", "cancel-no")] == [1, 1]
        page.screenshot(path=str(artifacts / "first-hour-phone-cancel.png"))
        page.locator("#cancel-no").click()
        # ... and a card's four answers take at most two rows, each button on one line
        buttons = card.locator(".form-actions button")
        expect(buttons).to_have_count(4)
        tops = {round(b.evaluate("e => e.getBoundingClientRect().top")) for b in buttons.all()}
        assert len(tops) <= 2, tops
        assert all(b.evaluate("e => e.getClientRects()[0].height") < 44 for b in buttons.all())
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        card.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "first-hour-phone-approval.png"))
        _no_blocking_a11y(page, "phone, approvals pending")
    finally:
        context.close()
