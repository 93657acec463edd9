"""A turn whose stored snapshot cannot be read, through the worker Lambda on real SQS deliveries and the
sweeper Lambda: counted, handed on with its backoff, ended FAILED after its attempts, never swept again."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.ports.store import SNAPSHOT_UNREADABLE
from tests.functional.harness import Deployment, http_event
from tests.functional.test_worker_and_sweeper import FORM, TICKET, _delayed
from tests.support.broken_snapshots import break_snapshot

pytestmark = pytest.mark.integration

#: A backoff longer than the test (moto delays messages in real time): only the sweeper brings the turn back.
BACKOFF = "300"


def _item(deployment: Deployment, turn_id: str) -> dict[str, Any]:
    item: dict[str, Any] = deployment.dynamodb.get_item(
        TableName=deployment.names.turns_table, Key={"turnId": {"S": turn_id}}, ConsistentRead=True
    )["Item"]
    return item


def _later(deployment: Deployment, seconds: float) -> None:
    """Time passes for the worker's runner and the sweeper (their clocks decide when the next attempt is due)."""
    for app in (deployment.worker_app, deployment.sweeper_app):
        services = app.services.get()
        services.clock = lambda: time.time() + seconds
        # The sweeper's store leaves a turn out until its backoff is due, by its own clock.
        services.store.clock = services.clock


def _without_snapshot(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    bodies = [json.loads(message["Body"]) for message in messages]
    assert all("snapshot" in body for body in bodies)
    return [
        {**message, "Body": json.dumps({k: v for k, v in body.items() if k != "snapshot"})}
        for message, body in zip(messages, bodies, strict=True)
    ]


def test_a_turn_whose_snapshot_cannot_be_read_ends_failed_and_is_swept_no_more(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a worker deployment allowing two attempts, and a submitted turn whose stored body then stops
    # inflating (its zlib bytes broken in the table)
    for name, value in {
        "AGENTTURN_MAX_ATTEMPTS": "2",
        "AGENTTURN_RETRY_BASE_SECONDS": BACKOFF,
        "AGENTTURN_RETRY_MAX_SECONDS": BACKOFF,
    }.items():
        monkeypatch.setenv(name, value)
    deployment.worker_app.services.use(None)
    deployment.sweeper_app.services.use(None)
    started = deployment.run(
        http_event("http_start_turn.json", path="/conversations/c1/turns", body={"input": TICKET})
    ).json
    turn_id, action = started["turnId"], started["suspension"]["actionId"]
    answer = http_event(
        "http_submit_form.json",
        path=f"/turns/{turn_id}/actions/{action}/submit",
        body={"data": FORM},
        headers={"idempotency-key": "key-1"},
    )
    assert deployment.submit(answer).status == 202
    store = deployment.worker_app.services.get().store
    assert isinstance(store, DynamoDBTurnStore)
    break_snapshot(store, turn_id, "bad_zlib")
    capsys.readouterr()

    # WHEN the worker gets its message, as the sweeper sends it (without the snapshot a submit's message carries:
    # a worker running from that one never reads the broken body, and its save writes the body anew)
    first = deployment.deliver(_without_snapshot(deployment.receive()))

    # THEN the record is acknowledged, one attempt is counted on the item, and the turn is handed on with
    # its backoff as the message's delay
    assert first == {"batchItemFailures": []}
    assert _item(deployment, turn_id)["unreadableAttempts"] == {"N": "1"}
    assert deployment.receive() == [] and _delayed(deployment) == 1

    # WHEN the sweeper runs before the backoff is over
    # THEN it leaves the turn alone (it is not due), so nothing is sent and no attempt is counted
    assert deployment.sweeper()["found"] == 0
    assert deployment.receive() == []
    assert _item(deployment, turn_id)["unreadableAttempts"] == {"N": "1"}

    # WHEN the backoff is over and the sweeper finds it again
    _later(deployment, int(BACKOFF) + 1)
    assert deployment.sweeper()["found"] == 1
    assert deployment.deliver(deployment.receive()) == {"batchItemFailures": []}

    # THEN its last attempt ended it FAILED: the sweeper finds it no more, reads of it and answers to it get a
    # clear problem (not a 500), the metric the alarm watches fired once ...
    assert deployment.sweeper()["found"] == 0
    assert deployment.receive() == []
    item = _item(deployment, turn_id)
    assert (item["status"], item["errorType"]) == ({"S": "FAILED"}, {"S": SNAPSHOT_UNREADABLE})
    got = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}"))
    assert got.status == 410 and got.headers["content-type"] == "application/problem+json"
    problem = got.json
    assert problem["type"].endswith("/turn-unreadable")
    assert (problem["turnStatus"], problem["errorType"]) == ("FAILED", SNAPSHOT_UNREADABLE)
    retried = deployment.submit(answer)
    assert retried.status == 410, retried.body
    other_caller = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}", sub="someone-else"))
    assert other_caller.status == 404
    output = capsys.readouterr().out
    emitted = [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]
    assert sum(sum(blob.get("TurnsUnrunnable", [])) for blob in emitted) == 1
    # ... and its conversation is free: the timeline answers, and takes a new turn
    listed = deployment.run(http_event("http_list_messages.json", path="/conversations/c1/messages"))
    assert listed.status == 200 and listed.json["activeTurnId"] is None
    again = deployment.run(http_event("http_start_turn.json", path="/conversations/c1/turns", body={"input": TICKET}))
    assert again.status == 200, again.body
    assert again.json["status"] == "WAITING_FOR_USER"


def test_cancelling_a_waiting_turn_that_cannot_be_read_ends_it_and_frees_its_conversation(
    deployment: Deployment,
) -> None:
    # GIVEN a turn waiting for a form (no deadline: no sweep would ever end it) whose stored body is then broken
    started = deployment.run(
        http_event("http_start_turn.json", path="/conversations/c1/turns", body={"input": TICKET})
    ).json
    turn_id = started["turnId"]
    store = deployment.run_app.api.services.store
    assert isinstance(store, DynamoDBTurnStore)
    break_snapshot(store, turn_id, "garbage")
    blocked = deployment.run(http_event("http_start_turn.json", path="/conversations/c1/turns", body={"input": TICKET}))
    assert blocked.status == 409, blocked.body
    cancel = http_event("http_cancel.json", path=f"/turns/{turn_id}/cancel", headers={"idempotency-key": "c-1"})

    # WHEN another caller, then its owner, cancel it
    foreign = deployment.submit(
        http_event(
            "http_cancel.json", path=f"/turns/{turn_id}/cancel", headers={"idempotency-key": "c-1"}, sub="someone-else"
        )
    )
    answered = deployment.submit(cancel)

    # THEN the other caller learns nothing and changes nothing; the owner's cancel is accepted and ends the turn
    # FAILED (it cannot be saved CANCELLED), its conversation free for a new turn; a second cancel says it ended
    assert foreign.status == 404
    assert answered.status == 202, answered.body
    item = _item(deployment, turn_id)
    assert (item["status"], item["errorType"]) == ({"S": "FAILED"}, {"S": SNAPSHOT_UNREADABLE})
    again = deployment.submit(cancel)
    assert again.status == 410 and again.json["turnStatus"] == "FAILED"
    fresh = deployment.run(http_event("http_start_turn.json", path="/conversations/c1/turns", body={"input": TICKET}))
    assert fresh.status == 200, fresh.body
