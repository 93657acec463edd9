"""True retention: when TTL removes a turn, its timeline entries and S3 objects leave with it, nothing else does.

Turns run through the Runner on DynamoDB Local (S3 on moto) with small inline limits, so snapshots and cards
spill to S3. The turn's item is then deleted and the stream record DynamoDB would send for a TTL removal
(``tests/events/dynamodb_stream_ttl_remove.json``, its OLD_IMAGE the real item) is handed to the consumer's
entry point, as the Lambda event source mapping hands it.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from typing import Any

import pytest

from agentturn import ResumeCommand, Runner, Turn, TurnStatus, Worker
from agentturn.aws.chat_memory import DynamoDBChatMemory
from agentturn.aws.retention import RetentionCleaner, handle_stream_event, removed_turn
from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.demo import demo_agents
from agentturn.timeline.conversation_list import OWNER_METADATA_KEY
from tests.contract.aws_adapters import AwsSession, aws_session, new_conversation_id
from tests.functional.harness import FakeLambdaContext, load_event
from tests.reliability.kit import VALID_TICKET
from tests.support.broken_snapshots import Breakage, break_snapshot
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator

pytestmark = pytest.mark.integration

TICKET = "create a high priority login incident ticket"


@dataclass
class Deployment:
    session: AwsSession
    store: DynamoDBTurnStore
    memory: DynamoDBChatMemory
    cleaner: RetentionCleaner
    runner: Runner

    def completed_ticket(self, conversation_id: str, *, owner: str | None = None, text: str = TICKET) -> Turn:
        """A support turn run to its form, answered, and completed by a worker (one ticket); with ``owner``, its
        conversation is listed under that owner (as the HTTP API's turns are)."""
        support = next(a for a in demo_agents() if a.id == "support-agent")
        metadata = None if owner is None else {OWNER_METADATA_KEY: owner}
        waiting = self.runner.run(support, conversation_id, text, metadata=metadata)
        assert waiting.suspension is not None
        action = waiting.suspension.correlation_id
        self.runner.submit_resume(waiting.id, ResumeCommand.user_input(action, VALID_TICKET))
        done = Worker(self.runner).process(waiting.id).turn
        assert done is not None and done.status is TurnStatus.COMPLETED
        return done

    def item(self, turn_id: str) -> dict[str, Any]:
        got = self.session.dynamodb.get_item(TableName=self.store.table_name, Key={"turnId": {"S": turn_id}})
        return dict(got["Item"])

    def expire(self, turn_id: str, *, principal: str | None = "dynamodb.amazonaws.com") -> dict[str, Any]:
        """Delete the turn's item as TTL does; the stream event DynamoDB then sends (OLD_IMAGE)."""
        item = self.item(turn_id)
        self.session.dynamodb.delete_item(TableName=self.store.table_name, Key={"turnId": {"S": turn_id}})
        return stream_event(item, principal=principal)

    def objects(self, prefix: str = "") -> set[str]:
        pages = self.session.s3.get_paginator("list_objects_v2").paginate(Bucket=self.session.bucket, Prefix=prefix)
        return {o["Key"] for page in pages for o in page.get("Contents", [])}

    def entries(self, conversation_id: str) -> list[dict[str, Any]]:
        response = self.session.dynamodb.query(
            TableName=self.memory.table_name,
            KeyConditionExpression="conversationId = :c AND begins_with(sk, :t)",
            ExpressionAttributeValues={":c": {"S": conversation_id}, ":t": {"S": "t#"}},
            ConsistentRead=True,
        )
        return [dict(item) for item in response["Items"]]


def stream_event(item: dict[str, Any], *, principal: str | None) -> dict[str, Any]:
    """The recorded TTL removal re-targeted at ``item`` (Lambda's JSON: binary values base64-encoded)."""
    event = copy.deepcopy(load_event("dynamodb_stream_ttl_remove.json"))
    record = event["Records"][0]
    image = {
        name: {"B": base64.b64encode(value["B"]).decode()} if "B" in value else value for name, value in item.items()
    }
    record["dynamodb"]["OldImage"] = image
    record["dynamodb"]["Keys"] = {"turnId": item["turnId"]}
    if principal is None:
        del record["userIdentity"]  # a delete by a caller (the runtime, an operator): no userIdentity
    else:
        record["userIdentity"]["principalId"] = principal
    return event


@pytest.fixture
def deployment(dynamodb_local: Emulator, moto_server: Emulator) -> Deployment:
    session = aws_session(dynamodb_local, moto_server)
    clock = FakeClock()
    # Small inline limits: the snapshot and the timeline entries go to S3, as large ones do in production (compressed,
    # a card is a few hundred bytes).
    store = session.turn_store(session.fresh_turns_table(), clock, inline_limit=512)
    memory = session.chat_memory(session.fresh_conversations_table(), inline_limit=64)
    cleaner = RetentionCleaner(memory.table_name, client=session.dynamodb, s3_client=session.s3, bucket=session.bucket)
    runner = Runner(store=store, chat_memory=memory, agents=demo_agents(), clock=clock)
    return Deployment(session, store, memory, cleaner, runner)


def _objects_of(deployment: Deployment, turn: Turn) -> set[str]:
    """The S3 objects that hold something of ``turn``: its snapshots and its timeline entries' bodies."""
    found = deployment.objects(f"turns/{turn.id}/")
    for entry in deployment.entries(turn.conversation_id):
        if entry["messageId"]["S"].startswith(f"{turn.id}:") and "bodyRef" in entry:
            found.add(entry["bodyRef"]["S"])
    return found


def test_a_turn_removed_by_ttl_takes_its_timeline_and_objects_with_it(deployment: Deployment) -> None:
    # GIVEN two completed turns in one conversation and one in another, with bodies in S3, and an object a
    # save whose answer was lost left behind (the store never deletes those itself)
    conversation, other_conversation = new_conversation_id(), new_conversation_id()
    first = deployment.completed_ticket(conversation)
    second = deployment.completed_ticket(conversation)
    elsewhere = deployment.completed_ticket(other_conversation)
    orphan = f"turns/{first.id}/3-feedfacecafebeef.json.gz"
    deployment.session.s3.put_object(Bucket=deployment.session.bucket, Key=orphan, Body=b"lost")
    doomed = _objects_of(deployment, first)
    assert orphan in doomed and any(key.startswith("conversations/") for key in doomed)
    kept_objects = _objects_of(deployment, second) | _objects_of(deployment, elsewhere)
    kept_entries = [e for e in deployment.entries(conversation) if not e["messageId"]["S"].startswith(first.id)]

    # WHEN TTL removes the first turn and the consumer gets the stream record
    result = handle_stream_event(deployment.expire(first.id), FakeLambdaContext(), deployment.cleaner)

    # THEN the record succeeded; none of the first turn's entries or objects are left
    assert result == {"batchItemFailures": []}
    assert not [e for e in deployment.entries(conversation) if e["messageId"]["S"].startswith(f"{first.id}:")]
    assert not doomed & deployment.objects()
    # AND everything of the other turns is untouched, and their timelines still read whole
    assert deployment.entries(conversation) == kept_entries
    assert kept_objects <= deployment.objects()
    timeline = deployment.memory(conversation).get_messages()
    assert {m.turn_id for m in timeline} == {second.id}
    assert len([m for m in timeline if m.type != "agent_form"]) == len(second.messages)
    assert deployment.store.load(second.id).status is TurnStatus.COMPLETED
    assert {m.turn_id for m in deployment.memory(other_conversation).get_messages()} == {elsewhere.id}


def test_the_consumer_makes_only_the_requests_its_role_is_granted(deployment: Deployment) -> None:
    # GIVEN a listed conversation whose only turn TTL removes, and every request of the consumer recorded
    conversation = new_conversation_id()
    turn = deployment.completed_ticket(conversation, owner="someone")
    event = deployment.expire(turn.id)
    made: set[str] = set()

    def note(model: Any, **kwargs: Any) -> None:
        made.add(f"{model.service_model.signing_name}:{model.name}")

    for client in (deployment.session.dynamodb, deployment.session.s3):
        client.meta.events.register("before-call", note)
    try:
        # WHEN it purges the turn (timeline, objects, hold, listing)
        assert handle_stream_event(event, FakeLambdaContext(), deployment.cleaner) == {"batchItemFailures": []}
    finally:
        for client in (deployment.session.dynamodb, deployment.session.s3):
            client.meta.events.unregister("before-call", note)

    # THEN each request is one the construct grants the retention role (no BatchWriteItem: it could put too);
    # S3's DeleteObjects is authorised as s3:DeleteObject, ListObjectsV2 as s3:ListBucket
    as_actions = {"s3:DeleteObjects": "s3:DeleteObject", "s3:ListObjectsV2": "s3:ListBucket"}
    # (The retention role's grant as tests/infra/test_iam.py writes it out; importing agentturn.cdk costs 6 s.)
    granted = {"dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:UpdateItem"}
    granted |= {"s3:DeleteObject", "s3:GetObject", "s3:ListBucket"}
    assert {as_actions.get(action, action) for action in made} <= granted, made
    assert "dynamodb:DeleteItem" in made


def test_a_redelivered_record_after_a_partial_purge_finishes_it(deployment: Deployment) -> None:
    # GIVEN a removed turn whose purge got as far as deleting the turn's own objects (its body included),
    # with its timeline still there (the order the consumer never uses; the worst case for a retry)
    conversation = new_conversation_id()
    turn = deployment.completed_ticket(conversation)
    event = deployment.expire(turn.id)
    for key in deployment.objects(f"turns/{turn.id}/"):
        deployment.session.s3.delete_object(Bucket=deployment.session.bucket, Key=key)

    # WHEN the record is delivered (again)
    result = handle_stream_event(event, FakeLambdaContext(), deployment.cleaner)

    # THEN the timeline is found by message id instead of the prefix the body held, and removed
    assert result == {"batchItemFailures": []}
    assert not [e for e in deployment.entries(conversation) if e["messageId"]["S"].startswith(f"{turn.id}:")]
    # AND a third delivery finds nothing left to do and succeeds
    assert handle_stream_event(event, FakeLambdaContext(), deployment.cleaner) == {"batchItemFailures": []}


def test_a_turn_still_holding_its_conversation_lets_go_of_it(deployment: Deployment) -> None:
    # GIVEN a finished turn still named as its conversation's active turn (its last release failed)
    conversation = new_conversation_id()
    turn = deployment.completed_ticket(conversation)
    assert deployment.memory(conversation).set_active_turn(turn.id, expected=None)

    # WHEN TTL removes it
    handle_stream_event(deployment.expire(turn.id), FakeLambdaContext(), deployment.cleaner)

    # THEN the conversation is free for the next turn
    assert deployment.memory(conversation).get_active_turn() is None


def _listed(deployment: Deployment, owner: str) -> dict[str, str]:
    """``{conversation id: title}`` of the owner's listing (``GET /conversations``' one Query)."""
    page = deployment.memory.list_conversations(owner, 100)
    return {c.conversation_id: c.title for c in page.conversations}


def test_a_conversation_whose_every_turn_is_gone_is_no_longer_listed(deployment: Deployment) -> None:
    # GIVEN an owner's conversation of two turns, titled by the first one's input, and another conversation
    owner = f"owner-{new_conversation_id()}"
    conversation, other = new_conversation_id(), new_conversation_id()
    first = deployment.completed_ticket(conversation, owner=owner)
    second = deployment.completed_ticket(conversation, owner=owner, text="create a ticket: payroll export is slow")
    deployment.completed_ticket(other, owner=owner)
    assert _listed(deployment, owner) == {conversation: TICKET, other: TICKET}

    # WHEN TTL removes the first turn
    handle_stream_event(deployment.expire(first.id), FakeLambdaContext(), deployment.cleaner)

    # THEN the conversation is still listed (a turn of it is left), but its title, the removed turn's first
    # message, is gone with it
    assert _listed(deployment, owner) == {conversation: "", other: TICKET}

    # WHEN TTL removes the last turn of the conversation too
    handle_stream_event(deployment.expire(second.id), FakeLambdaContext(), deployment.cleaner)

    # THEN the conversation is no longer listed and nothing of it is stored; the other one is untouched
    assert _listed(deployment, owner) == {other: TICKET}
    left = deployment.session.dynamodb.query(
        TableName=deployment.memory.table_name,
        KeyConditionExpression="conversationId = :c",
        ExpressionAttributeValues={":c": {"S": conversation}},
        ConsistentRead=True,
    )
    assert left["Items"] == []


def test_removing_a_later_turn_keeps_the_title_of_the_first(deployment: Deployment) -> None:
    # GIVEN a listed conversation of two turns
    owner = f"owner-{new_conversation_id()}"
    conversation = new_conversation_id()
    deployment.completed_ticket(conversation, owner=owner)
    second = deployment.completed_ticket(conversation, owner=owner, text="create a ticket: payroll export is slow")

    # WHEN TTL removes the second one (an earlier turn is left)
    handle_stream_event(deployment.expire(second.id), FakeLambdaContext(), deployment.cleaner)

    # THEN the conversation keeps its title, the first turn's message, which is still there
    assert _listed(deployment, owner) == {conversation: TICKET}


def test_a_conversation_a_new_turn_holds_stays_listed_without_the_removed_title(deployment: Deployment) -> None:
    # GIVEN a listed conversation whose only turn is removed while a new turn holds the conversation (it
    # started after TTL deleted the item, before the stream record arrived)
    owner = f"owner-{new_conversation_id()}"
    conversation = new_conversation_id()
    turn = deployment.completed_ticket(conversation, owner=owner)
    event = deployment.expire(turn.id)
    head = deployment.memory(conversation)
    assert head.set_active_turn("a-new-turn", expected=head.get_active_turn())
    for entry in deployment.entries(conversation):  # the new turn has written nothing yet
        assert entry["messageId"]["S"].startswith(f"{turn.id}:")

    # WHEN the record is handled
    handle_stream_event(event, FakeLambdaContext(), deployment.cleaner)

    # THEN the new turn keeps the conversation; the removed turn's message is not its title any more
    assert deployment.memory(conversation).get_active_turn() == "a-new-turn"
    assert _listed(deployment, owner) == {conversation: ""}


@pytest.mark.parametrize("how", ["bad_zlib", "object_gone"])
def test_a_turn_whose_body_cannot_be_read_is_removed_whole_too(deployment: Deployment, how: Breakage) -> None:
    # GIVEN a turn whose stored body cannot be read (so it ended FAILED snapshot_unreadable, and TTL came)
    conversation = new_conversation_id()
    turn = deployment.completed_ticket(conversation)
    break_snapshot(deployment.store, turn.id, how)

    # WHEN TTL removes it
    result = handle_stream_event(deployment.expire(turn.id), FakeLambdaContext(), deployment.cleaner)

    # THEN the record succeeded and its timeline entries and objects went with it (found by message id)
    assert result == {"batchItemFailures": []}
    assert not [e for e in deployment.entries(conversation) if e["messageId"]["S"].startswith(f"{turn.id}:")]
    assert not deployment.objects(f"turns/{turn.id}/")


@pytest.mark.parametrize("principal", [None, "someone@example.com"], ids=["a-caller", "another-principal"])
def test_a_removal_that_ttl_did_not_make_is_left_alone(deployment: Deployment, principal: str | None) -> None:
    # GIVEN a turn deleted by a caller, not by TTL (no userIdentity, or another principal)
    conversation = new_conversation_id()
    turn = deployment.completed_ticket(conversation)
    before_entries, before_objects = deployment.entries(conversation), _objects_of(deployment, turn)
    event = deployment.expire(turn.id, principal=principal)

    # WHEN the consumer gets its record
    result = handle_stream_event(event, FakeLambdaContext(), deployment.cleaner)

    # THEN nothing is deleted (an operator's delete is theirs to scope)
    assert result == {"batchItemFailures": []}
    assert deployment.entries(conversation) == before_entries
    assert before_objects <= deployment.objects()


def test_a_record_that_fails_is_reported_and_the_others_are_done(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a batch of two TTL removals, the first of whose S3 deletes fails
    turns = [deployment.completed_ticket(new_conversation_id()) for _ in range(2)]
    events = [deployment.expire(t.id) for t in turns]
    batch = {"Records": [events[0]["Records"][0], copy.deepcopy(events[1]["Records"][0])]}
    batch["Records"][1]["dynamodb"]["SequenceNumber"] = "1900000000012345678902"
    original = deployment.cleaner._delete_prefix

    def failing(prefix: str) -> int:
        if prefix == f"turns/{turns[0].id}/":
            raise OSError("S3 unavailable")
        return original(prefix)

    monkeypatch.setattr(deployment.cleaner, "_delete_prefix", failing)

    # WHEN the consumer handles the batch
    result = handle_stream_event(batch, FakeLambdaContext(), deployment.cleaner)

    # THEN only the first record is reported (by its sequence number, so Lambda retries from it); the second
    # turn's timeline is gone
    assert result == {"batchItemFailures": [{"itemIdentifier": batch["Records"][0]["dynamodb"]["SequenceNumber"]}]}
    assert not deployment.entries(turns[1].conversation_id)


def test_the_recorded_event_parses_as_a_ttl_removal_of_a_turn() -> None:
    # GIVEN the recorded stream event WHEN it is parsed THEN it names the turn, its conversation and its body
    turn = removed_turn(load_event("dynamodb_stream_ttl_remove.json")["Records"][0])
    assert turn is not None
    assert turn.turn_id == "4f6c2b0e9a8d4c7e8b1a2f3d4c5e6a7b"
    assert turn.conversation_id.endswith("/support-1")
    assert turn.body_ref is not None and turn.body is None
    # AND a record that is not a stream record is refused clearly
    with pytest.raises(ValueError, match="not a DynamoDB stream record"):
        removed_turn({"eventName": "DELETE"})
