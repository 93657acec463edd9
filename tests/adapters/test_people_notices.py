"""Reminders and escalations on EventBridge (moto's server): a rule on ``Turn reminder`` and ``Turn escalated``
routes them to an SQS queue, where the test reads what a team's chat rule would get."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3

from agentturn import InMemoryChatMemory, InMemoryTurnStore, Runner, TurnStatus
from agentturn.api.live_channels import owner_and_conversation
from agentturn.aws.notifier import EventBridgeNotifier
from agentturn.listeners.notifications import TurnNotifier
from tests.scenarios.test_people_reminders import HOUR, refund_agent
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator


def test_a_reminder_and_an_escalation_reach_a_rule_of_their_own(moto_server: Emulator) -> None:
    # GIVEN a bus with a rule on the two detail-types, and a runner (the sweeper's) whose notices go to it
    events = boto3.client("events", endpoint_url=moto_server.endpoint_url)
    sqs = boto3.client("sqs", endpoint_url=moto_server.endpoint_url)
    name = f"people-{uuid.uuid4().hex[:8]}"
    events.create_event_bus(Name=name)
    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(
        Name="chase",
        EventBusName=name,
        EventPattern=json.dumps({"source": ["agentturn"], "detail-type": ["Turn reminder", "Turn escalated"]}),
    )
    events.put_targets(Rule="chase", EventBusName=name, Targets=[{"Id": "queue", "Arn": queue_arn}])
    clock = FakeClock()
    agent = refund_agent([])
    notifier = TurnNotifier(EventBridgeNotifier(name, events), owner_and_conversation)
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), [agent], [notifier], clock=clock)
    waiting = runner.run(agent, "requester/c", "refund O-1001", metadata={"ownerId": "requester"})
    assert waiting.status is TurnStatus.WAITING_FOR_APPROVAL

    # WHEN the sweeper runs after remind_after, and again after escalate_after
    clock.advance(HOUR + 1)
    runner.expire_overdue()
    clock.advance(3 * HOUR)
    runner.expire_overdue()

    # THEN the rule got one of each, with ids and who may answer, in order
    delivered: list[dict[str, Any]] = []
    for _ in range(10):
        answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        delivered += [json.loads(m["Body"]) for m in answer.get("Messages", [])]
        if len(delivered) >= 2:
            break
    assert [(e["source"], e["detail-type"]) for e in delivered] == [
        ("agentturn", "Turn reminder"),
        ("agentturn", "Turn escalated"),
    ]
    reminder, escalated = (e["detail"] for e in delivered)
    assert reminder == {
        "kind": "REMINDER",
        "turnId": waiting.id,
        "conversationId": "c",
        "ownerId": "requester",
        "actionId": "call-r",
        "approvers": ["g#finance"],
    }
    assert escalated == {
        "kind": "ESCALATED",
        "turnId": waiting.id,
        "conversationId": "c",
        "ownerId": "requester",
        "actionId": "call-r",
        "approvers": ["g#managers"],
        "escalatedFrom": ["g#finance"],
    }
