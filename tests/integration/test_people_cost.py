"""What approvals by other people cost on DynamoDB Local (measured, printed with ``-s``; the bounds are the
design's, not timings): a two-approver approval, and one inbox page for a person with 1,000 pending cards."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn import ApprovalMessage, ApprovalStatus, Approvers, Principal, ResumeCommand, Runner
from agentturn.state.approvers import Assignment
from agentturn.timeline.inbox import inbox_page
from tests.contract.aws_adapters import fresh_dynamodb_adapters
from tests.scenarios.test_people import refund_agent
from tests.support.clock import FakeClock
from tests.support.cycle_cost import CapacityMeter, Tally
from tests.support.emulators import Emulator

pytestmark = pytest.mark.integration


def _meter(*clients: Any) -> CapacityMeter:
    meter = CapacityMeter()
    for client in {id(c): c for c in clients}.values():
        meter.attach_dynamodb(client)
    return meter


def _say(what: str, tally: Tally) -> None:
    print(
        f"\n{what}: {len(tally.requests)} requests, {tally.write_units:g} write units, {tally.read_units:g} read units"
    )
    print("  " + ", ".join(f"{r.operation}{'/' + r.index if r.index else ''}" for r in tally.requests))


def test_a_two_approver_approval(dynamodb_local: Emulator, moto_server: Emulator) -> None:
    clock = FakeClock()
    store, memory = fresh_dynamodb_adapters(dynamodb_local, moto_server, clock)
    agent = refund_agent([])
    runner = Runner(store=store, chat_memory=memory, agents=[agent], clock=clock)
    waiting = runner.run(agent, "requester/c", "refund O-1001", metadata={"ownerId": "requester"})
    meter = _meter(store.client, memory.client)
    meter.reset()
    # WHEN two people of finance approve, one after the other
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(Principal("ann", frozenset({"finance"}))))
    first = meter.reset()
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(Principal("ben", frozenset({"finance"}))))
    second = meter.reset()
    _say("first approval (1 of 2)", first)
    _say("second approval (2 of 2)", second)
    # THEN each is a read, the conditional write of the turn, the card's compare-and-set and the audit record's put
    for tally in (first, second):
        assert [r.operation for r in tally.requests] == ["GetItem", "UpdateItem", "PutItem", "PutItem"]
    assert first.write_units + second.write_units <= 12


def test_an_inbox_page_for_a_person_with_a_thousand_pending_cards(
    dynamodb_local: Emulator, moto_server: Emulator
) -> None:
    clock = FakeClock()
    _, memory = fresh_dynamodb_adapters(dynamodb_local, moto_server, clock)
    people = Assignment(
        approvers=Approvers(groups=("finance",)), requested_by="requester", asked_at="2026-12-05T00:00:00Z"
    )
    for n in range(1000):
        turn_id = f"turn{n:04d}"
        card = ApprovalMessage(
            message_id=f"{turn_id}:approval:call-r",
            turn_id=turn_id,
            sort_key=f"2026-12-05T00:00:00Z#{turn_id}#0001",
            action_id="call-r",
            tool_name="issue_refund",
            arguments={"orderId": f"O-{n}", "amount": 4200},
            people=people,
            expires_at=f"2026-12-{6 + n % 20:02d}T00:00:00Z",
        )
        memory(f"requester/c{n % 50}").append(card)
    meter = _meter(memory.client)
    ann = Principal("ann", frozenset({"finance", "oncall"}))
    meter.reset()
    page = inbox_page(memory, ann, 20, None)
    first = meter.reset()
    _say("inbox page of 20 (ann: herself, finance, oncall)", first)
    assert len(page.entries) == 20 and page.cursor is not None
    assert [r.operation for r in first.requests] == ["Query"] * 3
    # AND every card, page by page (100 a page), each once, deadline first
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        got = inbox_page(memory, ann, 100, cursor)
        seen += [e.card.message_id for e in got.entries]
        pages += 1
        if got.cursor is None:
            break
        cursor = got.cursor
    walk = meter.reset()
    _say(f"whole inbox of 1,000 in {pages} pages of 100", walk)
    assert len(seen) == len(set(seen)) == 1000
    assert all(r.operation == "Query" for r in walk.requests)


def test_a_card_for_several_principals_is_in_each_inbox_until_it_settles(
    dynamodb_local: Emulator, moto_server: Emulator
) -> None:
    # GIVEN a card waiting for two users and a group (the card item carries the first; one entry each for the rest)
    clock = FakeClock()
    _, memory = fresh_dynamodb_adapters(dynamodb_local, moto_server, clock)
    people = Assignment(approvers=Approvers(users=("ann", "bob"), groups=("finance",)), requested_by="requester")
    card = ApprovalMessage(
        message_id="t1:approval:call-r",
        turn_id="t1",
        sort_key="2026-12-05T00:00:00Z#t1#0001",
        action_id="call-r",
        tool_name="issue_refund",
        people=people,
    )
    conversation = memory("requester/c")
    conversation.append(card)
    everyone = {
        "ann": Principal("ann"),
        "bob": Principal("bob"),
        "carol": Principal("carol", frozenset({"finance"})),
        "both": Principal("ann", frozenset({"finance"})),
    }
    # THEN each of them finds it once (ann through herself and finance: once), and an outsider does not
    for principal in everyone.values():
        assert [e.card.message_id for e in inbox_page(memory, principal, 10, None).entries] == [card.message_id]
    assert inbox_page(memory, Principal("eve", frozenset({"sales"})), 10, None).entries == []
    # WHEN the card settles THEN it leaves every inbox
    settled = card.model_copy(update={"status": ApprovalStatus.APPROVED, "actions": [], "version": 2})
    assert conversation.update_message(settled, 1)
    for principal in everyone.values():
        assert inbox_page(memory, principal, 10, None).entries == []
