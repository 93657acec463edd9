"""The worker Lambda on real SQS deliveries, and the sweeper recovering what the queue lost."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agentturn.aws.turn_store import DynamoDBTurnStore
from tests.functional.harness import Deployment, FakeLambdaContext, http_event, load_event
from tests.support.emulators import Emulator

pytestmark = pytest.mark.integration

TICKET = "create a high priority login incident ticket"
FORM = {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}


def _waiting(deployment: Deployment, conversation: str = "c1") -> dict[str, Any]:
    response = deployment.run(
        http_event("http_start_turn.json", path=f"/conversations/{conversation}/turns", body={"input": TICKET})
    )
    assert response.status == 200, response.body
    turn: dict[str, Any] = response.json
    return turn


def _submit(deployment: Deployment, turn: dict[str, Any], key: str = "key-1") -> Any:
    return deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{turn['turnId']}/actions/{turn['suspension']['actionId']}/submit",
            body={"data": FORM},
            headers={"idempotency-key": key},
        )
    )


def _get(deployment: Deployment, turn_id: str) -> dict[str, Any]:
    turn: dict[str, Any] = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}")).json
    return turn


def test_a_duplicate_delivery_advances_the_turn_once(deployment: Deployment) -> None:
    # GIVEN a submitted turn and its resume message
    turn = _waiting(deployment)
    assert _submit(deployment, turn).status == 202
    [message] = deployment.receive()
    event = deployment.sqs_event([message])

    # WHEN SQS delivers the message, then delivers it again (twice in one batch, and once more)
    first = deployment.worker(event)
    after_first = deployment.dump()
    twice = deployment.worker(deployment.sqs_event([message, message]))
    third = deployment.worker(event)

    # THEN every delivery is acknowledged, only the first did work, and the turn completed once
    assert first == twice == third == {"batchItemFailures": []}
    assert deployment.dump() == after_first
    final = _get(deployment, turn["turnId"])
    assert final["status"] == "COMPLETED"
    assert final["toolCallCount"] == 1
    timeline = deployment.run(http_event("http_list_messages.json", path="/conversations/c1/messages")).json
    assert sum(1 for m in timeline["messages"] if m["type"] == "ai" and m["content"] == final["finalOutput"]) == 1


def test_a_poison_record_fails_alone_and_reaches_the_dead_letter_queue(deployment: Deployment) -> None:
    # GIVEN a batch with a good resume message and messages that are not resume messages
    turn = _waiting(deployment)
    assert _submit(deployment, turn).status == 202
    for body in ("not json", json.dumps({"turnId": turn["turnId"], "version": "4"}), json.dumps([1])):
        deployment.sqs.send_message(QueueUrl=deployment.queue_url, MessageBody=body)
    messages = deployment.receive()
    assert len(messages) == 4
    good = next(m for m in messages if m["Body"].startswith('{"turnId"') and '"4"' not in m["Body"])
    poison = {m["MessageId"] for m in messages} - {good["MessageId"]}

    # WHEN the worker gets the batch
    result = deployment.deliver(messages)

    # THEN only the poison records are reported; the good one was processed
    assert {f["itemIdentifier"] for f in result["batchItemFailures"]} == poison
    assert _get(deployment, turn["turnId"])["status"] == "COMPLETED"

    # AND after the queue's retries (each retry as soon as the visibility timeout lapses) the poison
    # records are in the dead-letter queue and nothing else is left
    failed = [m for m in messages if m["MessageId"] in poison]
    for _ in range(6):
        deployment.expire_visibility(failed)
        failed = deployment.receive()
        if not failed:
            break
        deployment.deliver(failed)
    dead = deployment.sqs.receive_message(QueueUrl=deployment.dlq_url, MaxNumberOfMessages=10).get("Messages", [])
    assert {m["MessageId"] for m in dead} == poison
    assert deployment.queue_depth() == 0


def test_a_message_for_a_missing_turn_is_acknowledged(deployment: Deployment) -> None:
    event = load_event("sqs_resume.json")
    assert deployment.worker(event) == {"batchItemFailures": []}


def test_the_sweeper_recovers_a_turn_whose_enqueue_was_lost(deployment: Deployment) -> None:
    # GIVEN a submission whose snapshot was saved but whose SQS send failed (a crash between the two)
    turn = _waiting(deployment)
    restore = deployment.break_queue_sends(deployment.submit_app.api.services)
    try:
        lost = _submit(deployment, turn)
    finally:
        restore()
    # (a lost connection is retryable: 503 with Retry-After, as for throttling)
    assert lost.status == 503, lost.body
    assert lost.json["type"].endswith("/service-unavailable")
    assert deployment.queue_depth() == 0
    assert _get(deployment, turn["turnId"])["status"] == "RUNNING"

    # WHEN the scheduled sweeper runs
    swept = deployment.sweeper()

    # THEN it re-enqueued the turn, and the worker finishes it from that message
    assert swept == {"found": 1, "enqueued": 1, "failed": 0, "expired": 0}
    messages = deployment.receive()
    assert [json.loads(m["Body"])["turnId"] for m in messages] == [turn["turnId"]]
    assert deployment.deliver(messages) == {"batchItemFailures": []}
    assert _get(deployment, turn["turnId"])["status"] == "COMPLETED"

    # AND a later sweep finds nothing to do
    assert deployment.sweeper() == {"found": 0, "enqueued": 0, "failed": 0, "expired": 0}


def test_a_client_retry_recovers_a_lost_enqueue_without_waiting_for_the_sweeper(deployment: Deployment) -> None:
    # GIVEN a submission that was saved but not sent (the client saw a 503: a lost connection is retryable)
    turn = _waiting(deployment)
    restore = deployment.break_queue_sends(deployment.submit_app.api.services)
    try:
        assert _submit(deployment, turn).status == 503
    finally:
        restore()

    # WHEN the client retries with the same Idempotency-Key
    retry = _submit(deployment, turn)

    # THEN the answer is the 202 the first attempt would have given, and the turn is on the queue again
    assert retry.status == 202
    assert [json.loads(m["Body"])["turnId"] for m in deployment.receive()] == [turn["turnId"]]


def test_only_the_submit_that_applied_the_answer_sends_the_snapshot(deployment: Deployment) -> None:
    # GIVEN a submitted turn, and a client that retries the submission with the same Idempotency-Key
    turn = _waiting(deployment)
    assert _submit(deployment, turn).status == 202
    assert _submit(deployment, turn).status == 202

    # WHEN the two messages are read off the queue
    bodies = [json.loads(m["Body"]) for m in deployment.receive()]

    # THEN the first carries the snapshot (its worker runs unclaimed) and the replay's does not (its worker
    # claims: retries never start a model call each)
    assert [body["turnId"] for body in bodies] == [turn["turnId"]] * 2
    assert ["snapshot" in body for body in bodies] == [True, False]


def test_the_sweeper_recovers_a_run_whose_handoff_was_lost(deployment: Deployment) -> None:
    # GIVEN a run Lambda out of time whose hand-off message could not be sent
    restore = deployment.break_queue_sends(deployment.run_app.api.services)
    try:
        response = deployment.run(
            http_event("http_start_turn.json", body={"input": TICKET}), FakeLambdaContext(budget_ms=50)
        )
    finally:
        restore()
    assert response.status == 503

    # WHEN the sweeper runs and the worker gets its message
    assert deployment.sweeper()["enqueued"] == 1
    deployment.drain()

    # THEN the turn ran on to its form
    turns = deployment.dump()["tables"][deployment.names.turns_table]
    assert len(turns) == 1
    turn_id = json.loads(turns[0])["turnId"]["S"]
    assert _get(deployment, turn_id)["status"] == "WAITING_FOR_USER"


def test_the_sweeper_expires_an_unanswered_form_and_the_worker_finishes_the_turn(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a deployment whose agent gives people an hour per form (expiry is on in the sweeper by default)
    monkeypatch.setenv("AGENTTURN_AGENTS", "tests.functional.agents:short_wait_agents")
    turn = _waiting(deployment)
    assert turn["suspension"]["expiresAt"]

    # WHEN nobody answers in time (the stored deadline is put in the past rather than waited for: the
    # handlers read the real clock) and the sweeper runs
    _expire_now(deployment, turn["turnId"])
    swept = deployment.sweeper()

    # THEN the wait was closed and handed to the worker, which ends the turn without the tool
    assert swept["expired"] == 1
    assert swept["enqueued"] == 1
    deployment.drain()
    final = _get(deployment, turn["turnId"])
    assert final["status"] == "COMPLETED"
    assert final["toolCallCount"] == 1
    timeline = deployment.run(http_event("http_list_messages.json", path="/conversations/c1/messages")).json
    card = next(m for m in timeline["messages"] if m["type"] == "agent_form")
    assert card["status"] == "EXPIRED"

    # AND a late submission is refused without changing anything
    before = deployment.dump()
    assert _submit(deployment, turn, "late").status == 409
    assert deployment.dump() == before


def _expire_now(deployment: Deployment, turn_id: str) -> None:
    """Put a wait's stored deadline in the past: the handlers read the real clock, so the data moves."""
    store = DynamoDBTurnStore(deployment.names.turns_table, client=deployment.dynamodb)
    stored = store.load(turn_id)
    assert stored.suspension is not None
    stored.suspension.expires_at = time.time() - 1
    store.save(stored, expected_version=stored.version)


def test_a_submission_after_the_deadline_is_refused_even_before_the_sweep(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a form whose deadline has passed, not yet swept
    monkeypatch.setenv("AGENTTURN_AGENTS", "tests.functional.agents:short_wait_agents")
    turn = _waiting(deployment)
    _expire_now(deployment, turn["turnId"])
    before = deployment.dump()

    # WHEN the person submits it anyway
    response = _submit(deployment, turn, "too-late")

    # THEN it is refused as expired (409) and nothing stored changed
    assert response.status == 409
    assert response.json["type"].endswith("/input-expired")
    assert deployment.dump() == before


def test_on_a_fifo_queue_a_failing_record_holds_back_only_its_own_turn(
    moto_server: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a deployment on a FIFO resume queue, two submitted turns, and a poison message in one's group
    deployment = Deployment(moto_server, monkeypatch, fifo=True)
    first, second = _waiting(deployment, "c1"), _waiting(deployment, "c2")
    assert _submit(deployment, first).status == 202
    deployment.sqs.send_message(
        QueueUrl=deployment.queue_url, MessageBody="poison", MessageGroupId=first["turnId"], MessageDeduplicationId="p"
    )
    assert _submit(deployment, second).status == 202
    messages = deployment.receive()
    assert len(messages) == 3

    # WHEN the worker gets the batch
    result = deployment.deliver(messages)

    # THEN only the poison record (last of its turn's group) is reported; both turns ran
    assert result["batchItemFailures"] == [
        {"itemIdentifier": m["MessageId"]} for m in messages if m["Body"] == "poison"
    ]
    assert _get(deployment, first["turnId"])["status"] == "COMPLETED"
    assert _get(deployment, second["turnId"])["status"] == "COMPLETED"


def test_a_lease_held_by_another_worker_is_acknowledged_without_work(deployment: Deployment) -> None:
    # GIVEN a submitted turn that another worker is running right now (it holds the lease)
    turn = _waiting(deployment)
    assert _submit(deployment, turn).status == 202
    store = deployment.worker_app.services.get().store
    lease = store.claim(turn["turnId"], "another-worker", 60)
    assert lease is not None
    [message] = deployment.receive()
    before = deployment.dump()

    # WHEN this worker gets the message
    result = deployment.worker(deployment.sqs_event([message]))

    # THEN it is acknowledged and nothing changed (the holder finishes the turn)
    assert result == {"batchItemFailures": []}
    assert deployment.dump() == before
    assert _get(deployment, turn["turnId"])["status"] == "RUNNING"


def _two_submitted_turns(deployment: Deployment) -> tuple[dict[str, Any], dict[str, Any]]:
    """A support turn (agent "assistant") and a meeting turn (agent "meeting-agent"), both submitted."""
    support = _waiting(deployment, "c1")
    meeting = deployment.run(
        http_event(
            "http_start_turn.json",
            path="/conversations/c2/turns",
            body={"input": "book a meeting room", "agentId": "meeting-agent"},
        )
    ).json
    assert _submit(deployment, support).status == 202
    data = {"topic": "Q3", "date": "2026-12-03", "startTime": "10:00", "attendees": 4}
    submitted = deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{meeting['turnId']}/actions/{meeting['suspension']['actionId']}/submit",
            body={"data": data},
        )
    )
    assert submitted.status == 202
    return support, meeting


def _without_the_assistant(deployment: Deployment, monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """The next deployment of the worker no longer has the support turn's agent."""
    monkeypatch.setenv("AGENTTURN_AGENTS", "tests.functional.agents:demo_agents_without_assistant")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    deployment.worker_app.services.use(None)


def _delayed(deployment: Deployment) -> int:
    attributes = deployment.sqs.get_queue_attributes(
        QueueUrl=deployment.queue_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessagesDelayed"])


def test_a_turn_whose_agent_is_gone_is_retried_later_and_the_batch_goes_on(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN two submitted turns, one of an agent the next deployment no longer has
    support, meeting = _two_submitted_turns(deployment)
    _without_the_assistant(deployment, monkeypatch)
    messages = deployment.receive()
    assert len(messages) == 2

    # WHEN the worker gets both in one batch
    result = deployment.deliver(messages)

    # THEN no record failed: the other turn completed, and the one whose agent is gone is kept runnable
    # with a first failed attempt, handed back to the queue with the backoff as the message's delay
    assert result == {"batchItemFailures": []}
    assert _get(deployment, meeting["turnId"])["status"] == "COMPLETED"
    gone = _get(deployment, support["turnId"])
    assert gone["status"] == "RUNNING"
    assert (gone["retry"]["attempts"], gone["retry"]["reason"]) == (1, "agent_unavailable")
    assert deployment.receive() == []
    assert _delayed(deployment) == 1


def test_a_turn_whose_agent_is_gone_ends_failed_after_its_last_attempt_and_frees_its_conversation(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a submitted turn whose agent the worker's deployment no longer has, and one attempt allowed
    support, _ = _two_submitted_turns(deployment)
    _without_the_assistant(deployment, monkeypatch, AGENTTURN_MAX_ATTEMPTS="1")
    capsys.readouterr()

    # WHEN the worker gets it
    assert deployment.deliver(deployment.receive()) == {"batchItemFailures": []}

    # THEN the turn ended FAILED with a clear code, its card is closed, its conversation is free,
    # nothing is left to sweep, and the metric the alarm watches was emitted
    failed = _get(deployment, support["turnId"])
    assert failed["status"] == "FAILED"
    assert failed["error"]["type"] == "agent_unavailable"
    assert "'assistant'" in failed["error"]["message"]
    listed = deployment.run(http_event("http_list_messages.json", path="/conversations/c1/messages")).json
    assert listed["activeTurnId"] is None
    assert deployment.queue_depth() == 0 and _delayed(deployment) == 0
    assert deployment.sweeper()["found"] == 0
    output = capsys.readouterr().out
    emitted = [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]
    assert sum(sum(blob.get("TurnsUnrunnable", [])) for blob in emitted) == 1


def test_a_transient_aws_error_fails_only_its_record(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN two submitted turns, and DynamoDB throttling every write of one of them in the worker
    support, meeting = _two_submitted_turns(deployment)
    client = deployment.worker_app.services.get().store.client

    def throttle(params: dict[str, Any], **kwargs: Any) -> None:
        if params.get("Key", {}).get("turnId", {}).get("S") == support["turnId"]:
            error = {"Code": "ProvisionedThroughputExceededException", "Message": "throttled"}
            raise ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}, "UpdateItem")

    client.meta.events.register("provide-client-params.dynamodb.UpdateItem", throttle)
    messages = deployment.receive()
    before = _get(deployment, support["turnId"])

    # WHEN the worker gets both in one batch
    result = deployment.deliver(messages)

    # THEN only that turn's record failed (SQS retries it as it is), that turn is untouched, the other completed
    failing = [m["MessageId"] for m in messages if support["turnId"] in m["Body"]]
    assert result == {"batchItemFailures": [{"itemIdentifier": failing[0]}]}
    assert _get(deployment, support["turnId"]) == before
    assert _get(deployment, meeting["turnId"])["status"] == "COMPLETED"


def test_a_turn_started_while_the_model_is_throttled_is_handed_to_the_worker_with_a_delay(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a deployment whose model provider is throttling
    monkeypatch.setenv("AGENTTURN_AGENTS", "tests.functional.agents:throttled_model_agents")
    deployment.run_app.api.use(None)

    # WHEN a turn is started
    response = deployment.run(
        http_event("http_start_turn.json", path="/conversations/c1/turns", body={"input": "hello"})
    )

    # THEN the answer is 202 (not a failure): the turn is RUNNING with a first failed attempt, and its
    # message waits in the queue for the backoff (not delivered at once)
    assert response.status == 202, response.body
    started = response.json
    assert started["status"] == "RUNNING"
    assert (started["retry"]["attempts"], started["retry"]["reason"]) == (1, "model_error")
    assert started["error"] is None
    assert deployment.receive() == []
    assert _delayed(deployment) == 1
