"""The HTTP contract of several pending decisions: ``pendingActions``, approve with edits, fingerprints, respond.

The demo assistant, asked to do several things "at once", makes one message with two refunds to approve, a
form it asks for and a ticket whose tool asks for its form; each card is answered through its own route.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from tests.functional.harness import Deployment, HttpResponse, http_event

pytestmark = pytest.mark.integration

BATCH = "do these at once please"
MEETING = {"topic": "Incident review", "date": "2026-12-02", "startTime": "10:30", "attendees": 6}
TICKET = {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}


def _start(deployment: Deployment, conversation: str = "batch") -> dict[str, Any]:
    response = deployment.run(
        http_event(
            "http_start_turn.json",
            path=f"/conversations/{conversation}/turns",
            body={"input": BATCH, "agentId": "assistant"},
        )
    )
    assert response.status == 200, response.body
    view: dict[str, Any] = response.json
    return view


def _answer(deployment: Deployment, turn_id: str, action: str, verb: str, body: Any, key: str) -> HttpResponse:
    template = {"submit": "http_submit_form.json", "reject": "http_reject.json"}.get(verb, "http_approve.json")
    return deployment.submit(
        http_event(
            template,
            path=f"/turns/{turn_id}/actions/{action}/{verb}",
            body=body,
            headers={"idempotency-key": key},
        )
    )


def _turn(deployment: Deployment, turn_id: str) -> dict[str, Any]:
    response = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}"))
    assert response.status == 200, response.body
    view: dict[str, Any] = response.json
    return view


def _cards(deployment: Deployment, conversation: str = "batch") -> list[dict[str, Any]]:
    listed = deployment.run(http_event("http_list_messages.json", path=f"/conversations/{conversation}/messages"))
    return [m for m in listed.json["messages"] if m["type"] in ("agent_form", "agent_approval")]


def _fingerprint(arguments: dict[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def test_the_turn_view_lists_every_pending_action_in_order(deployment: Deployment) -> None:
    # GIVEN a turn whose model asked for four things that each need a person
    view = _start(deployment)

    # THEN the view lists them all in the order of the calls; "suspension" stays the first
    pending = view["pendingActions"]
    assert [(p["type"], p["toolName"]) for p in pending] == [
        ("TOOL_APPROVAL", "issue_refund"),
        ("TOOL_APPROVAL", "issue_refund"),
        ("USER_INPUT", "request_user_input"),
        ("USER_INPUT", "create_support_ticket"),
    ]
    assert view["suspension"] == pending[0]
    assert [p["inputTarget"] for p in pending] == [None, None, "MODEL", "TOOL"]
    # AND an approval carries the fingerprint of exactly the arguments shown, and the tool's schema to edit them
    refund = pending[0]
    assert refund["arguments"] == {"orderId": "O-1001", "amount": 42.5}
    assert refund["argumentsFingerprint"] == _fingerprint(refund["arguments"])
    assert refund["parametersSchema"]["required"] == ["orderId", "amount"]
    assert pending[2]["schema"]["required"] == ["topic", "date", "startTime", "attendees"]
    # AND every card is in the timeline, PENDING, at once
    assert [(c["actionId"], c["status"]) for c in _cards(deployment)] == [(p["actionId"], "PENDING") for p in pending]
    assert _cards(deployment)[0]["argumentsFingerprint"] == refund["argumentsFingerprint"]


def test_each_card_answered_on_its_own_and_the_turn_resumes_once(deployment: Deployment) -> None:
    # GIVEN the batch waiting
    view = _start(deployment)
    turn_id = view["turnId"]
    first, second, meeting, ticket = (p["actionId"] for p in view["pendingActions"])
    edited = {"orderId": "O-1001", "amount": 20}

    # WHEN each card is answered through its route: one refund approved with edits, one answered by a person
    # in the tool's place, the two forms submitted
    answers = [
        _answer(
            deployment,
            turn_id,
            first,
            "approve",
            {"arguments": edited, "argumentsFingerprint": view["pendingActions"][0]["argumentsFingerprint"]},
            "k1",
        ),
        _answer(deployment, turn_id, second, "respond", {"content": "refunded by phone already"}, "k2"),
        _answer(deployment, turn_id, ticket, "submit", {"data": TICKET}, "k3"),
    ]
    assert [a.status for a in answers] == [202, 202, 202], [a.body for a in answers]
    # THEN before the last answer nothing was handed to the worker, and the turn still lists what waits
    assert deployment.queue_depth() == 0
    assert [p["actionId"] for p in _turn(deployment, turn_id)["pendingActions"]] == [meeting]
    last = _answer(deployment, turn_id, meeting, "submit", {"data": MEETING}, "k4")
    assert last.status == 202, last.body
    assert deployment.queue_depth() == 1
    deployment.drain()

    # THEN the turn completed; the cards show the edit and the person's answer
    final = _turn(deployment, turn_id)
    assert final["status"] == "COMPLETED", final
    assert final["pendingActions"] == [] and final["suspension"] is None
    cards = {c["actionId"]: c for c in _cards(deployment)}
    assert cards[first]["status"] == "APPROVED"
    assert cards[first]["arguments"] == {"orderId": "O-1001", "amount": 42.5}
    assert cards[first]["editedArguments"] == edited
    assert cards[second]["status"] == "RESPONDED" and cards[second]["response"] == "refunded by phone already"
    listed = deployment.run(http_event("http_list_messages.json", path="/conversations/batch/messages")).json
    results = {m["toolCallId"]: m for m in listed["messages"] if m["type"] == "tool"}
    assert results[second]["content"]["status"] == "answered_by_person"
    assert results[second]["content"]["response"] == "refunded by phone already"
    assert results[second]["metadata"] == {"writtenBy": "person"}
    assert results[first]["content"]["status"] == "edited"
    assert results[first]["content"]["result"]["amount"] == 20


def test_refusals_are_problems_and_change_nothing(deployment: Deployment) -> None:
    # GIVEN the batch waiting
    view = _start(deployment)
    turn_id = view["turnId"]
    refund = view["pendingActions"][0]
    before = _turn(deployment, turn_id)["version"]

    # WHEN an approval names other arguments, edits break the tool's schema, or a respond has no content
    stale = _answer(deployment, turn_id, refund["actionId"], "approve", {"argumentsFingerprint": "0" * 64}, "r1")
    invalid = _answer(deployment, turn_id, refund["actionId"], "approve", {"arguments": {"orderId": "O-1001"}}, "r2")
    empty = _answer(deployment, turn_id, refund["actionId"], "respond", {"content": None}, "r3")
    on_form = _answer(deployment, turn_id, view["pendingActions"][2]["actionId"], "respond", {"content": "x"}, "r4")

    # THEN each is a problem document, and the turn is as it was
    assert (stale.status, stale.json["type"].rsplit("/", 1)[-1]) == (409, "arguments-changed")
    assert invalid.status == 422 and [e["path"] for e in invalid.json["errors"]] == ["/amount"]
    assert empty.status == 422
    assert on_form.status == 409 and on_form.json["type"].endswith("wrong-action-kind")
    for refused in (stale, invalid, empty, on_form):
        assert refused.headers["content-type"].startswith("application/problem+json")
    assert _turn(deployment, turn_id)["version"] == before


def test_the_openapi_document_describes_the_new_answers(deployment: Deployment) -> None:
    # GIVEN the API's own document
    document = deployment.run(http_event("http_openapi.json", path="/openapi.json")).json
    schemas = document["components"]["schemas"]

    # THEN respond is a route, approve takes arguments and a fingerprint, and a turn lists its pending actions
    respond = document["paths"]["/turns/{turnId}/actions/{actionId}/respond"]["post"]
    assert respond["operationId"] == "respondToToolCall"
    assert "Idempotency-Key" in [p["name"] for p in respond["parameters"]]
    assert {"arguments", "argumentsFingerprint"} <= set(schemas["ApproveRequest"]["properties"])
    assert schemas["RespondRequest"]["required"] == ["content"]
    assert "pendingActions" in schemas["TurnView"]["properties"]
    assert {"argumentsFingerprint", "parametersSchema"} <= set(schemas["SuspensionView"]["properties"])
