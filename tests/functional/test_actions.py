"""The submit Lambda's answers: idempotency, approvals, cancellation, and the AWS requests a submit costs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.functional.harness import Deployment, HttpResponse, http_event

pytestmark = pytest.mark.integration

TICKET = "create a high priority login incident ticket"
FORM = {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}


def _start(
    deployment: Deployment, text: str = TICKET, *, agent: str | None = None, conversation: str = "c1"
) -> dict[str, Any]:
    body: dict[str, Any] = {"input": text}
    if agent is not None:
        body["agentId"] = agent
    response = deployment.run(
        http_event("http_start_turn.json", path=f"/conversations/{conversation}/turns", body=body)
    )
    assert response.status == 200, response.body
    result: dict[str, Any] = response.json
    return result


def _submit(deployment: Deployment, turn: dict[str, Any], data: dict[str, Any], key: str) -> HttpResponse:
    action = turn["suspension"]["actionId"]
    return deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{turn['turnId']}/actions/{action}/submit",
            body={"data": data},
            headers={"idempotency-key": key},
        )
    )


def _turn(deployment: Deployment, turn_id: str) -> dict[str, Any]:
    response = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}"))
    assert response.status == 200
    result: dict[str, Any] = response.json
    return result


def test_a_retried_submit_replays_the_first_answer_byte_for_byte(deployment: Deployment) -> None:
    # GIVEN a waiting turn and an accepted submission
    turn = _start(deployment)
    first = _submit(deployment, turn, FORM, "key-1")
    assert first.status == 202

    # WHEN the client retries with the same key and body — before and after the worker ran
    retry = _submit(deployment, turn, FORM, "key-1")
    deployment.drain()
    late_retry = _submit(deployment, turn, FORM, "key-1")

    # THEN every answer is the first one, byte for byte, and the turn advanced exactly once
    assert retry.status == late_retry.status == 202
    assert retry.body == first.body == late_retry.body
    final = _turn(deployment, turn["turnId"])
    assert final["status"] == "COMPLETED"
    assert final["toolCallCount"] == 1
    messages = deployment.run(http_event("http_list_messages.json", path="/conversations/c1/messages")).json
    assert sum(1 for m in messages["messages"] if m["type"] == "agent_form") == 1
    assert deployment.queue_depth() == 0


def test_the_same_key_with_another_body_is_refused_and_changes_nothing(deployment: Deployment) -> None:
    # GIVEN an accepted submission
    turn = _start(deployment)
    assert _submit(deployment, turn, FORM, "key-1").status == 202
    before = deployment.dump()

    # WHEN the same key comes with other data
    response = _submit(deployment, turn, {**FORM, "impactScope": "ONE_USER"}, "key-1")

    # THEN 422 and nothing stored changed
    assert response.status == 422
    assert response.json["type"].endswith("/idempotency-key-reused")
    assert deployment.dump() == before


def test_a_submit_costs_at_most_five_aws_requests(deployment: Deployment) -> None:
    # GIVEN a turn waiting on a tool-requested form and one waiting on a model-requested form
    ticket = _start(deployment, conversation="c-ticket")
    meeting = _start(deployment, "book a meeting room", agent="meeting-agent", conversation="c-meeting")
    log = deployment.count_requests()

    # WHEN each is submitted (and one is retried)
    ticket_calls = log.during(lambda: _submit(deployment, ticket, FORM, "k-ticket"))
    meeting_data = {"topic": "Q3", "date": "2026-12-03", "startTime": "10:00", "attendees": 4}
    meeting_calls = log.during(lambda: _submit(deployment, meeting, meeting_data, "k-meeting"))
    replay_calls = log.during(lambda: _submit(deployment, ticket, FORM, "k-ticket"))

    # THEN DESIGN's floor plus the seed's card write: read, one conditional snapshot write, the card's
    # compare-and-set, one send
    assert Counter(ticket_calls) == Counter(
        {"dynamodb.GetItem": 1, "dynamodb.UpdateItem": 1, "dynamodb.PutItem": 1, "sqs.SendMessage": 1}
    ), ticket_calls
    assert len(meeting_calls) <= 5, meeting_calls
    assert Counter(meeting_calls)["sqs.SendMessage"] == 1
    # a replay reads the turn and the timeline (the first attempt may have died before its card write), writes
    # nothing, and re-sends (in case the first attempt died before its send)
    assert Counter(replay_calls) == Counter({"dynamodb.GetItem": 1, "dynamodb.Query": 2, "sqs.SendMessage": 1}), (
        replay_calls
    )
    print(f"\nAWS requests per submit: ticket {ticket_calls}, meeting {meeting_calls}, replay {replay_calls}")


@pytest.mark.parametrize("answer", ["approve", "reject"])
def test_an_approval_answer_costs_at_most_five_aws_requests(deployment: Deployment, answer: str) -> None:
    # GIVEN a refund waiting for approval
    turn = _start(deployment, "please refund order O-1001", agent="refund-agent")
    action = turn["suspension"]["actionId"]
    log = deployment.count_requests()

    # WHEN it is approved or rejected
    event = http_event(f"http_{answer}.json", path=f"/turns/{turn['turnId']}/actions/{action}/{answer}")
    calls = log.during(lambda: deployment.submit(event))

    # THEN read, snapshot write, card CAS, (the rejection's tool result), one send
    assert len(calls) <= 5, calls
    assert Counter(calls)["sqs.SendMessage"] == 1
    assert Counter(calls)["dynamodb.GetItem"] == 1
    print(f"\nAWS requests per {answer}: {calls}")


def _approval_turn(deployment: Deployment) -> dict[str, Any]:
    turn = _start(deployment, "please refund order O-1001", agent="refund-agent")
    assert turn["status"] == "WAITING_FOR_APPROVAL"
    assert turn["suspension"]["type"] == "TOOL_APPROVAL"
    assert turn["suspension"]["arguments"] == {"orderId": "O-1001", "amount": 42.5}
    return turn


def test_an_approved_refund_runs_its_tool_once(deployment: Deployment) -> None:
    # GIVEN a refund waiting for approval
    turn = _approval_turn(deployment)
    action = turn["suspension"]["actionId"]

    # WHEN it is approved (no body) and the worker runs
    event = http_event("http_approve.json", path=f"/turns/{turn['turnId']}/actions/{action}/approve")
    approved = deployment.submit(event)
    assert approved.status == 202, approved.body
    deployment.drain()

    # THEN the refund was issued and the card says who approved it
    final = _turn(deployment, turn["turnId"])
    assert final["status"] == "COMPLETED"
    assert "Refund" in final["finalOutput"]
    cards = [
        m
        for m in deployment.run(http_event("http_list_messages.json", path="/conversations/c1/messages")).json[
            "messages"
        ]
        if m["type"] == "agent_approval"
    ]
    assert [(c["status"], c["decidedBy"]) for c in cards] == [("APPROVED", "8f5e1c2a-7d3b-4a6e-9c1f-2b7d4e6a8c10")]


def test_a_rejected_refund_does_not_run_and_the_model_is_told_why(deployment: Deployment) -> None:
    # GIVEN a refund waiting for approval
    turn = _approval_turn(deployment)
    action = turn["suspension"]["actionId"]

    # WHEN it is rejected with a reason
    rejected = deployment.submit(
        http_event(
            "http_reject.json",
            path=f"/turns/{turn['turnId']}/actions/{action}/reject",
            body={"reason": "wrong order"},
        )
    )
    assert rejected.status == 202, rejected.body
    deployment.drain()

    # THEN the turn ends with the model explaining that it did not refund
    final = _turn(deployment, turn["turnId"])
    assert final["status"] == "COMPLETED"
    assert "did not run issue_refund" in final["finalOutput"]
    assert "wrong order" in final["finalOutput"]


def test_cancel_ends_a_waiting_turn_and_a_retry_answers_the_same(deployment: Deployment) -> None:
    # GIVEN a turn waiting on a form
    turn = _start(deployment)
    event = http_event("http_cancel.json", path=f"/turns/{turn['turnId']}/cancel")

    # WHEN it is cancelled, then the cancel is retried
    first = deployment.submit(event)
    stored = deployment.dump()
    retry = deployment.submit(event)

    # THEN both answers are the same 202, the retry wrote nothing, the turn and its card are CANCELLED
    assert first.status == retry.status == 202
    assert first.body == retry.body
    assert first.json == {"turnId": turn["turnId"], "status": "CANCEL_REQUESTED"}
    assert deployment.dump() == stored
    final = _turn(deployment, turn["turnId"])
    assert final["status"] == "CANCELLED"
    assert final["cancelRequested"] is True
    messages = deployment.run(http_event("http_list_messages.json", path="/conversations/c1/messages")).json
    card = next(m for m in messages["messages"] if m["type"] == "agent_form")
    assert (card["status"], card["actions"]) == ("CANCELLED", [])
    assert messages["activeTurnId"] is None

    # AND a new turn can start in the conversation
    assert _start(deployment, "hello")["status"] == "COMPLETED"


def _throttle_next_update(client: Any) -> list[str]:
    """Inside the SDK: the next UpdateItem of ``client`` fails as a throttled write does once botocore's own
    retries ran out (the request never reaches the table). Returns the log of what was throttled."""
    throttled: list[str] = []

    def throttle(params: dict[str, Any], **kwargs: Any) -> None:
        if throttled:
            return
        throttled.append(str(params.get("UpdateExpression", "")))
        error = {"Code": "ThrottlingException", "Message": "Rate of requests exceeds the allowed throughput."}
        raise ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}, "UpdateItem")

    client.meta.events.register("provide-client-params.dynamodb.UpdateItem", throttle)
    return throttled


def test_a_cancel_throttled_once_is_finished_by_its_retry(deployment: Deployment) -> None:
    # GIVEN a turn waiting on a form, and the submit Lambda's next DynamoDB write throttled
    turn = _start(deployment)
    event = http_event("http_cancel.json", path=f"/turns/{turn['turnId']}/cancel")
    throttled = _throttle_next_update(deployment.submit_app.api.services.store.client)
    before = deployment.dump()

    # WHEN the person cancels: the first answer is a 503 problem, and nothing changed
    first = deployment.submit(event)
    assert first.status == 503, first.body
    assert first.headers["content-type"] == "application/problem+json"
    assert len(throttled) == 1
    assert deployment.dump() == before

    # WHEN the client retries
    retry = deployment.submit(event)

    # THEN the cancel finished: turn and card CANCELLED, conversation free for a new turn
    assert retry.status == 202, retry.body
    assert retry.json == {"turnId": turn["turnId"], "status": "CANCEL_REQUESTED"}
    assert _turn(deployment, turn["turnId"])["status"] == "CANCELLED"
    messages = deployment.run(http_event("http_list_messages.json", path="/conversations/c1/messages")).json
    card = next(m for m in messages["messages"] if m["type"] == "agent_form")
    assert (card["status"], card["actions"]) == ("CANCELLED", [])
    assert messages["activeTurnId"] is None
    assert _start(deployment, "hello")["status"] == "COMPLETED"


def test_a_cancel_retried_on_a_turn_left_waiting_with_the_flag_finishes_it(deployment: Deployment) -> None:
    # GIVEN a waiting turn whose cancel flag was set by an attempt that died before saving it CANCELLED
    turn = _start(deployment)
    deployment.submit_app.api.services.store.request_cancel(turn["turnId"])
    assert _turn(deployment, turn["turnId"])["status"] == "WAITING_FOR_USER"

    # WHEN the cancel is retried through the API
    retry = deployment.submit(http_event("http_cancel.json", path=f"/turns/{turn['turnId']}/cancel"))

    # THEN it finishes the cancel instead of answering 202 and doing nothing
    assert retry.status == 202, retry.body
    assert _turn(deployment, turn["turnId"])["status"] == "CANCELLED"
    assert _start(deployment, "hello")["status"] == "COMPLETED"


def test_a_submission_after_cancel_is_refused(deployment: Deployment) -> None:
    turn = _start(deployment)
    assert deployment.submit(http_event("http_cancel.json", path=f"/turns/{turn['turnId']}/cancel")).status == 202
    before = deployment.dump()
    response = _submit(deployment, turn, FORM, "late-key")
    assert response.status == 409
    assert response.json["type"].endswith("/turn-terminal")
    assert deployment.dump() == before


def test_a_declined_form_closes_its_card_and_the_turn_goes_on_without_the_tool(deployment: Deployment) -> None:
    # GIVEN a turn waiting on the support-ticket form
    turn = _start(deployment)
    action = turn["suspension"]["actionId"]

    # WHEN the person declines the form, and the worker resumes the turn
    declined = deployment.submit(
        http_event("http_decline.json", path=f"/turns/{turn['turnId']}/actions/{action}/decline")
    )
    assert declined.status == 202, declined.body
    deployment.drain()

    # THEN the card is DECLINED with the reason, and the model was told the tool did not run
    messages = deployment.run(http_event("http_list_messages.json", path="/conversations/c1/messages")).json
    card = next(m for m in messages["messages"] if m["type"] == "agent_form")
    assert (card["status"], card["declineReason"], card["actions"]) == (
        "DECLINED",
        "I will call the help desk instead",
        [],
    )
    final = _turn(deployment, turn["turnId"])
    assert final["status"] == "COMPLETED"
    assert "declined" in final["finalOutput"]
