"""Turn notices on EventBridge (moto's server): a rule on the notice bus routes them to an SQS queue, where
the test reads what a team's e-mail or chat rule would get."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from agentturn import Agent, ExecutionPolicy, InMemoryChatMemory, InMemoryTurnStore, ResumeCommand, Runner
from agentturn.api.live_channels import owner_and_conversation
from agentturn.aws.notifier import EventBridgeNotifier
from agentturn.demo import TicketLedger, demo_agents
from agentturn.listeners.notifications import TurnNotice, TurnNotifier
from agentturn.state.turn import TurnStatus
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator

FORM = {"affectedSystem": "SSO-secret-system", "impactScope": "ALL_USERS"}


@pytest.fixture
def bus(moto_server: Emulator) -> tuple[Any, str, Any, str]:
    """A fresh bus with the README's rule shape (source agentturn) targeting a fresh queue."""
    events = boto3.client("events", endpoint_url=moto_server.endpoint_url)
    sqs = boto3.client("sqs", endpoint_url=moto_server.endpoint_url)
    name = f"notices-{uuid.uuid4().hex[:8]}"
    events.create_event_bus(Name=name)
    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(
        Name="to-people",
        EventBusName=name,
        EventPattern=json.dumps({"source": ["agentturn"], "detail-type": ["Turn suspended", "Turn completed"]}),
    )
    events.put_targets(Rule="to-people", EventBusName=name, Targets=[{"Id": "queue", "Arn": queue_arn}])
    return events, name, sqs, queue_url


def _delivered(sqs: Any, queue_url: str, count: int) -> list[dict[str, Any]]:
    """The events the rule delivered (bounded: a few receives)."""
    found: list[dict[str, Any]] = []
    for _ in range(10):
        answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        found += [json.loads(m["Body"]) for m in answer.get("Messages", [])]
        if len(found) >= count:
            break
    return found


def test_a_suspension_and_the_end_reach_a_rule_with_ids_and_no_form_data(bus: tuple[Any, str, Any, str]) -> None:
    events, bus_name, sqs, queue_url = bus
    # GIVEN a runner whose notices go to the bus
    clock = FakeClock()
    agents = demo_agents(TicketLedger())
    agent = next(a for a in agents if a.id == "support-agent")
    notifier = TurnNotifier(EventBridgeNotifier(bus_name, events), owner_and_conversation)
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), agents, [notifier], clock=clock)

    # WHEN alice's turn asks for the ticket form, and she fills it in
    waiting = runner.run(agent, "alice/chat-7", "create a high priority login incident ticket")
    assert waiting.suspension is not None
    done = runner.resume(waiting.id, ResumeCommand.submit_form(waiting.suspension.action_id, FORM))
    assert done.status is TurnStatus.COMPLETED

    # THEN the rule got two events: the wait (form key, tool, ids) and the end (status)
    delivered = _delivered(sqs, queue_url, 2)
    assert [(e["source"], e["detail-type"]) for e in delivered] == [
        ("agentturn", "Turn suspended"),
        ("agentturn", "Turn completed"),
    ]
    suspended, completed = (e["detail"] for e in delivered)
    assert suspended == {
        "kind": "SUSPENDED",
        "turnId": waiting.id,
        "conversationId": "chat-7",
        "ownerId": "alice",
        "suspensionType": "USER_INPUT",
        "actionId": waiting.suspension.action_id,
        "formKey": "support_ticket_details",
        "toolName": "create_support_ticket",
        "pendingActions": [
            {
                "suspensionType": "USER_INPUT",
                "actionId": waiting.suspension.action_id,
                "formKey": "support_ticket_details",
                "toolName": "create_support_ticket",
            }
        ],
    }
    assert completed == {
        "kind": "COMPLETED",
        "turnId": waiting.id,
        "conversationId": "chat-7",
        "ownerId": "alice",
        "status": "COMPLETED",
    }
    # AND nothing she entered left the system
    assert "SSO-secret-system" not in json.dumps(delivered)


def test_a_deadline_is_in_the_notice() -> None:
    # GIVEN a sink that keeps what it gets, and a form wait with an input timeout of 10 minutes
    kept: list[TurnNotice] = []

    class Keep:
        def send(self, notice: TurnNotice) -> None:
            kept.append(notice)

    clock = FakeClock(start=1_800_000_000.0)
    demo = next(a for a in demo_agents(TicketLedger()) if a.id == "support-agent")
    agent = Agent(
        "support-agent",
        demo.instructions,
        demo.chat_model,
        tools=demo.tools.values(),
        policy=ExecutionPolicy(input_timeout=600),
    )
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), [agent], [TurnNotifier(Keep())], clock=clock)

    # WHEN the turn suspends
    runner.run(agent, "chat-1", "create a high priority login incident ticket")

    # THEN the notice carries the deadline, in ISO 8601 UTC
    [notice] = kept
    assert notice.deadline is not None
    assert notice.deadline.startswith("2027-01-15T08:10:00")


def test_a_refused_put_never_fails_the_turn(bus: tuple[Any, str, Any, str]) -> None:
    events, bus_name, _, _ = bus

    # GIVEN EventBridge answering every PutEvents with a server error, inside the SDK (after its retries)
    def refuse(request: Any, **_: Any) -> AWSResponse:
        return AWSResponse(request.url, 500, {}, _Raw(b'{"__type":"InternalException","message":"down"}'))

    events.meta.events.register_first("before-send.eventbridge.PutEvents", refuse)
    failures: list[str] = []
    notifier = TurnNotifier(
        EventBridgeNotifier(bus_name, events), on_failure=lambda notice, exc: failures.append(notice.kind)
    )
    clock = FakeClock()
    agents = demo_agents(TicketLedger())
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), agents, [notifier], clock=clock)

    # WHEN a turn runs to its end
    done = runner.run(next(a for a in agents if a.id == "support-agent"), "chat-1", "hello")

    # THEN it completed, and the failed notice was counted
    assert done.status is TurnStatus.COMPLETED
    assert failures == ["COMPLETED"]


def test_a_wait_on_several_decisions_names_each_of_them_in_one_notice() -> None:
    # GIVEN a sink that keeps what it gets, and the demo assistant, which asks for four decisions "at once"
    kept: list[TurnNotice] = []

    class Keep:
        def send(self, notice: TurnNotice) -> None:
            kept.append(notice)

    clock = FakeClock()
    agents = demo_agents(TicketLedger())
    assistant = next(a for a in agents if a.id == "assistant")
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), agents, [TurnNotifier(Keep())], clock=clock)

    # WHEN one model message asks for two refunds, a meeting form and a ticket at once
    waiting = runner.run(assistant, "chat-1", "refund both orders, book a room and open a ticket at once")

    # THEN one notice lists every pending decision, in the order of the turn's suspensions
    [notice] = kept
    assert notice.kind == "SUSPENDED"
    assert notice.pending_actions is not None
    assert [a.action_id for a in notice.pending_actions] == [s.action_id for s in waiting.suspensions]
    assert len(notice.pending_actions) == 4
    assert [(a.suspension_type, a.form_key, a.tool_name) for a in notice.pending_actions] == [
        (s.type.value, s.form_key, s.tool_name) for s in waiting.suspensions
    ]
    # AND the first is repeated at the top, as for a single wait
    assert notice.action_id == waiting.suspensions[0].action_id


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body

    def read(self, *_: Any) -> bytes:
        return self._body
