"""The console in a real browser against ``agentturn dev``: forms, approvals, errors, hostile schemas."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.agents import HOSTILE_AGENT_ID
from tests.e2e.canned import form_card_entry
from tests.e2e.conftest import PageProbe, open_console, send

TICKET = "create a high priority login incident ticket"


def form_card(page: Any, status: str | None = None) -> Any:
    return (
        page.locator(f"[data-testid=form-card][data-status={status}]") if status else page.get_by_test_id("form-card")
    )


def test_support_ticket_form_submitted_and_answered(page: Any, artifacts: Path) -> None:
    open_console(page, "support-agent")
    send(page, TICKET)
    card = form_card(page, "PENDING")
    expect(card).to_have_count(1)
    # The schema's texts, rendered by the form library: title, field titles, required marks, enum options.
    expect(card).to_contain_text("补充故障信息 (Incident details)")
    affected = card.get_by_label(re.compile(r"Affected system"))
    impact = card.get_by_label(re.compile(r"Impact scope"))
    expect(card.locator("label .required")).to_have_count(2)
    # Option labels from the schema's x-enumNames, not the raw values
    expect(impact.locator("option")).to_contain_text(
        ["单个用户 (One user)", "部分用户 (Some users)", "全部用户 (All users)"]
    )
    expect(page.locator("#demo-badge")).to_be_visible()  # the dev server says it runs the demo model

    affected.fill("统一登录系统 (SSO)")
    impact.select_option(label="全部用户 (All users)")
    card.screenshot(path=str(artifacts / "support-ticket-form-filled.png"))
    page.screenshot(path=str(artifacts / "support-ticket-console-filled.png"), full_page=True)
    card.get_by_role("button", name="Submit").click()

    submitted = form_card(page, "SUBMITTED")
    expect(submitted).to_have_count(1)
    expect(submitted.get_by_role("button")).to_have_count(0)  # read-only
    expect(submitted.get_by_test_id("submitted-values")).to_contain_text("统一登录系统 (SSO)")
    expect(submitted.get_by_test_id("submitted-values")).to_contain_text("全部用户 (All users)")
    expect(submitted).to_contain_text("dev-user")
    answer = page.get_by_test_id("ai-message").filter(has_text="Ticket TICKET-")
    expect(answer).to_have_count(1)
    expect(answer).to_contain_text("affected system 统一登录系统 (SSO), impact 全部用户 (All users)")
    # The demo model says so, in the message and in the page header.
    expect(answer.locator(".demo-badge")).to_have_text("demo model")
    expect(page.locator("#demo-badge")).to_be_visible()
    expect(page.locator("#turn-status")).to_contain_text("Done.")
    page.screenshot(path=str(artifacts / "support-ticket-console-answered.png"), full_page=True)


def test_server_side_field_errors_sit_next_to_their_fields(page: Any) -> None:
    # Client-side checks off: the request reaches the server, which refuses it field by field (422).
    open_console(page, "support-agent", query="clientValidation=off")
    send(page, TICKET)
    card = form_card(page, "PENDING")
    expect(card).to_have_count(1)
    with page.expect_response(lambda r: r.url.endswith("/submit")) as submitted:
        card.get_by_role("button", name="Submit").click()
    response = submitted.value
    assert response.status == 422
    assert {e["path"] for e in response.json()["errors"]} == {"/affectedSystem", "/impactScope"}
    for field in ("affectedSystem", "impactScope"):
        error = card.locator(f"#f-call-1_{field}__error")
        expect(error).to_contain_text(re.compile(r"\) is required\.$"))  # "受影响系统 (Affected system) is required."
        # Next to its field: in the same field container as the input, which names it as its description.
        assert error.evaluate(f"e => e.closest('.form-group').contains(document.getElementById('f-call-1_{field}'))")
        expect(card.locator(f"#f-call-1_{field}")).to_have_attribute(
            "aria-describedby", re.compile(f"f-call-1_{field}__error")
        )
    expect(form_card(page, "PENDING")).to_have_count(1)  # nothing changed on the server


def test_client_side_checks_block_bad_input_before_any_request(page: Any, artifacts: Path) -> None:
    open_console(page, "meeting-agent")
    send(page, "book a meeting room")
    card = form_card(page, "PENDING")
    expect(card).to_have_count(1)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if r.url.endswith("/submit") else None)
    card.get_by_label(re.compile(r"Topic")).fill("Design review")
    card.get_by_label(re.compile(r"Date")).fill("2026-12-24")
    card.get_by_label(re.compile(r"Start, HH:MM")).fill("25:99")
    card.get_by_label(re.compile(r"Attendees")).fill("500")
    card.get_by_role("button", name="Submit").click()
    # ... in the server's words (web/src/form_messages.mjs), naming the field by its title
    expect(card.locator("#f-call-1_startTime__error")).to_contain_text(
        "开始时间 (Start, HH:MM) is not in the expected form (24-hour clock, such as 14:30)."
    )
    expect(card.locator("#f-call-1_attendees__error")).to_contain_text("参会人数 (Attendees) must be at most 200.")
    assert requests == []
    card.screenshot(path=str(artifacts / "meeting-form-client-errors.png"))

    card.get_by_label(re.compile(r"Start, HH:MM")).fill("14:30")
    card.get_by_label(re.compile(r"Attendees")).fill("6")
    card.get_by_label(re.compile(r"Projector")).check()
    card.get_by_role("button", name="Submit").click()
    values = form_card(page, "SUBMITTED").get_by_test_id("submitted-values")
    expect(values).to_contain_text("Design review")
    expect(values.locator("dd[data-field=attendees]")).to_have_text("6")
    expect(values.locator("dd[data-field=needsProjector]")).to_have_text("yes")
    expect(page.get_by_test_id("ai-message").filter(has_text="Booked Room A")).to_have_count(1)


def test_hostile_schema_text_is_shown_as_text(page: Any, probe: PageProbe, artifacts: Path) -> None:
    open_console(page, HOSTILE_AGENT_ID)
    send(page, "show me the form")
    card = form_card(page, "PENDING")
    expect(card).to_contain_text("Title <img src=x onerror=alert(1)>")
    expect(card).to_contain_text("Name <img src=x onerror=alert('field')>")
    expect(card).to_contain_text("<b onmouseover=alert('hint')>hint</b>")
    expect(card).to_contain_text("Description <script>alert('description')</script>")
    # The form's description written for the model is not shown to people; the schema's texts are.
    expect(card).not_to_contain_text("Form description")
    expect(card.locator("option")).to_contain_text(["<img src=x onerror=alert('enum')>"])
    assert page.locator("img, script:not([src]), b").count() == 0
    card.screenshot(path=str(artifacts / "hostile-schema-form.png"))
    card.get_by_label(re.compile(r"^Name")).fill("<img src=x onerror=alert('value')>")
    card.get_by_role("button", name="Submit").click()
    submitted = form_card(page, "SUBMITTED")
    expect(submitted).to_contain_text("Title <img src=x onerror=alert(1)>")
    expect(submitted.get_by_test_id("submitted-values")).to_contain_text("<img src=x onerror=alert('value')>")
    expect(page.get_by_test_id("ai-message").filter(has_text="Thanks <img src=x onerror=alert(1)>")).to_have_count(1)
    assert page.locator("img, script:not([src]), b").count() == 0
    assert probe.dialogs == []


def test_approval_approved_runs_the_tool(page: Any) -> None:
    open_console(page, "refund-agent")
    send(page, "please refund order O-1001")
    card = page.get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-status", "PENDING")
    expect(card).to_contain_text("issue_refund")  # under "Technical details"
    expect(card).to_contain_text("Refund 42.5 for O-1001?")
    expect(card.get_by_test_id("approval-arguments")).to_contain_text('"orderId": "O-1001"')
    expect(page.locator("#turn-status")).to_contain_text("Waiting for your decision")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card).to_have_attribute("data-status", "APPROVED")
    expect(card.get_by_role("button")).to_have_count(0)
    expect(page.get_by_test_id("ai-message").filter(has_text="Refund REFUND-")).to_have_count(1)


def test_approval_rejected_with_reason_reaches_the_model(page: Any) -> None:
    open_console(page, "refund-agent")
    send(page, "please refund order O-1001")
    card = page.get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-status", "PENDING")
    # The reason box opens once the person chooses to reject; the second "Reject" sends it
    expect(card.get_by_label(re.compile("Why not"))).to_have_count(0)
    card.get_by_role("button", name="Reject").click()
    card.get_by_label(re.compile("Why not")).fill("order already refunded by phone")
    card.get_by_role("button", name="Reject").click()
    expect(card).to_have_attribute("data-status", "REJECTED")
    expect(card).to_contain_text("order already refunded by phone")
    reply = page.get_by_test_id("ai-message").filter(has_text="I did not run issue_refund")
    expect(reply).to_contain_text("order already refunded by phone")


def test_cancelling_the_turn_makes_the_card_cancelled(page: Any) -> None:
    open_console(page, "support-agent")
    send(page, TICKET)
    expect(form_card(page, "PENDING")).to_have_count(1)
    page.locator("#cancel-turn").click()
    # Asked first, inline (no browser dialog)
    expect(page.locator("#cancel-confirm")).to_be_visible()
    page.locator("#cancel-yes").click()
    cancelled = form_card(page, "CANCELLED")
    expect(cancelled).to_contain_text("Cancelled")
    expect(cancelled.locator("input, select, button")).to_have_count(0)
    expect(page.locator("#turn-status")).to_contain_text("Cancelled.")


def test_declined_form_is_read_only_and_the_model_is_told(page: Any, dev_server: Any) -> None:
    status, document = dev_server.request("GET", "/openapi.json")
    if status != 200 or not any(path.endswith("/decline") for path in document.get("paths", {})):
        pytest.skip("this build's API has no decline route")
    open_console(page, "meeting-agent")
    send(page, "book a meeting room")
    card = form_card(page, "PENDING")
    expect(card).to_have_count(1)
    card.get_by_role("button", name="Decline").click()
    card.get_by_placeholder("reason (optional)").fill("no room needed after all")
    card.get_by_role("button", name="Decline form").click()
    declined = form_card(page, "DECLINED")
    expect(declined).to_contain_text("Declined")
    expect(declined).to_contain_text("no room needed after all")
    expect(declined.locator("input, select, button")).to_have_count(0)
    expect(page.get_by_test_id("ai-message").filter(has_text="I could not get the form")).to_have_count(1)


def _submit_ticket_losing_the_first_attempt(page: Any, *, server_acts: bool) -> list[str]:
    """Fill in and submit the ticket form once, with the first submission lost on the network (after the
    server acted on it, or before it reached the server); the idempotency key of every attempt sent."""
    open_console(page, "support-agent")
    send(page, TICKET)
    card = form_card(page, "PENDING")
    expect(card).to_have_count(1)
    keys: list[str] = []

    def lose_the_first(route: Any) -> None:
        keys.append(route.request.headers["idempotency-key"])
        if len(keys) > 1:
            route.continue_()
            return
        if server_acts:
            route.fetch()
        route.abort("connectionreset")

    page.route("**/actions/*/submit", lose_the_first)
    card.get_by_label(re.compile(r"Affected system")).fill("VPN")
    card.get_by_label(re.compile(r"Impact scope")).select_option(label="单个用户 (One user)")
    card.get_by_role("button", name="Submit").click()
    expect(form_card(page, "SUBMITTED")).to_have_count(1)
    expect(page.get_by_test_id("ai-message").filter(has_text="Ticket TICKET-")).to_have_count(1)
    return keys


def test_a_retried_submission_reuses_its_idempotency_key(page: Any) -> None:
    # GIVEN a form whose first submission the server acts on, but whose answer is lost on the way back
    # WHEN the person submits once
    keys = _submit_ticket_losing_the_first_attempt(page, server_acts=True)
    # THEN every attempt named the same key (the retry, unless the live timeline or a poll told the page the
    # outcome first: the server acted on the first attempt), and the ticket was made once
    assert 1 <= len(keys) <= 2
    assert set(keys) == {keys[0]}
    assert re.fullmatch(r"[0-9a-f-]{36}", keys[0])
    assert len(page.get_by_test_id("ai-message").filter(has_text="Ticket TICKET-").all()) == 1


def test_a_submission_whose_request_was_lost_is_retried_with_the_same_key(page: Any) -> None:
    # GIVEN a form, and a network that drops the first submission before it reaches the server
    # WHEN the person submits once
    keys = _submit_ticket_losing_the_first_attempt(page, server_acts=False)
    # THEN the page retried (nothing else could tell it the outcome) with the same key, and the turn went on
    assert len(keys) == 2
    assert keys[0] == keys[1]


def test_each_dev_user_sees_only_their_own_conversations(page: Any) -> None:
    conversation = open_console(page, "support-agent")
    send(page, TICKET)
    expect(form_card(page, "PENDING")).to_have_count(1)
    listed = page.get_by_test_id("conversation-list").locator(f"a[data-conversation-id='{conversation}']")
    expect(listed).to_have_count(1)
    page.locator(".settings summary").click()
    page.locator("#user").select_option("alice")
    expect(page.get_by_test_id("user-message")).to_have_count(0)
    expect(listed).to_have_count(0)  # alice's list does not hold the default user's conversation
    expect(page.locator("#empty")).to_be_visible()
    assert page.locator("#conversation").input_value() == conversation
    page.locator("#user").select_option("")  # back to the default user
    expect(form_card(page, "PENDING")).to_have_count(1)


def test_a_read_answered_after_the_user_switch_is_not_drawn_for_the_next_user(page: Any) -> None:
    """The race CI caught: the default user's poll answered after the switch to alice and was drawn as hers."""
    # GIVEN the default user's conversation with a pending card, and the default user's next read held
    conversation = open_console(page, "support-agent")
    send(page, TICKET)
    expect(form_card(page, "PENDING")).to_have_count(1)
    held: list[Any] = []

    def hold_the_default_users_reads(route: Any) -> None:
        # (the conversations list's own short read of this conversation, for its "waiting" marker, is not a
        # timeline read: it goes through)
        if "x-agentturn-dev-user" in route.request.headers or "limit=20&" in route.request.url + "&":
            route.continue_()
        else:
            held.append(route)

    # A fresh page, so no poll of the first one is caught (a reload can cancel one the route already holds).
    url = page.url
    page.goto("about:blank")
    page.route(f"**/conversations/{conversation}/messages*", hold_the_default_users_reads)
    with page.expect_request(lambda request: "/messages" in request.url):
        page.goto(url)
    # WHEN the person becomes alice while that read is in flight, and only then does it answer
    page.locator(".settings summary").click()
    page.locator("#user").select_option("alice")
    expect(page.locator("#empty")).to_be_visible()
    assert held, "the default user's read was not in flight"  # the poll's, and the live channel's safety net's
    for route in held:
        with page.expect_console_message(lambda message: "dropped the timeline read" in message.text):
            route.continue_()
    # THEN alice still sees an empty conversation: nothing of the default user's was drawn
    expect(page.get_by_test_id("user-message")).to_have_count(0)
    expect(form_card(page, "PENDING")).to_have_count(0)
    expect(page.locator("#empty")).to_be_visible()


def test_a_message_retried_after_the_user_switch_still_goes_as_its_sender(page: Any) -> None:
    # GIVEN the default user's message whose first sending is held on the network
    conversation = open_console(page, "support-agent")
    held: list[Any] = []

    def hold_the_first(route: Any) -> None:
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route(f"**/conversations/{conversation}/turns", hold_the_first)
    with page.expect_request(lambda request: request.url.endswith("/turns")) as first:
        send(page, TICKET)
    assert "x-agentturn-dev-user" not in first.value.headers
    # WHEN the person becomes alice, and only then is the first sending lost (the page retries it)
    page.locator(".settings summary").click()
    page.locator("#user").select_option("alice")
    expect(page.locator("#empty")).to_be_visible()
    with page.expect_request(lambda request: request.url.endswith("/turns")) as retry:
        held[0].abort("connectionreset")
    # THEN the retry is the same request from the same person: the default user, the same key
    assert "x-agentturn-dev-user" not in retry.value.headers
    assert retry.value.headers["idempotency-key"] == first.value.headers["idempotency-key"]


def _card(status: str, number: int, **extra: Any) -> dict[str, Any]:
    return form_card_entry(status, number, description=f"a {status} card", **extra)


def test_every_card_state_renders_read_only(page: Any) -> None:
    """The states that are slow or rare to reach for real (expired, redacted), from a canned timeline."""
    messages = [
        _card("SUBMITTED", 1, submittedValues={}, valuesRedacted=True, submittedBy="alice"),
        _card("DECLINED", 2, declineReason="not my team"),
        _card("EXPIRED", 3, expiresAt="2026-12-01T10:00:00Z"),
        _card("CANCELLED", 4),
        {
            "type": "agent_approval",
            "messageId": "t1:approval:call-5",
            "turnId": "t1",
            "actionId": "call-5",
            "toolName": "issue_refund",
            "arguments": {"orderId": "O-1"},
            "message": "Refund?",
            "status": "REJECTED",
            "actions": [],
            "decidedBy": "bob",
            "decidedAt": "2026-12-01T09:00:00Z",
            "reason": "duplicate",
            "modelVisible": False,
            "version": 2,
        },
        {"type": "ai", "messageId": "t1:m:1", "turnId": "t1", "content": "[demo model] Done.", "toolCalls": []},
    ]
    turn = {"turnId": "t1", "agentId": "assistant", "status": "COMPLETED", "version": 9}
    page.route(
        "**/conversations/canned/messages*",
        lambda route: route.fulfill(json={"conversationId": "canned", "activeTurnId": None, "messages": messages}),
    )
    page.route("**/turns/t1", lambda route: route.fulfill(json=turn))
    open_console(page, "assistant", conversation="canned")
    cards = page.get_by_test_id("form-card")
    expect(cards).to_have_count(4)
    expect(cards.nth(0).get_by_test_id("values-redacted")).to_contain_text("values redacted")
    expect(cards.nth(0)).to_contain_text("alice")
    expect(cards.nth(1)).to_contain_text("Declined")
    expect(cards.nth(1)).to_contain_text("not my team")
    expect(cards.nth(2)).to_contain_text("Expired")
    expect(cards.nth(3)).to_contain_text("Cancelled")
    for index, status in enumerate(["SUBMITTED", "DECLINED", "EXPIRED", "CANCELLED"]):
        expect(cards.nth(index)).to_have_attribute("data-status", status)
        expect(cards.nth(index).locator("input, select, button, form")).to_have_count(0)
    approval = page.get_by_test_id("approval-card")
    expect(approval).to_have_attribute("data-status", "REJECTED")
    expect(approval).to_contain_text("duplicate")
    expect(approval.get_by_role("button")).to_have_count(0)
    expect(page.get_by_test_id("ai-message").locator(".demo-badge")).to_have_text("demo model")
    expect(page.get_by_test_id("ai-message")).to_contain_text("Done.")
