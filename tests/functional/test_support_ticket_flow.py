"""The seed's support-ticket scenario through the deployed handlers: run → submit → worker → completed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentturn import FormMessage, FormStatus
from agentturn.engine.handoff import unpack_snapshot
from agentturn.ports.serializer import JSON
from tests.functional.harness import Deployment, FakeLambdaContext, http_event

pytestmark = pytest.mark.integration

TICKET_INPUT = "帮我创建一个高优先级的登录故障工单 (create a high priority login incident ticket)"
FORM_DATA = {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}


def _start(deployment: Deployment, conversation: str = "support-1", **kwargs: Any) -> dict[str, Any]:
    response = deployment.run(
        http_event(
            "http_start_turn.json",
            path=f"/conversations/{conversation}/turns",
            body={"input": TICKET_INPUT, "metadata": {"channel": "web"}},
            **kwargs,
        )
    )
    assert response.status == 200, response.body
    body: dict[str, Any] = response.json
    return body


def test_support_ticket_runs_to_completion_through_run_submit_and_worker(deployment: Deployment) -> None:
    # GIVEN a user asks for a ticket without the details the tool needs
    turn = _start(deployment)

    # THEN the run Lambda answers 200 with the turn waiting on the frozen support-ticket form
    assert turn["status"] == "WAITING_FOR_USER"
    assert turn["phase"] == "TOOLS"
    assert turn["conversationId"] == "support-1"
    assert turn["metadata"] == {"channel": "web"}
    suspension = turn["suspension"]
    assert isinstance(suspension, dict)
    assert suspension["formKey"] == "support_ticket_details"
    assert suspension["inputTarget"] == "TOOL"
    assert suspension["schema"]["required"] == ["affectedSystem", "impactScope"]
    assert [c["name"] for c in turn["pendingToolCalls"]] == ["create_support_ticket"]
    assert not {"toolStates", "acceptedRequests", "projection", "ownerId"} & set(turn)
    turn_id, action_id = str(turn["turnId"]), str(suspension["actionId"])

    # WHEN the user submits the form through the submit Lambda
    submitted = deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{turn_id}/actions/{action_id}/submit",
            body={"data": FORM_DATA},
        )
    )

    # THEN it is accepted for asynchronous resumption, and exactly one resume message is queued
    assert submitted.status == 202, submitted.body
    assert submitted.json == {
        "turnId": turn_id,
        "actionId": action_id,
        "status": "ACCEPTED",
        "version": submitted.json["version"],
        "acceptedAt": submitted.json["acceptedAt"],
    }
    assert submitted.headers["location"] == f"/turns/{turn_id}"
    messages = deployment.receive()
    # ... carrying the snapshot just saved, sealed with the deployment's key (the worker starts from it without
    # a claim)
    [body] = [json.loads(m["Body"]) for m in messages]
    assert body == {
        "turnId": turn_id,
        "version": submitted.json["version"],
        "snapshot": body["snapshot"],
        "seal": body["seal"],
    }
    services = deployment.worker_app.services.get()
    stored = services.store.load(turn_id)
    carried = unpack_snapshot(body["snapshot"], body["seal"], turn_id, body["version"], JSON, services.handoff_key())
    assert carried is not None
    assert carried.model_copy(update={"projection": stored.projection}) == stored

    # ... and the stored timeline already holds the card answered (the seed's rule: before the submit returned)
    stored_card = (
        deployment.worker_app.services.get()
        .chat_memory(stored.conversation_id)
        .get_message(f"{turn_id}:input:{action_id}")
    )
    assert isinstance(stored_card, FormMessage) and stored_card.status is FormStatus.SUBMITTED
    waiting_view = deployment.run(
        http_event("http_list_messages.json", path="/conversations/support-1/messages", query={"limit": "50"})
    ).json
    [shown] = [m for m in waiting_view["messages"] if m["type"] == "agent_form"]
    assert (shown["status"], shown["submittedValues"], waiting_view["activeTurnId"]) == (
        "SUBMITTED",
        FORM_DATA,
        turn_id,
    )

    # WHEN the worker gets the message actually received from the queue
    result = deployment.deliver(messages)

    # THEN it reports no failure and the turn is completed with the ticket created from the form data
    assert result == {"batchItemFailures": []}
    final = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}"))
    assert final.status == 200
    assert final.json["status"] == "COMPLETED"
    assert final.json["suspension"] is None
    assert "统一登录系统" in final.json["finalOutput"]
    # The reply names the option as the card showed it (its label), not the stored value
    assert "全部用户 (All users)" in final.json["finalOutput"]
    assert deployment.queue_depth() == 0

    # AND the timeline shows the card SUBMITTED (read-only, with who and what) and the final answer
    timeline = deployment.run(
        http_event("http_list_messages.json", path="/conversations/support-1/messages", query={"limit": "50"})
    )
    assert timeline.status == 200
    assert timeline.json["activeTurnId"] is None
    entries = timeline.json["messages"]
    cards = [m for m in entries if m["type"] == "agent_form"]
    assert len(cards) == 1
    card = cards[0]
    assert card["messageId"] == f"{turn_id}:input:{action_id}"
    assert card["status"] == "SUBMITTED"
    assert card["actions"] == []
    assert card["submittedValues"] == FORM_DATA
    assert card["submittedBy"] == "8f5e1c2a-7d3b-4a6e-9c1f-2b7d4e6a8c10"
    assert card["modelVisible"] is False
    assert entries[0] == {**entries[0], "type": "user", "content": TICKET_INPUT}
    assert entries[-1]["type"] == "ai"
    assert entries[-1]["content"] == final.json["finalOutput"]
    assert all("sortKey" not in m for m in entries)


def test_the_run_lambda_hands_a_turn_to_the_worker_when_its_time_runs_out(deployment: Deployment) -> None:
    # GIVEN a run Lambda invocation with almost no time left
    starved = FakeLambdaContext(budget_ms=50)

    # WHEN a turn is started
    response = deployment.run(http_event("http_start_turn.json", body={"input": TICKET_INPUT}), starved)

    # THEN it answers 202 with the turn saved runnable, and the turn is on the queue
    assert response.status == 202, response.body
    assert response.json["status"] in ("READY", "RUNNING")
    assert response.headers["location"] == f"/turns/{response.json['turnId']}"
    messages = deployment.receive()
    assert [json.loads(m["Body"])["turnId"] for m in messages] == [response.json["turnId"]]

    # WHEN the worker processes that message
    assert deployment.deliver(messages) == {"batchItemFailures": []}

    # THEN the turn has run on to the form, exactly as a synchronous run would have
    turn = deployment.run(http_event("http_get_turn.json", path=f"/turns/{response.json['turnId']}"))
    assert turn.json["status"] == "WAITING_FOR_USER"
    assert turn.json["suspension"]["formKey"] == "support_ticket_details"
    assert deployment.queue_depth() == 0


def test_a_worker_out_of_time_hands_the_turn_on_to_the_next_delivery(deployment: Deployment) -> None:
    # GIVEN a turn handed to the worker
    response = deployment.run(
        http_event("http_start_turn.json", body={"input": TICKET_INPUT}), FakeLambdaContext(budget_ms=50)
    )
    turn_id = response.json["turnId"]

    # WHEN a worker invocation with no time left gets it
    first = deployment.deliver(deployment.receive(), FakeLambdaContext(budget_ms=50))

    # THEN the record is acknowledged and the turn is enqueued again, unchanged in substance
    assert first == {"batchItemFailures": []}
    again = deployment.receive()
    assert [json.loads(m["Body"])["turnId"] for m in again] == [turn_id]

    # AND a worker with time finishes the step
    deployment.deliver(again)
    turn = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}"))
    assert turn.json["status"] == "WAITING_FOR_USER"


def test_a_meeting_room_booking_resumes_through_the_model_and_books_once(deployment: Deployment) -> None:
    # GIVEN the meeting agent asks for its form (the model-requested entry point)
    started = deployment.run(
        http_event(
            "http_start_turn_base64.json",
            path="/conversations/meeting-1/turns",
            body={"input": "book a meeting room", "agentId": "meeting-agent"},
            base64_body=True,
        )
    )
    assert started.status == 200, started.body
    assert started.json["suspension"]["inputTarget"] == "MODEL"
    turn_id, action_id = started.json["turnId"], started.json["suspension"]["actionId"]
    data = {"topic": "Q3 planning", "date": "2026-12-03", "startTime": "10:00", "attendees": 6}

    # WHEN the form is submitted and the worker resumes the turn
    submitted = deployment.submit(
        http_event("http_submit_form.json", path=f"/turns/{turn_id}/actions/{action_id}/submit", body={"data": data})
    )
    assert submitted.status == 202, submitted.body
    deployment.drain()

    # THEN the model called the business tool with the form data and answered
    turn = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}"))
    assert turn.json["status"] == "COMPLETED"
    assert "Q3 planning" in turn.json["finalOutput"]
    assert turn.json["toolCallCount"] == 1
