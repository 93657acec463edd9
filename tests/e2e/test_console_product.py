"""The console as a product (issue 19): conversations and URL routing, echo and activity, auto-scroll,
cards written for people, drafts, markdown, CSP without 'unsafe-eval', keyboard use, phone layout, and
accessibility (axe-core) on every card state. Screenshots of every state go to .artifacts/e2e/.

Against the real ``agentturn dev`` unless a test says "canned": those serve a fixed timeline through
Playwright's routing, for states that are slow or rare to reach for real.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.e2e.agents import LABELLED_AGENT_ID
from tests.e2e.canned import form_card_entry
from tests.e2e.conftest import DevProcess, PageProbe, axe_violations, open_console, send, unique

TICKET = "create a high priority login incident ticket"


def form_card(page: Any, status: str) -> Any:
    return page.locator(f"[data-testid=form-card][data-status={status}]")


def assert_accessible(page: Any, state: str, selector: str | None = None) -> None:
    violations = axe_violations(page, selector)
    assert violations == [], f"axe: serious/critical violations in state {state!r}: {json.dumps(violations, indent=1)}"


# ------------------------------------------------------------------------------------ conversations


def test_conversations_are_listed_and_the_url_follows_back_and_forward(
    page: Any, dev_server: DevProcess, artifacts: Path
) -> None:
    # GIVEN two conversations the person started, the second one later
    first, second = unique("first"), unique("second")
    open_console(page, "support-agent", conversation=first)
    send(page, "first question: create a ticket")
    expect(form_card(page, "PENDING")).to_have_count(1)
    page.get_by_role("button", name="+ New conversation").click()
    expect(page.locator("#empty")).to_be_visible()
    new_hash = page.evaluate("location.hash")
    assert new_hash.startswith("#c=c-") and first not in new_hash
    # ... which is not listed before anything was sent in it (the first one is)
    listed = page.get_by_test_id("conversation-list")
    expect(listed.locator(f"a[data-conversation-id='{first}']")).to_have_count(1)
    expect(listed.locator(f"a[href='{new_hash}']")).to_have_count(0)
    expect(listed).not_to_contain_text("New conversation")
    page.goto(f"/?agent=refund-agent#c={second}")
    send(page, "second question: refund order O-1001")
    expect(page.get_by_test_id("approval-card")).to_have_count(1)

    # THEN the list holds both, newest first, titled by their first message, the open one marked
    links = page.get_by_test_id("conversation-list").locator("a[data-conversation-id]")
    expect(links.first).to_have_attribute("data-conversation-id", second)
    expect(page.get_by_test_id("conversation-list")).to_contain_text("first question: create a ticket")
    expect(links.first).to_have_attribute("aria-current", "page")
    expect(page.locator("#conversation-title")).to_have_text("second question: refund order O-1001")
    page.screenshot(path=str(artifacts / "console-conversations-list.png"))
    assert_accessible(page, "conversations list")

    # WHEN the person opens the older one from the list
    page.get_by_test_id("conversation-list").get_by_text("first question: create a ticket").click()
    # THEN the URL and the timeline follow
    expect(page).to_have_url(re.compile(f"#c={first}$"))
    expect(page.get_by_test_id("user-message")).to_have_text([re.compile("first question")])
    # WHEN they go back, and forward again
    page.go_back()
    expect(page).to_have_url(re.compile(f"#c={second}$"))
    expect(page.get_by_test_id("user-message")).to_have_text([re.compile("second question")])
    page.go_forward()
    expect(page.get_by_test_id("user-message")).to_have_text([re.compile("first question")])
    # WHEN the hash is changed by hand
    page.evaluate(f"location.hash = 'c={second}'")
    expect(page.get_by_test_id("user-message")).to_have_text([re.compile("second question")])

    # ... and the API lists them for this caller, newest first, one page at a time
    status, body = dev_server.request("GET", "/conversations?limit=1")
    assert status == 200
    assert [c["conversationId"] for c in body["conversations"]] == [second]
    status, older = dev_server.request("GET", f"/conversations?limit=100&cursor={body['nextCursor']}")
    assert status == 200 and first in [c["conversationId"] for c in older["conversations"]]


# ------------------------------------------------------------------------------ echo, activity, scroll


@dataclass
class Canned:
    """A fixed conversation served through Playwright's routing (the "canned" tests)."""

    conversation: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    turn: dict[str, Any] = field(default_factory=dict)
    active: str | None = None
    answers: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def install(self, page: Any) -> None:
        page.route(
            f"**/conversations/{self.conversation}/messages*",
            lambda route: route.fulfill(
                json={"conversationId": self.conversation, "activeTurnId": self.active, "messages": self.messages}
            ),
        )
        page.route(f"**/turns/{self.turn['turnId']}", lambda route: route.fulfill(json=self.turn))

        def answer(route: Any) -> None:
            kind = route.request.url.rsplit("/", 1)[-1]
            self.answers.append((route.request.url.split("/actions/")[1], json.loads(route.request.post_data or "{}")))
            route.fulfill(status=202, json={"status": "ACCEPTED", "kind": kind})

        page.route(f"**/turns/{self.turn['turnId']}/actions/**", answer)


def ai(number: int, text: str) -> dict[str, Any]:
    return {"type": "ai", "messageId": f"t1:m:{number}", "turnId": "t1", "content": text, "toolCalls": []}


def user(number: int, text: str) -> dict[str, Any]:
    return {"type": "user", "messageId": f"t1:u:{number}", "turnId": "t1", "content": text}


def test_what_was_sent_shows_at_once_and_the_running_turn_shows_as_thinking(page: Any, artifacts: Path) -> None:
    conversation = open_console(page, "support-agent")
    held: list[Any] = []
    # GIVEN a start request that the server has not answered yet
    # (a lambda, not held.append: Playwright marks its handlers with an attribute, which builtins cannot take)
    page.route(f"**/conversations/{conversation}/turns", lambda route: held.append(route))  # noqa: PLW0108
    # WHEN the person sends a message
    send(page, TICKET)
    # THEN it shows at once, marked as being sent, and the message box is free again
    echo = page.get_by_test_id("user-echo")
    expect(echo).to_contain_text(TICKET)
    expect(echo).to_contain_text("Sending…")
    expect(page.locator("#input")).to_have_value("")
    page.screenshot(path=str(artifacts / "console-echo-sending.png"))
    # WHEN the server answers (the held request is let through; each evaluate lets Playwright deliver events)
    for _ in range(200):
        if held:
            break
        page.evaluate("0")
    assert len(held) == 1
    held[0].continue_()
    # THEN the stored message replaces the echo, once
    expect(page.get_by_test_id("user-message").filter(has_text=TICKET)).to_have_count(1)
    expect(page.get_by_test_id("user-echo")).to_have_count(0)
    expect(form_card(page, "PENDING")).to_have_count(1)


def test_a_refused_send_keeps_the_text_and_says_why(page: Any) -> None:
    conversation = open_console(page, "support-agent")
    # GIVEN the server refuses the start (the conversation is busy), and its reads agree that another turn
    # holds the conversation (else the page's next read rightly clears the notice: nothing holds it)
    # (only from the refusal on: a read before it that said "busy" would rightly disable Send before the click)
    refused = {"yet": False}

    def refuse_start(route: Any) -> None:
        refused["yet"] = True
        route.fulfill(
            status=409,
            content_type="application/problem+json",
            json={"title": "Conversation busy", "activeTurnId": "t-other"},
        )

    page.route(f"**/conversations/{conversation}/turns", refuse_start)

    def held_by_another_turn(route: Any) -> None:
        if not refused["yet"]:
            route.continue_()
            return
        response = route.fetch()
        route.fulfill(response=response, json={**response.json(), "activeTurnId": "t-other"})

    page.route(f"**/conversations/{conversation}/messages*", held_by_another_turn)
    page.route(
        "**/turns/t-other",
        lambda route: route.fulfill(
            json={"turnId": "t-other", "agentId": "support-agent", "status": "RUNNING", "version": 1}
        ),
    )
    send(page, "hello there")
    # THEN the text is back in the box, and the message itself says it was not sent, and why
    expect(page.locator("#input")).to_have_value("hello there")
    echo = page.get_by_test_id("user-echo")
    expect(echo).to_contain_text("Not sent")
    expect(echo).to_contain_text("has a turn that has not finished")
    # WHEN the person puts it away: THEN it is gone
    echo.get_by_role("button", name="Dismiss").click()
    expect(page.get_by_test_id("user-echo")).to_have_count(0)
    # (the page keeps polling: let go of the fakes before the page closes, so none answers a closed page)
    page.unroute_all(behavior="ignoreErrors")


def test_queued_and_running_show_in_the_timeline_canned(page: Any, artifacts: Path) -> None:
    canned = Canned(
        "canned-running",
        messages=[user(1, "what is the weather")],
        turn={"turnId": "t1", "agentId": "assistant", "status": "READY", "version": 1},
        active="t1",
    )
    canned.install(page)
    open_console(page, "assistant", conversation=canned.conversation)
    # GIVEN a queued turn: THEN the timeline says so where the answer will appear
    expect(page.get_by_test_id("activity")).to_contain_text("Queued…")
    # WHEN it starts running
    canned.turn = {**canned.turn, "status": "RUNNING", "version": 2}
    # THEN it shows as thinking, and the status line and cancel button are there
    expect(page.get_by_test_id("activity")).to_contain_text("Thinking…")
    expect(page.locator("#turn-status")).to_contain_text("The agent is working")
    expect(page.locator("#cancel-turn")).to_be_visible()
    page.screenshot(path=str(artifacts / "console-thinking.png"))
    # WHEN it completes with an answer
    canned.messages = [*canned.messages, ai(2, "Sunny, **25 °C**.")]
    canned.turn = {**canned.turn, "status": "COMPLETED", "version": 3}
    canned.active = None
    # THEN the answer is there and the activity row is gone; "Done." only once the answer shows
    expect(page.get_by_test_id("ai-message")).to_contain_text("Sunny, 25 °C.")
    expect(page.locator("#turn-status")).to_have_text("Done.")
    expect(page.get_by_test_id("activity")).to_be_hidden()
    expect(page.locator("#cancel-turn")).to_be_hidden()


def test_auto_scroll_follows_the_bottom_but_leaves_a_reader_alone_canned(page: Any, artifacts: Path) -> None:
    history = [ai(i, f"Older message number {i}, long enough to take a line or two. " * 3) for i in range(40)]
    canned = Canned(
        "canned-scroll",
        messages=history,
        turn={"turnId": "t1", "agentId": "assistant", "status": "RUNNING", "version": 1},
        active="t1",
    )
    canned.install(page)
    open_console(page, "assistant", conversation=canned.conversation)
    scroller = page.locator("#scroller")
    expect(page.get_by_test_id("ai-message")).to_have_count(40)
    at_bottom = "e => e.scrollHeight - e.scrollTop - e.clientHeight <= 80"
    # GIVEN the person at the bottom: a new message scrolls into view
    canned.messages = [*canned.messages, ai(100, "A new message at the bottom")]
    expect(page.get_by_test_id("ai-message")).to_have_count(41)
    page.wait_for_function(f"() => ({at_bottom})(document.getElementById('scroller'))")
    # WHEN they scroll up to read older messages, and a card that needs them arrives
    scroller.evaluate("e => e.scrollTo({top: 200})")
    page.wait_for_function("() => document.getElementById('scroller').scrollTop === 200")
    canned.messages = [
        *canned.messages,
        {
            "type": "agent_approval",
            "messageId": "t1:approval:call-9",
            "turnId": "t1",
            "actionId": "call-9",
            "toolName": "issue_refund",
            "arguments": {"orderId": "O-9", "amount": 9},
            "message": "Refund 9 for O-9?",
            "status": "PENDING",
            "actions": [],
            "modelVisible": False,
            "version": 1,
        },
    ]
    # THEN their place is kept, and a button says something below needs them
    expect(page.get_by_test_id("approval-card")).to_have_count(1)
    expect(page.get_by_test_id("jump-latest")).to_be_visible()
    expect(page.get_by_test_id("jump-latest")).to_contain_text("answer is needed")
    assert scroller.evaluate("e => e.scrollTop") == 200
    page.screenshot(path=str(artifacts / "console-reader-left-alone.png"))
    # WHEN they press it: THEN the card is in view
    page.get_by_test_id("jump-latest").click()
    expect(page.get_by_test_id("approval-card")).to_be_in_viewport()
    expect(page.get_by_test_id("jump-latest")).to_be_hidden()


# ---------------------------------------------------------------------------------- cards for people


def test_cards_show_schema_texts_and_option_labels_not_identifiers(page: Any, artifacts: Path) -> None:
    open_console(page, LABELLED_AGENT_ID)
    send(page, "deliver my parcel")
    card = form_card(page, "PENDING")
    expect(card).to_have_count(1)
    # THEN the schema's title and description, not the model's description nor the form key or turn ids
    expect(card).to_contain_text("Delivery preferences")
    expect(card).to_contain_text("Tell us how you want the parcel delivered.")
    expect(card).not_to_contain_text("model-facing")
    expect(card).not_to_contain_text("delivery_preferences")
    expect(page.locator("body")).not_to_contain_text("call-1")
    # ... and labels for both ways of naming options, with nothing chosen for the person
    speed = card.get_by_label(re.compile("Delivery speed"))
    expect(speed.locator("option")).to_contain_text(["Standard (3–5 days)", "Express (next day)"])
    expect(card.get_by_label(re.compile("Time slot")).locator("option")).to_contain_text(["Morning", "Afternoon"])
    assert speed.evaluate("e => e.value") == ""
    card.screenshot(path=str(artifacts / "card-labelled-pending.png"))
    assert_accessible(page, "form pending", "[data-testid=form-card]")

    # WHEN the person submits too little, THEN the messages are the server's words, naming fields by title
    card.get_by_role("button", name="Submit").click()
    expect(card).to_contain_text("Recipient name is required.")
    expect(card).to_contain_text("Delivery speed is required.")
    card.screenshot(path=str(artifacts / "card-labelled-errors.png"))
    assert_accessible(page, "form with errors", "[data-testid=form-card]")

    card.get_by_label(re.compile("Recipient name")).fill("Ada")
    speed.select_option(label="Express (next day)")
    card.get_by_label(re.compile("Time slot")).select_option(label="Afternoon")
    card.get_by_role("button", name="Submit").click()
    # THEN the submitted card shows the labels too, and the answer is rendered as markdown
    values = form_card(page, "SUBMITTED").get_by_test_id("submitted-values")
    expect(values.locator("dd[data-field=speed]")).to_have_text("Express (next day)")
    expect(values.locator("dd[data-field=slot]")).to_have_text("Afternoon")
    answer = page.get_by_test_id("ai-message").filter(has_text="Booked.")
    expect(answer.locator("strong")).to_have_text("Booked.")
    expect(answer.locator("li")).to_have_count(2)
    form_card(page, "SUBMITTED").screenshot(path=str(artifacts / "card-labelled-submitted.png"))
    assert_accessible(page, "form submitted")


def test_a_half_filled_form_survives_a_reload_and_is_forgotten_once_sent(page: Any) -> None:
    conversation = open_console(page, "support-agent")
    send(page, TICKET)
    card = form_card(page, "PENDING")
    # GIVEN a half-filled form
    card.get_by_label(re.compile("Affected system")).fill("VPN gateway")
    # WHEN the page is reloaded
    page.reload()
    # THEN the typed value is still there
    card = form_card(page, "PENDING")
    expect(card.get_by_label(re.compile("Affected system"))).to_have_value("VPN gateway")
    # WHEN it is sent
    card.get_by_label(re.compile("Impact scope")).select_option(label="部分用户 (Some users)")
    card.get_by_role("button", name="Submit").click()
    expect(form_card(page, "SUBMITTED")).to_have_count(1)
    # THEN no draft is left behind
    assert page.evaluate("Object.keys(sessionStorage).filter(k => k.startsWith('agentturn.draft:'))") == []
    assert conversation


def test_a_form_can_be_filled_in_and_sent_with_the_keyboard_alone(page: Any) -> None:
    open_console(page, LABELLED_AGENT_ID)
    send(page, "deliver my parcel")
    card = form_card(page, "PENDING")
    expect(card).to_have_count(1)
    # GIVEN the focus in the message box; WHEN the person moves with Shift+Tab into the form
    page.locator("#input").focus()
    for _ in range(30):
        if page.evaluate("document.activeElement?.id") == "f-call-1_recipient":
            break
        page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement?.id") == "f-call-1_recipient"
    # ... types, picks options with the arrow keys, and presses Enter on the Submit button
    page.keyboard.type("Grace")
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")
    while page.evaluate("document.activeElement?.textContent") != "Submit":
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    # THEN the form is sent with what was typed and picked
    values = form_card(page, "SUBMITTED").get_by_test_id("submitted-values")
    expect(values.locator("dd[data-field=recipient]")).to_have_text("Grace")
    expect(values.locator("dd[data-field=speed]")).not_to_have_text("—")


# -------------------------------------------------------------------------------------------- markdown

HOSTILE_MARKDOWN = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](java&#x09;script:alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](vbscript:msgbox(1))",
    "![x](javascript:alert(1))",
    "![x](https://tracker.example/pixel.png)",
    '<a href="javascript:alert(1)">x</a>',
    "<svg onload=alert(1)><circle/></svg>",
    "<iframe src=javascript:alert(1)></iframe>",
    '<math><mtext><table><mglyph><style><img src=x onerror="alert(1)">',
    "<details open ontoggle=alert(1)>",
    '<form action="javascript:alert(1)"><button>x</button></form>',
    '<input autofocus onfocus="alert(1)">',
    '<object data="javascript:alert(1)">',
    '<embed src="javascript:alert(1)">',
    "<base href=javascript:/>",
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    '<link rel=import href="data:text/html,<script>alert(1)</script>">',
    "<style>body{background:url(javascript:alert(1))}</style>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "[a](<javascript:alert(1)>)",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "<https://example.com/ok> and <javascript:alert(1)>",
    "`<img src=x onerror=alert(1)>`",
    "```html\n<script>alert(1)</script>\n```",
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    "<template><script>alert(1)</script></template>",
    '<a href="https://ok.example" onclick="alert(1)">ok</a>',
    "- [ ] task <img src=x onerror=alert(1)>",
    "| a | b |\n|---|---|\n| <img src=x onerror=alert(1)> | [x](javascript:alert(1)) |",
    "\u0000<script>alert(1)</script>",
    "<<script>script>alert(1)<</script>/script>",
]
ALLOWED_TAGS = {
    "DIV", "P", "BR", "STRONG", "EM", "DEL", "CODE", "PRE", "BLOCKQUOTE", "UL", "OL", "LI", "A", "HR",
    "H1", "H2", "H3", "H4", "H5", "H6", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"href", "title", "start", "align", "rel", "target", "class"}


def test_markdown_renders_and_nothing_in_the_hostile_corpus_can_run_code(page: Any, probe: PageProbe) -> None:
    open_console(page, "assistant")
    page.wait_for_function("() => !!window.AgentturnMarkdown")
    # GIVEN ordinary markdown: THEN it is rendered
    rendered = page.evaluate(
        """(text) => {
            const d = document.createElement('div');
            d.append(AgentturnMarkdown.render(text));
            const a = d.querySelector('a');
            return [d.querySelector('strong')?.textContent, d.querySelectorAll('li').length, a?.getAttribute('href'),
                    a?.rel].join('|');
        }""",
        "**bold** and [docs](https://example.com/docs)\n\n- one\n- two",
    )
    assert rendered == "bold|2|https://example.com/docs|noopener noreferrer nofollow"
    # WHEN every hostile text is rendered into the page
    found: list[dict[str, Any]] = page.evaluate(
        """(corpus) => {
            const host = document.createElement('div');
            document.body.append(host);
            return corpus.map((text) => {
                const box = document.createElement('div');
                box.append(AgentturnMarkdown.render(text));
                host.append(box);
                const elements = [...box.querySelectorAll('*')];
                return {
                    text,
                    tags: elements.map(e => e.tagName),
                    attributes: elements.flatMap(e => [...e.attributes].map(a => [a.name, a.value])),
                };
            });
        }""",
        HOSTILE_MARKDOWN,
    )
    # THEN only the allowed elements and attributes exist, and every link is http(s), mailto or in-page
    for case in found:
        assert set(case["tags"]) <= ALLOWED_TAGS, case
        for name, value in case["attributes"]:
            assert name in ALLOWED_ATTRIBUTES, case
            if name == "href":
                assert re.match(r"^(https?:|mailto:|#)", value.strip(), re.IGNORECASE), case
    assert probe.dialogs == []


# ------------------------------------------------------------------------------------------------ CSP


def test_the_page_runs_without_unsafe_eval_and_validates_forms(page: Any, dev_server: DevProcess) -> None:
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    response = page.goto(f"/?agent=meeting-agent#c={unique('csp')}")
    assert response is not None
    csp = response.headers["content-security-policy"]
    # GIVEN the page's policy: no eval of any kind, no inline script
    assert "'unsafe-eval'" not in csp and "'unsafe-inline'" not in csp and "script-src 'self'" in csp
    # THEN Chromium enforces it: code built from a string by the page is refused and reported
    page.evaluate(
        """() => {
            document.addEventListener('securitypolicyviolation', (e) => { window.__refused = e.violatedDirective; });
            setTimeout("window.__evalRan = true", 0);
        }"""
    )
    page.wait_for_function("() => window.__refused !== undefined")
    assert page.evaluate("window.__refused").startswith("script-src")
    assert page.evaluate("window.__evalRan") is None
    violations.clear()  # that one was the proof; the console itself must cause none
    # ... and the form's checks still run in the browser, in the server's words, with no violation reported
    send(page, "book a meeting room")
    card = form_card(page, "PENDING")
    card.get_by_label(re.compile(r"Start, HH:MM")).fill("25:99")
    card.get_by_role("button", name="Submit").click()
    expect(card.locator("#f-call-1_startTime__error")).to_contain_text(
        "开始时间 (Start, HH:MM) is not in the expected form (24-hour clock, such as 14:30)."
    )
    assert [v for v in violations if "eval" in v.lower()] == []


# -------------------------------------------------------------------------------- phone and a11y states


def test_phone_layout_keeps_the_conversation_in_view(browser: Any, dev_server: DevProcess, artifacts: Path) -> None:
    context = browser.new_context(
        base_url=dev_server.url,
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
        reduced_motion="reduce",  # the drawer then opens without sliding (what the screenshot should show)
    )
    page = context.new_page()
    try:
        open_console(page, "support-agent")
        send(page, TICKET)
        expect(form_card(page, "PENDING")).to_have_count(1)
        # THEN the header is one slim line, the list is a drawer, the form fits the width
        header = page.locator(".topbar").bounding_box()
        assert header is not None and header["height"] <= 0.08 * 844
        expect(page.locator("#sidebar")).not_to_be_in_viewport()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(artifacts / "console-phone-form.png"))
        assert_accessible(page, "phone, form pending")
        # WHEN the list is opened
        page.get_by_role("button", name="Conversations").click()
        expect(page.locator("#sidebar")).to_be_in_viewport(ratio=1)
        page.screenshot(path=str(artifacts / "console-phone-list.png"))
        page.keyboard.press("Escape")
        expect(page.locator("#sidebar")).not_to_be_in_viewport()
    finally:
        context.close()


def test_chinese_labels_render_with_a_cjk_font(page: Any) -> None:
    open_console(page, "support-agent")
    send(page, TICKET)
    label = form_card(page, "PENDING").locator("label", has_text="受影响系统")
    expect(label).to_have_count(1)
    # THEN the font stack resolves to a family that has the glyphs (the text is measured wider than boxes would be
    # and the family list names CJK-capable fonts)
    family = label.evaluate("e => getComputedStyle(e).fontFamily")
    assert "Noto Sans CJK SC" in family and "WenQuanYi Zen Hei" in family and "PingFang SC" in family
    assert page.evaluate("document.fonts.check('16px \"WenQuanYi Zen Hei\"', '受影响系统')")


def _form(status: str, number: int, **extra: Any) -> dict[str, Any]:
    filled = {
        "submittedValues": {"affectedSystem": "VPN"} if status == "SUBMITTED" else None,
        "submittedBy": "alice" if status == "SUBMITTED" else None,
        "submittedAt": "2026-12-01T09:00:00Z" if status == "SUBMITTED" else None,
        "declineReason": "not my team" if status == "DECLINED" else None,
        "expiresAt": "2026-12-01T10:00:00Z" if status == "EXPIRED" else None,
    }
    return form_card_entry(status, number, description="use when ... (model-facing)", **{**filled, **extra})


def _approval(status: str, number: int, **extra: Any) -> dict[str, Any]:
    return {
        "type": "agent_approval",
        "messageId": f"t1:approval:call-{number}",
        "turnId": "t1",
        "actionId": f"call-{number}",
        "toolName": "issue_refund",
        "arguments": {"orderId": f"O-{number}", "amount": 10 * number},
        "message": f"Refund {10 * number} for O-{number}?",
        "status": status,
        "actions": [],
        "decidedBy": None if status == "PENDING" else "bob",
        "decidedAt": None if status == "PENDING" else "2026-12-01T09:00:00Z",
        "reason": "duplicate" if status == "REJECTED" else None,
        "modelVisible": False,
        "version": 2,
        **extra,
    }


def test_every_card_state_is_accessible_and_screenshotted_canned(page: Any, artifacts: Path) -> None:
    canned = Canned(
        "canned-states",
        messages=[
            user(0, "Please **help**"),
            _form("SUBMITTED", 1),
            _form("DECLINED", 2),
            _form("EXPIRED", 3),
            _form("CANCELLED", 4),
            _approval("APPROVED", 5),
            _approval("REJECTED", 6),
            _approval("APPROVED", 7, editedArguments={"orderId": "O-7", "amount": 35}),
            ai(8, "Done: see the **cards** above.\n\n1. first\n2. second\n\n`code`"),
        ],
        turn={"turnId": "t1", "agentId": "assistant", "status": "COMPLETED", "version": 9},
    )
    canned.install(page)
    open_console(page, "assistant", conversation=canned.conversation)
    expect(page.get_by_test_id("form-card")).to_have_count(4)
    expect(page.get_by_test_id("approval-card")).to_have_count(3)
    # THEN an edited approval shows what was asked for and what was approved, the change marked
    diff = page.get_by_test_id("arguments-diff")
    expect(diff.locator("tr.changed")).to_have_count(1)
    expect(diff.locator("tr[data-field=amount] td.original")).to_have_text("70")
    expect(diff.locator("tr[data-field=amount] td.edited")).to_contain_text("35")
    for index, card in enumerate(page.locator("[data-testid=form-card], [data-testid=approval-card]").all()):
        status = card.get_attribute("data-status")
        card.screenshot(path=str(artifacts / f"card-state-{index}-{str(status).lower()}.png"))
    page.screenshot(path=str(artifacts / "console-every-card-state.png"), full_page=True)
    assert_accessible(page, "every read-only card state")
