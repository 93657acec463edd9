"""What the contract suite cannot see: how many requests each operation costs, the item layout (sparse index
attributes, compression, TTL, S3 pointers), and how AWS failures surface."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError
from pydantic import TypeAdapter

from agentturn import AiMessage, Turn, TurnStatus, UserMessage, VersionConflictError
from agentturn.aws.body_codec import inflate
from agentturn.aws.chat_memory import DynamoDBChatMemory, item_size
from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.errors import BodyTooLargeError, StorageError
from agentturn.ports.serializer import JSON
from agentturn.state.messages import FormMessage
from agentturn.state.turn import Suspension, SuspensionType
from agentturn.testing.builders import ai, form, submitted, user
from agentturn.timeline.identity import stamp
from tests.contract.aws_adapters import AwsSession, aws_session, new_conversation_id
from tests.contract.conftest import new_turn
from tests.contract.test_large_snapshot import incompressible
from tests.contract.test_turn_store import advanced
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator
from tests.support.sealing import SealingSerializer

pytestmark = pytest.mark.integration


@pytest.fixture
def session(dynamodb_local: Emulator, moto_server: Emulator) -> AwsSession:
    return aws_session(dynamodb_local, moto_server)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(session: AwsSession, clock: FakeClock) -> DynamoDBTurnStore:
    return session.turn_store(session.fresh_turns_table(), clock)


@contextmanager
def requests(client: Any) -> Iterator[Counter[str]]:
    """Counts the DynamoDB API calls made through ``client`` inside the block, by operation."""
    counts: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        counts[model.name] += 1

    client.meta.events.register("before-call.dynamodb.*", count)
    try:
        yield counts
    finally:
        client.meta.events.unregister("before-call.dynamodb.*", count)


def raw_item(store: DynamoDBTurnStore, turn_id: str) -> dict[str, Any]:
    return store.client.get_item(TableName=store.table_name, Key={"turnId": {"S": turn_id}}, ConsistentRead=True)[
        "Item"
    ]


# ------------------------------------------------------------------------------------- requests per op


def test_each_turn_store_operation_is_one_request(store: DynamoDBTurnStore) -> None:
    # GIVEN a turn store on DynamoDB Local
    client = store.client

    # WHEN each operation runs once (conflicts included)
    with requests(client) as counts:
        created = store.create(new_turn())
    assert counts == {"PutItem": 1}
    with requests(client) as counts:
        store.load(created.id)
    assert counts == {"GetItem": 1}
    with requests(client) as counts:
        lease = store.claim(created.id, "worker", 60)
    assert lease is not None and counts == {"UpdateItem": 1}
    with requests(client) as counts:
        saved = store.save(advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=lease.lease_id)
    assert counts == {"UpdateItem": 1}
    with requests(client) as counts, pytest.raises(VersionConflictError) as conflict:
        store.save(advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=lease.lease_id)
    # THEN a conflict costs no extra read: the failed write itself reports the stored version
    assert counts == {"UpdateItem": 1} and conflict.value.actual_version == 2
    with requests(client) as counts:
        assert store.claim(created.id, "other", 60) is None
    assert counts == {"UpdateItem": 1}
    with requests(client) as counts:
        lease = store.renew(lease, 60)
        store.request_cancel(created.id)
        store.release(lease)
    assert counts == {"UpdateItem": 3}
    with requests(client) as counts:
        store.find_runnable(idle_seconds=0)
    # (the keys-only index gives the candidates; one BatchGetItem reads what decides on them)
    assert counts == {"Query": store.runnable_shards, "BatchGetItem": 1}
    # AND the one save that costs two is the one that finds a cancel requested after its turn was loaded
    with requests(client) as counts:
        cancelled = store.save(advanced(saved, TurnStatus.RUNNING), expected_version=2)
    assert counts == {"UpdateItem": 2} and cancelled.cancel_requested is True


def test_each_chat_memory_operation_is_one_request(session: AwsSession) -> None:
    # GIVEN a conversation on DynamoDB Local
    memory = session.chat_memory()(new_conversation_id())
    client = session.dynamodb
    turn = new_turn()
    ai = stamp(turn, AiMessage(content="x"))
    turn.messages.append(ai)
    turn.messages.append(stamp(turn, UserMessage(content="y")))
    card = FormMessage(
        message_id=f"{turn.id}:input:c1",
        turn_id=turn.id,
        sort_key=ai.sort_key + ".00",
        action_id="c1",
        form_key="f",
        schema={},
    )

    # WHEN each operation runs once
    # THEN each is one request: appends (small model messages of one turn are one group, one PutItem), the
    # card's compare-and-set (won or lost), the model's context, and the active-turn head; the timeline is two
    # (it merges the model's range with the cards')
    with requests(client) as counts:
        memory.append_all(turn.messages)
    assert counts == {"PutItem": 1}
    with requests(client) as counts:
        assert memory.append(card) is True
        assert memory.append(card) is False
    assert counts == {"PutItem": 2}
    with requests(client) as counts:
        assert memory.update_message(card.model_copy(update={"version": 2}), expected_version=1) is True
        assert memory.update_message(card.model_copy(update={"version": 2}), expected_version=1) is False
    assert counts == {"PutItem": 2}
    with requests(client) as counts:
        assert [m.type for m in memory.get_messages(limit=3)] == ["ai", "agent_form", "user"]
        assert memory.get_model_messages(limit=2) == turn.messages[1:]
    assert counts == {"Query": 3}
    with requests(client) as counts:
        assert memory.set_active_turn(turn.id, expected=None) is True
        assert memory.get_active_turn() == turn.id
    assert counts == {"UpdateItem": 1, "GetItem": 1}


# ------------------------------------------------------------------------------------------ item layout


def test_the_item_carries_sparse_index_attributes_only_while_they_apply(
    store: DynamoDBTurnStore, clock: FakeClock
) -> None:
    # GIVEN a READY turn, leased
    created = store.create(new_turn())
    lease = store.claim(created.id, "worker", 60)
    assert lease is not None
    ready = raw_item(store, created.id)

    # WHEN it blocks on a form due in 300 s, then completes with a retention
    blocked = advanced(created, TurnStatus.WAITING_FOR_USER)
    blocked.suspension = Suspension(type=SuspensionType.USER_INPUT, correlation_id="c1", expires_at=clock() + 300)
    saved = store.save(blocked, expected_version=1, lease_id=lease.lease_id)
    waiting = raw_item(store, created.id)
    done = advanced(saved, TurnStatus.COMPLETED)
    done.suspension = None
    done.retain_until = clock() + 86400.25
    store.save(done, expected_version=2)
    finished = raw_item(store, created.id)

    # THEN the runnable index attribute and the lease exist only while runnable and leased; the overdue
    # attributes only while waiting with a deadline; the TTL only once terminal, rounded up
    assert "runnableShard" in ready and ready["leaseId"]["S"] == lease.lease_id
    assert "runnableShard" not in waiting and "leaseId" not in waiting and "leaseExpiresAt" not in waiting
    assert float(waiting["waitExpiresAt"]["N"]) == pytest.approx(blocked.suspension.expires_at)
    assert "overdueShard" in waiting and "expiresAt" not in waiting
    assert "overdueShard" not in finished and "waitExpiresAt" not in finished
    assert finished["expiresAt"]["N"] == str(math.ceil(done.retain_until))
    assert (finished["status"]["S"], finished["version"]["N"]) == ("COMPLETED", "3")


def test_small_bodies_are_text_and_larger_ones_zlib(session: AwsSession, clock: FakeClock) -> None:
    # GIVEN a store that compresses from 1 KB
    store = session.turn_store(session.fresh_turns_table(), clock, compress_threshold=1024)
    small = new_turn(text="hi")
    large = new_turn(text="ticket " * 2000)

    # WHEN both are created
    store.create(small)
    store.create(large)

    # THEN the small body is JSON text, the large one zlib that inflates to the snapshot text the serializer reads
    assert json.loads(raw_item(store, small.id)["body"]["S"])["id"] == small.id
    compressed = raw_item(store, large.id)["body"]["B"]
    assert len(compressed) < 2000
    assert JSON.loads(inflate(compressed).decode(), TypeAdapter(Turn)).messages == large.messages


def test_a_fenced_off_writer_never_clobbers_the_current_s3_body(session: AwsSession, clock: FakeClock) -> None:
    # GIVEN a large turn (its body in S3) and two writers holding version 1
    store = session.turn_store(session.fresh_turns_table(), clock, inline_limit=1024)
    turn = new_turn(text=incompressible(8000))
    created = store.create(turn)
    winner = store.save(advanced(created, TurnStatus.RUNNING, "winner " + incompressible(4000)), expected_version=1)

    # WHEN the second writer saves its own version 2
    with pytest.raises(VersionConflictError):
        store.save(advanced(created, TurnStatus.RUNNING, "loser " + incompressible(4000)), expected_version=1)

    # THEN the stored turn is the winner's and readable; the version 1 body the winner replaced is gone, and
    # the loser's object (which a write whose answer was lost could be referencing) is left for retention
    assert store.load(turn.id) == winner
    listing = session.s3.list_objects_v2(Bucket=session.bucket, Prefix=f"turns/{turn.id}/")
    keys = sorted(o["Key"] for o in listing.get("Contents", []))
    current = raw_item(store, turn.id)["bodyRef"]["S"]
    assert current in keys and len(keys) == 2
    assert all(key.startswith(f"turns/{turn.id}/2-") for key in keys)


def test_without_a_bucket_a_body_beyond_the_item_limit_is_refused_clearly(
    session: AwsSession, clock: FakeClock
) -> None:
    # GIVEN a store without a snapshot bucket
    store = DynamoDBTurnStore(session.fresh_turns_table(), client=session.dynamodb, clock=clock)

    # WHEN a 1 MB incompressible turn is created
    # THEN it is refused before anything is written, saying what to configure
    with pytest.raises(BodyTooLargeError, match="bucket"):
        store.create(new_turn(text=incompressible(1_000_000)))


@pytest.mark.parametrize("inline_limit", [64 * 1024, 1024], ids=["inline", "spilled"])
def test_both_dynamodb_adapters_store_what_their_serializer_makes(
    session: AwsSession, clock: FakeClock, inline_limit: int
) -> None:
    # GIVEN a turn store and a chat memory whose serializer seals the JSON (inline, or spilled to S3)
    sealing = SealingSerializer(JSON)
    store = session.turn_store(session.fresh_turns_table(), clock, serializer=sealing, inline_limit=inline_limit)
    conversation = session.chat_memory(serializer=sealing, inline_limit=inline_limit)(new_conversation_id())
    secret = "4111-1111-1111-1111 " + incompressible(4000)
    turn = new_turn(text=secret)
    message = stamp(turn, UserMessage(content=secret))

    # WHEN a turn and a timeline entry holding the secret are written and read back
    store.create(turn)
    assert conversation.append(message)

    # THEN both read back as written, and nothing either adapter wrote holds the secret in the clear
    assert store.load(turn.id).messages == turn.messages
    assert conversation.get_messages() == [message]
    assert len(sealing.sealed) == 2
    assert all("4111-1111" not in text for text in sealing.sealed)
    item = raw_item(store, turn.id)
    if inline_limit == 1024:
        assert "bodyRef" in item
    else:
        assert "4111-1111" not in inflate(item["body"]["B"]).decode()


def test_other_aws_errors_are_not_disguised(session: AwsSession, clock: FakeClock) -> None:
    # GIVEN a store pointed at a table that does not exist
    store = DynamoDBTurnStore("no-such-table", client=session.dynamodb, clock=clock)

    # WHEN it is used
    # THEN the AWS error comes through as a non-retryable storage error with its code (not as a version
    # conflict, "not found", or the SDK's own exception type), the SDK's error kept as its cause
    with pytest.raises(StorageError) as failure:
        store.load("turn-1")
    assert type(failure.value) is StorageError
    assert (failure.value.code, failure.value.retryable) == ("ResourceNotFoundException", False)
    assert "DynamoDBTurnStore.load" in str(failure.value)
    assert isinstance(failure.value.__cause__, ClientError)


# ------------------------------------------------------------------------------------------- groups


def _items(session: AwsSession, conversation_id: str) -> list[dict[str, Any]]:
    """The conversation's model-range items as stored."""
    response = session.dynamodb.query(
        TableName=session.names.conversations_table,
        KeyConditionExpression="conversationId = :c AND begins_with(sk, :p)",
        ExpressionAttributeValues={":c": {"S": conversation_id}, ":p": {"S": "t#"}},
        ConsistentRead=True,
    )
    return list(response["Items"])


def _said(turn: Turn, *texts: str) -> list[UserMessage]:
    messages: list[UserMessage] = []
    for text in texts:
        messages.append(stamp(turn, UserMessage(content=text)))
        turn.messages.append(messages[-1])  # stamp numbers a message by the turn's messages before it
    return messages


def test_small_messages_of_one_turn_go_as_one_item_of_one_write_unit(session: AwsSession) -> None:
    # GIVEN four short messages of one turn and one of another
    conversation_id = new_conversation_id()
    memory = session.chat_memory()(conversation_id)
    first, second = new_turn(), new_turn()
    batch = [*_said(first, "a", "b", "c", "d"), *_said(second, "e")]

    # WHEN they are appended in one batch
    with requests(session.dynamodb) as counts:
        memory.append_all(batch)

    # THEN the first turn's are one group of at most 1 KB (keyed by its last), the other turn's apart: two
    # requests, two write units; and they read back in order, each once, the latest ones included
    items = _items(session, conversation_id)
    assert counts == {"PutItem": 2}
    assert sorted(int(item.get("n", {"N": "1"})["N"]) for item in items) == [1, 4]
    assert all(item_size(item) <= 1024 for item in items)
    group = next(item for item in items if "n" in item)
    assert group["messageId"]["S"] == batch[3].message_id
    in_order = sorted(batch, key=lambda m: (m.sort_key, m.message_id))
    assert memory.get_messages() == in_order
    assert memory.get_model_messages(2) == in_order[3:]
    assert memory.get_message(batch[1].message_id) == batch[1]


def test_a_group_never_replaces_a_larger_one_and_overlaps_read_once(session: AwsSession) -> None:
    # GIVEN a newer projection's group of four messages, and stale or overlapping ones written after it
    conversation_id = new_conversation_id()
    memory = session.chat_memory()(conversation_id)
    turn = new_turn()
    m = _said(turn, "m0", "m1", "m2", "m3", "m4")
    memory.append_all(m[:4])

    # WHEN a stale projector writes a smaller group ending at the same message, one the same message alone,
    # and a projection from another mark writes a group that overlaps the first
    memory.append_all(m[2:4])
    assert memory.append(m[3]) is False
    memory.append_all(m[2:5])

    # THEN the larger group stayed, and every message reads once, in order, whatever the limit
    counts = sorted(int(item.get("n", {"N": "1"})["N"]) for item in _items(session, conversation_id))
    assert counts == [3, 4]
    assert memory.get_model_messages() == m
    assert memory.get_messages(3) == m[2:]
    assert memory.get_model_messages(1) == m[4:]


def test_a_message_over_1_kb_is_an_item_of_its_own(session: AwsSession) -> None:
    # GIVEN a short message between two long ones of one turn, stored uncompressed
    conversation_id = new_conversation_id()
    memory = DynamoDBChatMemory(session.names.conversations_table, client=session.dynamodb, compress_threshold=10**9)(
        conversation_id
    )
    turn = new_turn()
    batch = _said(turn, "x" * 1200, "short", "y" * 1200)

    # WHEN they are appended
    memory.append_all(batch)

    # THEN nothing was grouped with a message that alone fills a write unit, and all read back
    items = _items(session, conversation_id)
    assert len(items) == 3 and not any("n" in item for item in items)
    assert memory.get_messages() == batch


def test_entries_of_the_layout_before_groups_read_with_groups_over_them(session: AwsSession) -> None:
    # GIVEN a conversation written one item per message (the layout before groups, as `append` still writes)
    conversation_id = new_conversation_id()
    memory = session.chat_memory()(conversation_id)
    turn = new_turn()
    m = _said(turn, "m0", "m1", "m2", "m3")
    for message in m[:3]:
        assert memory.append(message) is True

    # WHEN a projection from an older mark writes a group over two of them and a new message
    memory.append_all(m[1:4])

    # THEN the group took the key of its last message, the single items stayed, and each message reads once
    items = _items(session, conversation_id)
    assert sorted(int(item.get("n", {"N": "1"})["N"]) for item in items) == [1, 1, 1, 3]
    assert memory.get_messages() == m
    assert memory.get_model_messages(2) == m[2:]
    assert memory.get_message(m[1].message_id) == m[1]


def test_a_group_an_earlier_release_wrote_with_an_answered_card_reads_the_card_once_at_its_answer(
    session: AwsSession,
) -> None:
    # GIVEN a timeline as an earlier release left it: the card's own item still pending, and its answered
    # version stored inside the group of the messages after its call
    conversation_id = new_conversation_id()
    memory = session.chat_memory()(conversation_id)
    card = form(1)
    answered = submitted(card)
    memory.append_all([user(0), ai(1, call="call-1"), card])
    group = memory._group_item([answered, ai(2)])  # type: ignore[attr-defined]
    session.dynamodb.put_item(TableName=session.names.conversations_table, Item=group)

    # WHEN the timeline and the model's context are read
    timeline = memory.get_messages()
    model = memory.get_model_messages()

    # THEN the card shows once, answered; the model's context holds no card
    assert [m.message_id for m in timeline].count(card.message_id) == 1
    assert answered in timeline
    assert all(m.model_visible for m in model)
    assert [m.message_id for m in model] == [user(0).message_id, ai(1, call="call-1").message_id, ai(2).message_id]
