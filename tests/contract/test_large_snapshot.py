"""A turn with 2 MB of messages saves, loads and resumes (on DynamoDB its body goes to S3)."""

from __future__ import annotations

import os

from agentturn import FormMessage, FormStatus, ResumeCommand, Runner, TurnStatus, UserMessage, Worker
from agentturn.demo import demo_agents
from agentturn.projection import stamp
from tests.contract.conftest import Kit, new_conversation_id, new_turn
from tests.contract.test_turn_store import advanced

TWO_MB = 2 * 1024 * 1024


def incompressible(size: int) -> str:
    """Text that zlib cannot shrink much (random hex: about 2:1), so the body really is large."""
    return os.urandom((size + 1) // 2).hex()[:size]


def snapshot_objects(kit: Kit, turn_id: str) -> list[str]:
    assert kit.aws is not None
    listing = kit.aws.s3.list_objects_v2(Bucket=kit.aws.bucket, Prefix=f"turns/{turn_id}/")
    return [o["Key"] for o in listing.get("Contents", [])]


def test_a_two_megabyte_turn_saves_and_loads(kit: Kit) -> None:
    # GIVEN a turn whose messages hold 2 MB (20 messages of ~100 KB)
    turn = new_turn()
    for _ in range(20):
        turn.messages.append(stamp(turn, UserMessage(content=incompressible(-(-TWO_MB // 20)))))

    # WHEN it is created, saved and loaded by another store instance
    created = kit.store.create(turn)
    saved = kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)
    loaded = kit.new_store().load(turn.id)

    # THEN nothing is lost
    assert loaded == saved
    assert sum(len(m.content) for m in loaded.messages if isinstance(m, UserMessage)) >= TWO_MB
    if kit.is_aws:
        # AND on AWS the item points to S3 instead of holding the body, and the body replaced by the save
        # is gone: exactly one object is left for the turn
        assert kit.aws is not None and kit.turns_table is not None
        item = kit.aws.dynamodb.get_item(TableName=kit.turns_table, Key={"turnId": {"S": turn.id}})["Item"]
        assert "body" not in item
        assert item["bodyRef"]["S"].startswith(f"turns/{turn.id}/2-")
        assert snapshot_objects(kit, turn.id) == [item["bodyRef"]["S"]]


def test_a_two_megabyte_turn_suspends_and_a_worker_in_another_process_resumes_it(kit: Kit) -> None:
    # GIVEN the support agent asked for a ticket together with 2 MB of pasted logs
    agents = demo_agents()
    support = next(a for a in agents if a.id == "support-agent")
    logs = incompressible(TWO_MB)
    runner = Runner(store=kit.store, chat_memory=kit.memory, agents=agents, clock=kit.clock)
    conversation_id = new_conversation_id()

    # WHEN it runs until the ticket tool needs the form, the form is submitted, and a worker with its own
    # store instance (another process) continues the turn
    waiting = runner.run(support, conversation_id, f"create a high priority login incident ticket\n{logs}")
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    assert waiting.suspension is not None
    runner.submit_resume(
        waiting.id,
        ResumeCommand.user_input(
            waiting.suspension.correlation_id, {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}
        ),
    )
    worker_runner = Runner(store=kit.new_store(), chat_memory=kit.memory, agents=demo_agents(), clock=kit.clock)
    result = Worker(worker_runner).process(waiting.id)

    # THEN the turn completed with the ticket, its 2 MB input intact, and the timeline shows the submitted
    # card and the answer
    assert result.turn is not None
    done = result.turn
    assert done.status is TurnStatus.COMPLETED
    assert done.final_output is not None and "Ticket TICKET-" in done.final_output
    assert logs in done.messages[0].content  # type: ignore[union-attr]
    timeline = kit.memory(conversation_id).get_messages()
    cards = [m for m in timeline if isinstance(m, FormMessage)]
    assert [c.status for c in cards] == [FormStatus.SUBMITTED]
    assert logs in timeline[0].content  # type: ignore[union-attr]
    assert timeline[-1].content == done.final_output  # type: ignore[union-attr]
    if kit.is_aws:
        assert len(snapshot_objects(kit, waiting.id)) == 1
