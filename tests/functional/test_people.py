"""Approvals by other people through the deployed handlers: the requester, two approvers of finance and an
outsider, each with their own verified token (``cognito:groups`` as API Gateway's JWT authorizer hands it to
Lambda: one string ``"[finance oncall]"``)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentturn.ports.audit import fingerprint
from agentturn.testing.clock import FakeClock
from tests.functional.harness import Deployment, HttpResponse, http_event
from tests.support.emulators import Emulator

pytestmark = pytest.mark.integration

REQUESTER, ANN, BEN, EVE = "requester-sub", "ann-sub", "ben-sub", "eve-sub"
GROUPS = {REQUESTER: "[finance]", ANN: "[finance]", BEN: "[finance oncall]", EVE: "[sales]"}


def _as(event: dict[str, Any], sub: str) -> dict[str, Any]:
    event["requestContext"]["authorizer"]["jwt"]["claims"]["cognito:groups"] = GROUPS[sub]
    return event


def _start(deployment: Deployment) -> str:
    response = deployment.run(
        _as(
            http_event(
                "http_start_turn.json",
                path="/conversations/refund/turns",
                body={"input": "refund order O-1 please", "agentId": "refunds"},
                sub=REQUESTER,
            ),
            REQUESTER,
        )
    )
    assert response.status == 200, response.body
    assert response.json["status"] == "WAITING_FOR_APPROVAL"
    turn_id: str = response.json["turnId"]
    return turn_id


def _approve(
    deployment: Deployment,
    sub: str,
    turn_id: str,
    key: str,
    *,
    action: str = "call-r",
    headers: dict[str, str | None] | None = None,
    body: Any = None,
) -> HttpResponse:
    return deployment.submit(
        _as(
            http_event(
                "http_approve.json",
                path=f"/turns/{turn_id}/actions/{action}/approve",
                body=body if body is not None else {},
                headers={"idempotency-key": key, **(headers or {})},
                sub=sub,
            ),
            sub,
        )
    )


def _get(deployment: Deployment, sub: str, path: str, query: dict[str, str] | None = None) -> HttpResponse:
    return deployment.run(_as(http_event("http_get_turn.json", path=path, sub=sub, query=query), sub))


def _version(deployment: Deployment, turn_id: str) -> int:
    version: int = _get(deployment, REQUESTER, f"/turns/{turn_id}").json["version"]
    return version


@pytest.fixture
def people(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> Deployment:
    monkeypatch.setenv("AGENTTURN_AGENTS", "tests.functional.agents:people_agents")
    return deployment


def test_two_approvers_of_finance_answer_from_their_inbox_and_the_outsider_learns_nothing(people: Deployment) -> None:
    turn_id = _start(people)
    # THEN the approvers' inboxes show the card of the requester's conversation (not its id); the outsider's
    # and the requester's (excluded) do not
    inbox = _get(people, ANN, "/inbox").json["items"]
    assert [(i["turnId"], i["actionId"], i["cardTitle"], i["requestedBy"]) for i in inbox] == [
        (turn_id, "call-r", "issue_refund", REQUESTER)
    ]
    assert inbox[0]["conversationId"] is None and inbox[0]["title"] == "refund order O-1 please"
    assert inbox[0]["waitingFor"] == "waiting for finance (0 of 2)"
    assert _get(people, EVE, "/inbox").json["items"] == []
    assert _get(people, REQUESTER, "/inbox").json["items"] == []

    # WHEN the outsider, and the requester (excluded), approve THEN both get the 404 of a card that does not exist
    missing = _approve(people, EVE, turn_id, "k-eve", action="no-such-call")
    outsider = _approve(people, EVE, turn_id, "k-eve")
    assert outsider.status == 404 and outsider.json["title"] == "Turn not found"
    assert missing.json["title"] == outsider.json["title"]
    requester = _approve(people, REQUESTER, turn_id, "k-req")
    assert requester.status == 404 and requester.json["title"] == "Action not found"
    assert (
        _approve(people, REQUESTER, turn_id, "k-req", action="nope").json["detail"].replace("nope", "call-r")
        == (requester.json["detail"])
    )
    version = _version(people, turn_id)

    # WHEN a forged group rides in a header or the body THEN it counts for nothing
    in_header = _approve(people, EVE, turn_id, "k-f", headers={"x-groups": "finance", "cognito-groups": "finance"})
    assert in_header.status == 404 and in_header.json["title"] == "Turn not found"
    in_body = _approve(people, EVE, turn_id, "k-g", body={"groups": ["finance"], "cognito:groups": "[finance]"})
    assert in_body.status == 422 and in_body.json["errors"][0]["path"] == "/groups"
    assert _version(people, turn_id) == version

    # WHEN the first approver approves THEN the owner's card reads "(1 of 2)"; she cannot approve again
    assert _approve(people, ANN, turn_id, "k-ann").status == 202
    again = _approve(people, ANN, turn_id, "k-ann-2")
    assert again.status == 409 and again.json["type"].endswith("already-decided")
    cards = _get(people, REQUESTER, "/conversations/refund/messages").json["messages"]
    card = next(m for m in cards if m["type"] == "agent_approval")
    assert card["status"] == "PENDING" and card["people"]["waitingFor"] == "waiting for finance (1 of 2)"

    # WHEN the second approver approves THEN the worker runs the refund; the requester's page shows who approved
    assert _approve(people, BEN, turn_id, "k-ben").status == 202
    people.drain()
    done = _get(people, REQUESTER, f"/turns/{turn_id}").json
    assert done["status"] == "COMPLETED"
    cards = _get(people, REQUESTER, "/conversations/refund/messages").json["messages"]
    card = next(m for m in cards if m["type"] == "agent_approval")
    assert card["status"] == "APPROVED" and [d["subject"] for d in card["people"]["decisions"]] == [ANN, BEN]
    assert _get(people, ANN, "/inbox").json["items"] == []

    # AND the audit: one record per decision, for the owner and the approvers, a 404 for the outsider
    audit = _get(people, REQUESTER, f"/turns/{turn_id}/audit").json["records"]
    assert [(r["subject"], r["groups"], r["outcome"], r["waitingFor"]) for r in audit] == [
        (ANN, ["finance"], "PENDING", "waiting for finance (1 of 2)"),
        (BEN, ["finance"], "APPROVED", None),
    ]
    assert audit[0]["shown"]["argumentsFingerprint"] and audit[0]["arguments"] == {"amount": 4200}
    # AND beside the decisions, what the approved refund did (its own record: the decisions are as made)
    outcomes = _get(people, REQUESTER, f"/turns/{turn_id}/audit").json["outcomes"]
    assert [(o["actionId"], o["toolName"], o["outcome"]) for o in outcomes] == [("call-r", "issue_refund", "SUCCEEDED")]
    assert outcomes[0]["resultFingerprint"] == fingerprint({"refunded": 4200})
    assert _get(people, BEN, f"/turns/{turn_id}/audit").status == 200
    assert _get(people, EVE, f"/turns/{turn_id}/audit").status == 404


def test_a_retry_of_an_approvers_answer_replays_and_another_persons_key_changes_nothing(people: Deployment) -> None:
    turn_id = _start(people)
    first = _approve(people, ANN, turn_id, "k-1")
    assert first.status == 202
    # WHEN she retries with the same key THEN it is the same answer, applied once
    assert _approve(people, ANN, turn_id, "k-1").json == first.json
    version = _version(people, turn_id)
    # WHEN another approver sends her key THEN it is refused, and nothing changes
    reused = _approve(people, BEN, turn_id, "k-1")
    assert reused.status == 422 and _version(people, turn_id) == version
    # WHEN the second approves and settles the card, a retry of that answer still replays (not a 404)
    second = _approve(people, BEN, turn_id, "k-2")
    assert second.status == 202
    assert _approve(people, BEN, turn_id, "k-2").json == second.json


def test_an_inbox_cursor_is_the_callers_alone(people: Deployment) -> None:
    turn_ids = [_start_in(people, f"c{n}") for n in range(3)]
    page = _get(people, ANN, "/inbox", {"limit": "2"}).json
    assert len(page["items"]) == 2 and page["nextCursor"]
    rest = _get(people, ANN, "/inbox", {"limit": "2", "cursor": page["nextCursor"]}).json
    assert sorted(i["turnId"] for i in [*page["items"], *rest["items"]]) == sorted(turn_ids)
    assert rest.get("nextCursor") is None
    # WHEN another person presents her cursor THEN a 422 names the cursor; it shows them nothing of hers
    stolen = _get(people, BEN, "/inbox", {"limit": "2", "cursor": page["nextCursor"]})
    assert stolen.status == 422 and stolen.json["errors"][0]["path"] == "/cursor"


def _start_in(deployment: Deployment, conversation: str) -> str:
    response = deployment.run(
        _as(
            http_event(
                "http_start_turn.json",
                path=f"/conversations/{conversation}/turns",
                body={"input": f"refund for {conversation}", "agentId": "refunds"},
                sub=REQUESTER,
            ),
            REQUESTER,
        )
    )
    assert response.status == 200, response.body
    turn_id: str = response.json["turnId"]
    return turn_id


def test_a_deployment_that_lists_owner_cards_shows_the_callers_own_form_in_their_inbox(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a deployment that lists cards without approvers in their owner's inbox (two index writes per cycle)
    monkeypatch.setenv("AGENTTURN_INBOX_OWNER_CARDS", "1")
    started = deployment.run(
        http_event(
            "http_start_turn.json",
            path="/conversations/ticket/turns",
            body={"input": "My laptop will not boot, please open a ticket"},
        )
    )
    assert started.status == 200 and started.json["status"] == "WAITING_FOR_USER", started.body
    # WHEN the owner reads their inbox THEN their own form is there, with their conversation id, and no sort key
    items = deployment.run(http_event("http_get_turn.json", path="/inbox")).json["items"]
    assert [(i["turnId"], i["conversationId"], i["type"]) for i in items] == [
        (started.json["turnId"], "ticket", "agent_form")
    ]
    assert "sortKey" not in items[0]["card"] and items[0]["since"]
    # AND another person sees none of it
    assert deployment.run(http_event("http_get_turn.json", path="/inbox", sub="someone-else")).json["items"] == []


def _ag_ui_events(response: HttpResponse) -> list[dict[str, Any]]:
    import json

    assert response.status == 200, response.body
    return [json.loads(frame.removeprefix("data: ")) for frame in response.body.split("\n\n") if frame]


def test_ag_ui_resume_applies_the_same_rules(people: Deployment) -> None:
    # GIVEN the requester's AG-UI thread, its refund waiting for two of finance (the requester excluded)
    def run(body: dict[str, Any]) -> list[dict[str, Any]]:
        event = http_event("http_start_turn.json", path="/ag-ui/refunds", body=body, sub=REQUESTER)
        return _ag_ui_events(people.run(_as(event, REQUESTER)))

    asked = run({"threadId": "agui-q", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "refund"}]})
    [interrupt] = asked[-1]["outcome"]["interrupts"]
    turn_id = interrupt["metadata"]["agentturn"]["turnId"]
    version = _version(people, turn_id)
    # WHEN the requester approves through resume[] THEN the run refuses it as an interrupt that is not open
    resumed = run(
        {
            "threadId": "agui-q",
            "runId": "r2",
            "messages": [],
            "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}],
        }
    )
    assert resumed[-1]["type"] == "RUN_ERROR" and resumed[-1]["code"] == "agentturn:resume_unknown_interrupt"
    assert "has no action" in resumed[-1]["message"]
    # AND nothing changed: the card still waits for finance
    assert _version(people, turn_id) == version
    assert _get(people, ANN, "/inbox").json["items"][0]["turnId"] == turn_id


BOSS = "boss-sub"
GROUPS[BOSS] = "[managers]"
HOUR = 3600.0


@pytest.fixture
def escalating(moto_server: Emulator, monkeypatch: pytest.MonkeyPatch) -> tuple[Deployment, FakeClock]:
    """A deployment whose handlers read an injected clock, refunds waiting for finance, managers after 4 h."""
    monkeypatch.setenv("AGENTTURN_AGENTS", "tests.functional.agents:escalating_people_agents")
    clock = FakeClock(start=time.time())
    return Deployment(moto_server, monkeypatch, clock=clock), clock


def _stored(deployment: Deployment) -> list[dict[str, Any]]:
    """Every item of the deployment's turn and conversation tables (the card, its inbox entries, the audit)."""
    items: list[dict[str, Any]] = []
    for table in (deployment.names.turns_table, deployment.names.conversations_table):
        items += deployment.dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted(items, key=repr)


def test_an_approver_of_the_group_a_card_escalated_away_from_gets_the_404_of_a_missing_card(
    escalating: tuple[Deployment, FakeClock],
) -> None:
    deployment, clock = escalating
    # GIVEN a refund waiting for finance, and the sweeper run after 4 h: the card escalated to managers
    turn_id = _start(deployment)
    clock.advance(4 * HOUR + 1)
    deployment.sweeper()
    assert [i["turnId"] for i in _get(deployment, BOSS, "/inbox").json["items"]] == [turn_id]
    assert _get(deployment, ANN, "/inbox").json["items"] == []
    before = _stored(deployment)

    # WHEN finance's approver approves it, and approves an action that does not exist
    late = _approve(deployment, ANN, turn_id, "k-ann")
    missing = _approve(deployment, ANN, turn_id, "k-ann-2", action="no-such-call")

    # THEN the same 404 problem+json for both (only the action's id differs), and nothing stored changed
    assert late.status == missing.status == 404
    assert late.headers["content-type"].startswith("application/problem+json")
    assert late.json == {**missing.json, "detail": missing.json["detail"].replace("no-such-call", "call-r")}
    assert _stored(deployment) == before

    # WHEN a manager approves THEN it is accepted and the refund runs
    assert _approve(deployment, BOSS, turn_id, "k-boss").status == 202
    deployment.drain()
    assert _get(deployment, REQUESTER, f"/turns/{turn_id}").json["status"] == "COMPLETED"
