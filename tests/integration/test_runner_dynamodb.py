"""A Runner wired to the DynamoDB adapters on Amazon DynamoDB Local (S3 and SQS on moto) plays the seed's
scenarios end to end, across runner instances, and under a conversation-busy race."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from agentturn import (
    AiMessage,
    ChatMemory,
    ConversationBusyError,
    FormMessage,
    FormStatus,
    ResumeCommand,
    Runner,
    ToolMessage,
    Turn,
    TurnStatus,
    UserMessage,
    Worker,
    WorkOutcome,
)
from agentturn.aws.chat_memory import DynamoDBChatMemory
from agentturn.aws.resume_queue import SqsResumeQueue, parse_resume_message
from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.demo import TicketLedger, demo_agents
from tests.contract.aws_adapters import AwsSession, aws_session, new_conversation_id, sqs_client, unique
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator

pytestmark = pytest.mark.integration

SUPPORT_DATA = {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}
MEETING_DATA = {"topic": "Sprint review", "date": "2026-12-03", "startTime": "14:00", "attendees": 6}


@dataclass
class Deployment:
    """What the Lambdas share: the tables, the bucket, the queue. Each ``runner()`` is another process."""

    session: AwsSession
    turns_table: str
    clock: FakeClock
    ledger: TicketLedger

    def store(self) -> DynamoDBTurnStore:
        return self.session.turn_store(self.turns_table, self.clock)

    def memory(self) -> DynamoDBChatMemory:
        return self.session.chat_memory()

    def runner(self, **kwargs: Any) -> Runner:
        # Fresh adapter instances and fresh agents (same ledger: it stands for the external ticket system).
        return Runner(
            store=self.store(), chat_memory=self.memory(), agents=demo_agents(self.ledger), clock=self.clock, **kwargs
        )


@pytest.fixture
def deployment(dynamodb_local: Emulator, moto_server: Emulator) -> Deployment:
    session = aws_session(dynamodb_local, moto_server)
    return Deployment(session, session.fresh_turns_table(), FakeClock(), TicketLedger())


def demo_agent(deployment: Deployment, agent_id: str) -> Any:
    return next(a for a in demo_agents(deployment.ledger) if a.id == agent_id)


def timeline_kinds(memory: ChatMemory) -> list[str]:
    return [m.type for m in memory.get_messages()]


def test_support_ticket_form_cycle_through_sqs_and_a_worker(deployment: Deployment, moto_server: Emulator) -> None:
    # GIVEN the support agent behind the run Lambda, and a resume queue
    sqs = sqs_client(moto_server)
    queue_url = sqs.create_queue(QueueName=unique("resume"))["QueueUrl"]
    queue = SqsResumeQueue(queue_url, sqs)
    run_lambda = deployment.runner()
    support = demo_agent(deployment, "support-agent")
    conversation_id = new_conversation_id()

    # WHEN the user asks for a high-priority login incident ticket
    waiting = run_lambda.run(
        support, conversation_id, "帮我创建一个高优先级的登录故障工单 (high priority login incident ticket)"
    )

    # THEN the ticket tool needed two fields: the turn waits for the form, whose card is in the timeline
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    assert waiting.suspension is not None
    assert waiting.suspension.metadata["formKey"] == "support_ticket_details"
    assert deployment.ledger.entries == {}
    memory = deployment.memory()(conversation_id)
    assert timeline_kinds(memory) == ["user", "ai", "agent_form"]

    # WHEN the submit Lambda (another process) accepts the form and enqueues the turn, and the worker
    # Lambda receives the message and processes it
    submit_lambda = deployment.runner()
    accepted = submit_lambda.submit_resume(
        waiting.id, ResumeCommand.user_input(waiting.suspension.correlation_id, SUPPORT_DATA)
    )
    queue.enqueue(accepted.id, accepted.version)
    received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=1, WaitTimeSeconds=1)["Messages"]
    message = parse_resume_message(received[0]["Body"])
    result = Worker(deployment.runner()).process(message.turn_id)

    # THEN the tool ran once with the submitted data and the turn completed with the ticket; the timeline
    # shows the SUBMITTED card and the final answer, and the model never saw the card
    assert accepted.status is TurnStatus.RUNNING
    assert result.outcome is WorkOutcome.ADVANCED
    done = result.turn
    assert done is not None and done.status is TurnStatus.COMPLETED
    (ticket,) = deployment.ledger.entries.values()
    assert (ticket["affectedSystem"], ticket["impactScope"], ticket["priority"]) == (
        "统一登录系统",
        "ALL_USERS",
        "HIGH",
    )
    assert done.final_output is not None and ticket["id"] in done.final_output
    timeline = memory.get_messages()
    assert [m.type for m in timeline] == ["user", "ai", "agent_form", "tool", "ai"]
    card = timeline[2]
    assert isinstance(card, FormMessage)
    assert (card.status, card.actions, card.submitted_values) == (FormStatus.SUBMITTED, [], SUPPORT_DATA)
    assert isinstance(timeline[-1], AiMessage) and timeline[-1].content == done.final_output
    assert all(not isinstance(m, FormMessage) for m in memory.get_model_messages())
    # the conversation is free for the next turn
    assert memory.get_active_turn() is None

    # AND a duplicate delivery of the same message changes nothing
    again = Worker(deployment.runner()).process(message.turn_id)
    assert again.outcome is WorkOutcome.NOT_RUNNABLE
    assert len(deployment.ledger.entries) == 1
    assert deployment.store().load(done.id).version == done.version


def test_meeting_room_booking_with_a_model_requested_form(deployment: Deployment) -> None:
    # GIVEN the meeting agent
    runner = deployment.runner()
    meeting = demo_agent(deployment, "meeting-agent")
    conversation_id = new_conversation_id()

    # WHEN the user asks for a room, submits the booking form, and a worker continues
    waiting = runner.run(meeting, conversation_id, "book a meeting room")
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    assert waiting.suspension is not None and waiting.suspension.input_target == "MODEL"
    runner.submit_resume(waiting.id, ResumeCommand.user_input(waiting.suspension.correlation_id, MEETING_DATA))
    result = Worker(deployment.runner()).process(waiting.id)

    # THEN the model got the data as the request_user_input result, booked the room, and said so
    done = result.turn
    assert done is not None and done.status is TurnStatus.COMPLETED
    results = [m for m in done.messages if isinstance(m, ToolMessage)]
    assert [m.tool_name for m in results] == ["request_user_input", "reserve_meeting_room"]
    assert results[0].content == {"status": "submitted", "formKey": "meeting_room_booking", "data": MEETING_DATA}
    assert done.final_output is not None and "Sprint review" in done.final_output
    timeline = deployment.memory()(conversation_id).get_messages()
    assert [m.type for m in timeline] == ["user", "ai", "agent_form", "tool", "ai", "tool", "ai"]
    card = timeline[2]
    assert isinstance(card, FormMessage) and card.status is FormStatus.SUBMITTED


def test_a_second_runner_instance_resumes_from_the_store(deployment: Deployment) -> None:
    # GIVEN a turn suspended by one runner, which is then gone
    first = deployment.runner()
    waiting = first.run(demo_agent(deployment, "support-agent"), new_conversation_id(), "create an incident ticket")
    assert waiting.suspension is not None
    del first

    # WHEN a runner in another process restores the turn and resumes it in its own thread
    second = deployment.runner()
    restored = second.restore(waiting.id)
    done = second.resume(waiting.id, ResumeCommand.user_input(restored.suspension.correlation_id, SUPPORT_DATA))  # type: ignore[union-attr]

    # THEN it sees exactly what was suspended and completes it
    # (the projection mark and event counter move on in memory after the save; the rest is the snapshot)
    volatile = {"event_sequence", "projection"}
    assert restored.model_dump(exclude=volatile) == waiting.model_dump(exclude=volatile)
    assert done.status is TurnStatus.COMPLETED
    assert len(deployment.ledger.entries) == 1
    assert deployment.store().load(waiting.id).status is TurnStatus.COMPLETED


class _RacingMemory:
    """A ChatMemory that holds every caller of ``get_active_turn`` until both racers have read it, so both
    see a free conversation and the race is decided by ``set_active_turn`` alone."""

    def __init__(self, inner: ChatMemory, barrier: threading.Barrier) -> None:
        self._inner = inner
        self._barrier = barrier
        self.conversation_id = inner.conversation_id

    def get_active_turn(self) -> str | None:
        active = self._inner.get_active_turn()
        if active is None:
            # Later readers (once the race is over and the barrier aborted) pass straight through.
            with contextlib.suppress(threading.BrokenBarrierError):
                self._barrier.wait()
        return active

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_two_concurrent_runs_on_one_conversation_leave_exactly_one_turn(deployment: Deployment) -> None:
    # GIVEN two runners (two run Lambdas) about to start a turn in the same free conversation, both having
    # checked that the conversation is free
    conversation_id = new_conversation_id()
    barrier = threading.Barrier(2, timeout=10)
    memory = deployment.memory()

    def racing_runner() -> Runner:
        return Runner(
            store=deployment.store(),
            chat_memory=lambda cid: _RacingMemory(memory(cid), barrier),
            agents=demo_agents(deployment.ledger),
            clock=deployment.clock,
        )

    runners = [racing_runner(), racing_runner()]
    support = demo_agent(deployment, "support-agent")

    def run(index: int) -> Turn | ConversationBusyError:
        try:
            return runners[index].run(support, conversation_id, f"create an incident ticket #{index}")
        except ConversationBusyError as exc:
            return exc

    # WHEN both run at once
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(run, range(2)))
    barrier.abort()

    # THEN one turn started and waits for its form; the other run got "conversation busy" naming it
    turns = [o for o in outcomes if isinstance(o, Turn)]
    busy = [o for o in outcomes if isinstance(o, ConversationBusyError)]
    assert len(turns) == 1 and len(busy) == 1
    (winner,), (loser,) = turns, busy
    assert winner.status is TurnStatus.WAITING_FOR_USER
    assert (loser.conversation_id, loser.active_turn_id) == (conversation_id, winner.id)

    # AND the loser left no turn behind: the table holds the winner only, the timeline only its entries
    items = deployment.session.dynamodb.scan(TableName=deployment.turns_table, ConsistentRead=True)["Items"]
    assert [item["turnId"]["S"] for item in items] == [winner.id]
    assert {m.turn_id for m in memory(conversation_id).get_messages()} == {winner.id}
    assert memory(conversation_id).get_active_turn() == winner.id


def test_concurrent_duplicate_deliveries_advance_the_turn_once(deployment: Deployment) -> None:
    # GIVEN a submitted support form, the turn runnable
    runner = deployment.runner()
    waiting = runner.run(demo_agent(deployment, "support-agent"), new_conversation_id(), "incident ticket please")
    assert waiting.suspension is not None
    runner.submit_resume(waiting.id, ResumeCommand.user_input(waiting.suspension.correlation_id, SUPPORT_DATA))

    # WHEN SQS delivers its message to 4 workers at once
    barrier = threading.Barrier(4, timeout=10)

    def deliver(_: int) -> WorkOutcome:
        worker = Worker(deployment.runner())
        barrier.wait()
        return worker.process(waiting.id).outcome

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(deliver, range(4)))

    # THEN exactly one advanced it; the ticket exists once and the turn completed
    assert outcomes.count(WorkOutcome.ADVANCED) == 1
    assert set(outcomes) <= {WorkOutcome.ADVANCED, WorkOutcome.LEASE_HELD, WorkOutcome.NOT_RUNNABLE}
    assert len(deployment.ledger.entries) == 1
    assert deployment.store().load(waiting.id).status is TurnStatus.COMPLETED


def test_cancel_of_a_waiting_turn_cancels_its_card(deployment: Deployment) -> None:
    # GIVEN a turn waiting for its form
    runner = deployment.runner()
    conversation_id = new_conversation_id()
    waiting = runner.run(demo_agent(deployment, "support-agent"), conversation_id, "incident ticket")

    # WHEN another process cancels it
    cancelled = deployment.runner().cancel(waiting.id)

    # THEN it is CANCELLED, its card too (read-only), and the conversation is free again
    assert cancelled.status is TurnStatus.CANCELLED
    memory = deployment.memory()(conversation_id)
    (card,) = [m for m in memory.get_messages() if isinstance(m, FormMessage)]
    assert (card.status, card.actions) == (FormStatus.CANCELLED, [])
    assert memory.get_active_turn() is None
    next_turn = runner.run(demo_agent(deployment, "support-agent"), conversation_id, "hello")
    assert next_turn.status is TurnStatus.COMPLETED
    assert isinstance(memory.get_messages()[-2], UserMessage)
