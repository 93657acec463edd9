"""A form assigned to finance, filled in from an approver's inbox on a phone (dev server, three identities).

alice (the requester) asks to book an expense; the business tool needs finance to code it and asks a form whose
``FormDefinition(..., approvers=Approvers(groups=("finance",)))`` names them. fin-ana answers it from her "Waiting
for you" list without reading alice's conversation; ops-olu (oncall) is an outsider.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.e2e.agents import FINANCE_FORM_AGENT_ID
from tests.e2e.conftest import DevProcess, PageProbe, axe_violations, open_console, send

PHONE = {"width": 375, "height": 667}
FORM_TITLE = "Expense coding (finance)"


def _as(page: Any, user: str, conversation: str, query: str = "") -> None:
    """The console reloaded as ``user`` (its user switch keeps the choice in localStorage)."""
    page.evaluate("(user) => localStorage.setItem('agentturn.devUser', user)", user)
    page.goto(f"/?agent={FINANCE_FORM_AGENT_ID}{query}#c={conversation}")
    page.reload()  # a goto that changes only the hash would not load the page again
    expect(page.locator("#agent")).to_have_value(FINANCE_FORM_AGENT_ID)


def _api(server: DevProcess, user: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"X-Agentturn-Dev-User": user}
    if method == "POST":
        headers["Idempotency-Key"] = str(uuid.uuid4())
    return server.request(method, path, body, headers)


def _waiting_turn(server: DevProcess, conversation: str) -> dict[str, Any]:
    status, messages = _api(server, "alice", "GET", f"/conversations/{conversation}/messages")
    assert status == 200, messages
    status, turn = _api(server, "alice", "GET", f"/turns/{messages['activeTurnId']}")
    assert status == 200, turn
    assert turn["status"] == "WAITING_FOR_USER", turn
    return dict(turn)


def _inbox_ids(server: DevProcess, user: str) -> set[str]:
    status, inbox = _api(server, user, "GET", "/inbox?limit=100")
    assert status == 200, inbox
    return {item["turnId"] for item in inbox["items"]}


def _count(page: Any) -> int:
    badge = page.get_by_test_id("inbox-count")
    return 0 if badge.is_hidden() else int(badge.inner_text().rstrip("+"))


def _alice_asks(page: Any, conversation: str, what: str) -> None:
    _as(page, "alice", conversation)
    send(page, what)
    card = page.get_by_test_id("form-card")
    # THEN her conversation says for whom the form waits, and offers her no form she may not submit
    expect(card).to_contain_text("waiting for finance")
    expect(card.get_by_role("button", name="Submit")).to_have_count(0)


def _entry(page: Any, turn_id: str) -> Any:
    return page.locator(f'[data-testid="inbox-item"][data-turn-id="{turn_id}"]')


def test_finance_fills_in_an_assigned_form_from_the_inbox_on_a_phone(
    page: Any, dev_server: DevProcess, probe: PageProbe, artifacts: Path
) -> None:
    # GIVEN alice's expense, whose coding form waits for finance (her words hold markup: shown as text only)
    conversation = open_console(page, FINANCE_FORM_AGENT_ID)
    what = f"expense <b>train</b> to Lyon ({conversation})"
    _alice_asks(page, conversation, what)
    turn = _waiting_turn(dev_server, conversation)
    turn_id, action_id = turn["turnId"], turn["pendingActions"][0]["actionId"]
    assert turn["pendingActions"][0]["waitingFor"] == "waiting for finance (0 of 1)"
    # AND nothing on her page says it waits for her: the card, the status line and the message box name finance
    expect(page.get_by_test_id("form-card").get_by_test_id("card-status")).to_have_text("Waiting for others")
    expect(page.locator("#turn-status")).to_contain_text("Waiting for finance (0 of 1)")
    expect(page.locator("#turn-status")).not_to_have_text(re.compile("^Waiting for you"))
    expect(page.locator("#input")).to_have_attribute("placeholder", re.compile("^Waiting for finance"))
    # ... nor does her conversation list: it waits, but for others
    listed = page.locator(f'a[data-conversation-id="{conversation}"]')
    expect(listed.get_by_test_id("conversation-waiting")).to_have_text("Waiting for others")
    page.screenshot(path=str(artifacts / "inbox-form-requester-waiting.png"), full_page=True)

    # THEN an outsider sees nothing of it and may not answer it; fin-ana may not read alice's turn either
    assert turn_id not in _inbox_ids(dev_server, "ops-olu")
    submit = f"/turns/{turn_id}/actions/{action_id}/submit"
    outsider = _api(dev_server, "ops-olu", "POST", submit, {"data": {"costCentre": "CC-0001", "category": "TRAVEL"}})
    assert outsider[0] == 404, outsider
    assert _api(dev_server, "fin-ana", "GET", f"/turns/{turn_id}")[0] == 404
    assert turn_id in _inbox_ids(dev_server, "fin-ana")

    # WHEN fin-ana opens the console on a phone (the browser's own checks off: the server's refusal is the proof)
    page.set_viewport_size(PHONE)
    _as(page, "fin-ana", "inbox-ana-forms", "&clientValidation=off")
    page.get_by_role("button", name="Conversations", exact=True).click()
    entry = _entry(page, turn_id)
    expect(entry).to_contain_text(FORM_TITLE)
    expect(entry).to_contain_text("asked by alice")
    expect(entry).to_contain_text("<b>train</b>")  # the turn's title as text, never as markup
    before = _count(page)
    assert before >= 1
    page.screenshot(path=str(artifacts / "inbox-form-list.png"))
    assert axe_violations(page) == []

    # ... and opens the entry by keyboard: the form the timeline uses, from the schema the server froze
    entry.get_by_role("button", name="Fill in").focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_test_id("inbox-form")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading", name="A form from alice")).to_be_visible()
    expect(dialog.get_by_role("group", name="Expense coding")).to_be_visible()
    centre = dialog.get_by_label("Cost centre")
    expect(centre).to_be_focused()
    page.keyboard.type("4100")  # WHEN she types a cost centre without its "CC-"
    dialog.get_by_label("Category").select_option(label="Travel")
    dialog.get_by_role("button", name="Submit").focus()
    page.keyboard.press("Enter")

    # THEN the server refuses it at the field, her text stays, and nothing changed
    error_id = re.sub(r"[^A-Za-z0-9_-]", "_", f"f-{action_id}") + "_costCentre__error"
    expect(dialog.locator(f"#{error_id}")).to_contain_text(
        "Cost centre is not in the expected form (CC- and four digits, e.g. CC-4100)."
    )
    expect(centre).to_have_attribute("aria-describedby", re.compile(error_id))
    expect(centre).to_have_value("4100")
    after_refusal = _waiting_turn(dev_server, conversation)
    assert (after_refusal["version"], after_refusal["pendingActions"]) == (turn["version"], turn["pendingActions"])
    assert turn_id in _inbox_ids(dev_server, "fin-ana")
    page.screenshot(path=str(artifacts / "inbox-form-refused.png"))
    assert axe_violations(page) == []

    # WHEN she corrects it and sends it
    centre.fill("CC-4100")
    dialog.get_by_label("Note to the requester").fill("Booked <i>as travel</i>")
    dialog.get_by_role("button", name="Submit").focus()
    page.keyboard.press("Enter")

    # THEN the dialog closes, the entry leaves her inbox and the count drops
    expect(dialog).to_be_hidden()
    expect(page.locator("#inbox-status")).to_have_text(f"Submitted: {FORM_TITLE}")
    expect(_entry(page, turn_id)).to_have_count(0)
    if before > 1:
        expect(page.get_by_test_id("inbox-count")).to_have_text(str(before - 1))
    else:
        expect(page.get_by_test_id("inbox-count")).to_be_hidden()
    page.screenshot(path=str(artifacts / "inbox-form-submitted.png"))

    # THEN alice's turn resumes with the data, and her page shows who answered
    page.set_viewport_size({"width": 1100, "height": 900})
    _as(page, "alice", conversation)
    expect(page.get_by_test_id("ai-message").filter(has_text="Booked")).to_contain_text("CC-4100")
    card = page.get_by_test_id("form-card")
    expect(card.get_by_test_id("card-status")).to_have_text("Submitted")
    expect(card).to_contain_text("by fin-ana")
    expect(card.get_by_test_id("submitted-values")).to_contain_text("Booked <i>as travel</i>")
    page.screenshot(path=str(artifacts / "inbox-form-requester-answered.png"), full_page=True)
    assert axe_violations(page) == []
    assert probe.dialogs == []
    # ... and the audit holds one record of it: fin-ana, permitted by finance, the form answered (the refused
    # submission left none)
    status, audit = _api(dev_server, "alice", "GET", f"/turns/{turn_id}/audit")
    assert status == 200, audit
    mine = [r for r in audit["records"] if r["actionId"] == action_id]
    assert [(r["subject"], r["groups"], r["kind"], r["outcome"]) for r in mine] == [
        ("fin-ana", ["finance"], "FORM_INPUT", "SUBMITTED")
    ]


def test_a_form_answered_by_someone_else_meanwhile_is_refused_on_the_entry_and_the_text_stays(
    page: Any, dev_server: DevProcess, artifacts: Path
) -> None:
    # GIVEN alice's expense waiting for finance, and fin-ana typing into its form from her inbox on a phone
    conversation = open_console(page, FINANCE_FORM_AGENT_ID)
    _alice_asks(page, conversation, f"expense taxi ({conversation})")
    turn = _waiting_turn(dev_server, conversation)
    turn_id, action_id = turn["turnId"], turn["pendingActions"][0]["actionId"]
    page.set_viewport_size(PHONE)
    _as(page, "fin-ana", "inbox-ana-forms")
    page.get_by_role("button", name="Conversations", exact=True).click()
    _entry(page, turn_id).get_by_role("button", name="Fill in").click()
    dialog = page.get_by_test_id("inbox-form")
    dialog.get_by_label("Cost centre").fill("CC-2000")
    dialog.get_by_label("Category").select_option(label="Equipment")

    # WHEN fin-ben answers it first, and then she sends hers
    coded = {"data": {"costCentre": "CC-3000", "category": "TRAVEL"}}
    ben = _api(dev_server, "fin-ben", "POST", f"/turns/{turn_id}/actions/{action_id}/submit", coded)
    assert ben[0] == 202, ben
    dialog.get_by_role("button", name="Submit").click()

    # THEN the dialog says it no longer waits for her, keeps what she typed, and the entry has left her inbox
    expect(dialog.locator(".card-note")).to_have_text(re.compile(r"^This form no longer waits for you"))
    expect(dialog).to_contain_text("No longer in your list")
    expect(dialog.get_by_label("Cost centre")).to_have_value("CC-2000")
    expect(_entry(page, turn_id)).to_have_count(0)
    page.screenshot(path=str(artifacts / "inbox-form-conflict.png"))

    # WHEN she closes it THEN the focus is back in the inbox
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.locator("#inbox-heading")).to_be_focused()


def test_the_browser_refuses_a_bad_value_before_sending_and_the_approver_may_decline_with_a_reason(
    page: Any, dev_server: DevProcess, artifacts: Path
) -> None:
    # GIVEN alice's expense waiting for finance, and fin-ana's inbox on a desktop (the browser's checks on)
    conversation = open_console(page, FINANCE_FORM_AGENT_ID)
    _alice_asks(page, conversation, f"expense hotel ({conversation})")
    turn = _waiting_turn(dev_server, conversation)
    turn_id = turn["turnId"]
    _as(page, "fin-ana", "inbox-ana-forms")
    _entry(page, turn_id).get_by_role("button", name="Fill in").click()
    dialog = page.get_by_test_id("inbox-form")

    # WHEN she sends a cost centre without its "CC-" THEN the form refuses it at the field, and nothing is sent
    dialog.get_by_label("Cost centre").fill("41")
    dialog.get_by_label("Category").select_option(label="Equipment")
    dialog.get_by_role("button", name="Submit").click()
    expect(dialog.locator(".error-detail")).to_contain_text("Cost centre is not in the expected form")
    assert _waiting_turn(dev_server, conversation)["version"] == turn["version"]
    page.screenshot(path=str(artifacts / "inbox-form-desktop-refused.png"))
    assert axe_violations(page) == []

    # WHEN she declines it with a reason instead
    dialog.get_by_role("button", name="Decline").click()
    dialog.get_by_label("Why not?").fill("not a business expense")
    dialog.get_by_role("button", name="Decline form").click()

    # THEN the entry leaves her inbox, and alice's card says it was declined, why, and by whom
    expect(dialog).to_be_hidden()
    expect(page.locator("#inbox-status")).to_have_text(f"Declined: {FORM_TITLE}")
    expect(_entry(page, turn_id)).to_have_count(0)
    _as(page, "alice", conversation)
    card = page.get_by_test_id("form-card")
    expect(card.get_by_test_id("card-status")).to_have_text("Declined")
    expect(card).to_contain_text("Reason: not a business expense")
    expect(card).to_contain_text("by fin-ana")
    expect(page.get_by_test_id("ai-message").filter(has_text="Not booked")).to_be_visible()
    page.screenshot(path=str(artifacts / "inbox-form-requester-declined.png"), full_page=True)
