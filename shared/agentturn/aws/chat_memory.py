"""DynamoDBChatMemory: the ChatMemory port on one DynamoDB table keyed by conversation.

Items of a conversation (partition key ``conversationId``)::

    sk = "t#<sort_key>\\x1f<message_id>"   a model-visible entry (user, ai, tool message): messageId, body
                                           (S JSON, or B zlib, or bodyRef to S3); or a group of consecutive
                                           messages of one turn, keyed by its last (``n``: how many; the
                                           body a JSON array)
    sk = "c#<sort_key>\\x1f<message_id>"   a card (form, approval): the same, plus its version and type (the
                                           compare-and-set condition)
    sk = "head"                            the conversation's head: activeTurnId

The table has no index: what a query needs is in the key. The model's context is one Query of the ``t#``
range (cards, which carry whole form schemas, are never read for it); the timeline merges the ``t#`` and ``c#``
ranges; a card is found by id walking the ``c#`` range from its end. (Two local indexes did this before, and
every index write of an entry was billed as a write unit more.)

``\\x1f`` sorts below every character a sort key uses, so entries are ordered by ``(sort_key, message_id)``
exactly as the in-memory reference orders them. Because the message id is part of the key, appending an
entry that is already there is a failed condition, not a duplicate. (An entry is identified by its sort
key *and* id; the projection derives both deterministically from the snapshot, so a re-projected entry
always has the same pair.)

Requests: ``get_model_messages`` one Query, ``get_messages`` two (more only past 1 MB of results),
``append`` one PutItem, ``append_all`` one conditional PutItem per group of model messages (plus one per
card), ``update_message`` one conditional PutItem, ``get_active_turn`` one GetItem, ``set_active_turn`` one
conditional UpdateItem; ``get_message`` a Query walking the cards back from the newest (a model message, which
nothing in the runtime asks for by id, walks the model entries after that, reading the groups' bodies).

Groups: a write unit is billed per started KB of each item, and the messages of one projection (a user's
input and the model's call; a tool's result and the model's answer) are a few hundred bytes each. So
``append_all`` packs consecutive messages of one turn into items of at most 1 KB: one write unit where each
message alone would bill one. A group is keyed by its *last* message, so the latest N items always hold the
latest N messages (the item holding a message is keyed at or after it), and reads take each message once
(by id) in ``(sort_key, message_id)`` order, whichever items hold it. Projections that start at different
marks may group the same message twice; a group never replaces one that holds more messages at the same
key (its condition), so a stale projector cannot drop what a newer one wrote.

Writes whose answer is lost (DESIGN invariant 10): every conditional write asks for the item its condition
saw (``ALL_OLD``), and finding there its own nonce (``writeId`` on entries; the turn id it set on the head)
means the SDK's retry failed only because the first attempt had landed: it counts as done. A group's
condition admits the same group again (``n <= :n``), so the retry of a group that landed is written again,
unchanged. No S3 object written for an
entry is ever deleted here; they leave with their turn (:mod:`agentturn.aws.retention`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import TypeAdapter

from agentturn.aws import tables
from agentturn.aws._support import (
    CONDITION_FAILED,
    WRITE_ID,
    Item,
    as_str,
    dynamodb_client,
    error_code,
    new_write_id,
    old_item,
    written_by,
)
from agentturn.aws.body_codec import BODY, BODY_REF, BodyCodec, attribute_size, decode_inline
from agentturn.aws.translate import storage_error, translates_errors
from agentturn.errors import StorageUnavailableError
from agentturn.ports.audit import AuditRecord, OutcomeRecord, record_key
from agentturn.ports.memory import ChatMemory
from agentturn.ports.serializer import JSON, Serializer
from agentturn.state.messages import (
    ApprovalMessage,
    CardMessage,
    FormMessage,
    ModelMessage,
    TimelineMessage,
)
from agentturn.timeline.conversation_list import (
    ConversationListing,
    ConversationPage,
    ConversationSummary,
    InvalidCursorError,
    decode_cursor,
    encode_cursor,
)
from agentturn.timeline.inbox import InboxEntry, assignees, due

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

_log = logging.getLogger("agentturn.aws.chat_memory")

T = TypeVar("T")
M = TypeVar("M", bound="_Entry")


class _Entry(Protocol):
    """What ordering entries needs of a message."""

    message_id: str
    sort_key: str


_TIMELINE: TypeAdapter[TimelineMessage] = TypeAdapter(TimelineMessage)
_TIMELINE_GROUP: TypeAdapter[list[TimelineMessage]] = TypeAdapter(list[TimelineMessage])

_CID: Final = tables.CONVERSATION_ID
_SK: Final = tables.ENTRY_KEY
_MESSAGE_ID: Final = tables.MESSAGE_ID
_BODY: Final = BODY
_BODY_REF: Final = BODY_REF
_VERSION: Final = "version"
#: On a group item only: how many messages its body holds.
_COUNT: Final = "n"
#: The size a group may reach: one write unit.
_GROUP_BYTES: Final = 1024
_TYPE: Final = "type"
_ACTIVE_TURN: Final = "activeTurnId"
_LIST_OWNER: Final = tables.LIST_OWNER
_LAST_ACTIVITY: Final = tables.LAST_ACTIVITY
_TITLE: Final = tables.TITLE

_MODEL_PREFIX: Final = tables.MODEL_ENTRY_PREFIX
_CARD_PREFIX: Final = tables.CARD_ENTRY_PREFIX
_SEPARATOR: Final = "\x1f"
_HEAD: Final = "head"
_AUDIT_PREFIX: Final = tables.AUDIT_ENTRY_PREFIX
_INBOX_PREFIX: Final = tables.INBOX_ENTRY_PREFIX
_ASSIGNEE: Final = tables.ASSIGNEE
_INBOX_DUE: Final = tables.INBOX_DUE
_AUDIT: TypeAdapter[AuditRecord] = TypeAdapter(AuditRecord)
_OUTCOME: TypeAdapter[OutcomeRecord] = TypeAdapter(OutcomeRecord)
#: After a turn's audit prefix, what starts an outcome record's key instead of a decision's ``action\x1fsubject``
#: (no action id starts with a control character): one Query reads either kind, and retention's prefix both.
_OUTCOME_MARK = "\x1eoutcome\x1f"

_NAMES: Final = {
    "#cid": _CID,
    "#sk": _SK,
    "#mid": _MESSAGE_ID,
    "#v": _VERSION,
    "#n": _COUNT,
    "#type": _TYPE,
    "#at": _ACTIVE_TURN,
    "#lo": _LIST_OWNER,
    "#la": _LAST_ACTIVITY,
    "#ti": _TITLE,
}


def _names(expression: str) -> dict[str, str]:
    return {k: v for k, v in _NAMES.items() if k in expression}


class TimelineWriteError(StorageUnavailableError):
    """Timeline entries could not be written (still throttled after bounded retries): retryable later.

    Kept importable for callers that catch it: this version writes entries with PutItem, which botocore retries
    when throttled, and a write that still fails is a :class:`~agentturn.errors.StorageUnavailableError`."""


def entry_key(message: TimelineMessage) -> str:
    """The item key of ``message``: its range (model-visible or card), sort key and id."""
    prefix = _MODEL_PREFIX if message.model_visible else _CARD_PREFIX
    return f"{prefix}{message.sort_key}{_SEPARATOR}{message.message_id}"


def _sort_key_of(key: str, message_id: str) -> str:
    return key[len(_CARD_PREFIX) : len(key) - len(message_id) - len(_SEPARATOR)]


def _position(message: _Entry) -> str:
    """``sort_key + "\\x1f" + message_id``: the timeline's order (an item key without its range prefix)."""
    return f"{message.sort_key}{_SEPARATOR}{message.message_id}"


def _once_in_order(messages: Sequence[M]) -> list[M]:
    """Each message once (by id: two groups may hold it), in the timeline's order. A card at its highest version:
    an earlier release stored an answered card inside the group of the messages after it, and its own item may
    still show it pending."""
    unique: dict[str, M] = {}
    for message in messages:
        kept = unique.setdefault(message.message_id, message)
        if isinstance(message, FormMessage | ApprovalMessage) and message.version > getattr(kept, "version", 0):
            unique[message.message_id] = message
    return sorted(unique.values(), key=_position)


def _latest(messages: list[M], limit: int | None) -> list[M]:
    if limit is None:
        return messages
    return messages[-limit:] if limit > 0 else []


def item_size(item: Item) -> int:
    """DynamoDB's size of an entry item (what its write units are billed on): names and values, in bytes."""
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def _require_id(message: TimelineMessage) -> None:
    if not message.message_id:
        raise ValueError("timeline entries need a message_id")


class DynamoDBChatMemory:
    """A ChatMemory provider: ``DynamoDBChatMemory(table)(conversation_id)`` is that conversation's timeline.

    Entries whose compressed JSON exceeds ``inline_limit`` are spilled to ``bucket`` when one is given
    (without one they stay inline up to the item limit, beyond it :class:`~agentturn.errors.BodyTooLargeError`;
    see :mod:`agentturn.aws.body_codec`). ``serializer`` makes the text an entry is stored as.
    ``consistent_reads`` (default) makes every read see every completed write, which the Runner relies on
    when it builds a model's context right after projecting.
    """

    def __init__(
        self,
        table_name: str,
        *,
        client: DynamoDBClient | None = None,
        s3_client: S3Client | None = None,
        bucket: str | None = None,
        compress_threshold: int = 256,
        inline_limit: int = 64 * 1024,
        compress_level: int = 6,
        consistent_reads: bool = True,
        key_prefix: str = "conversations/",
        serializer: Serializer = JSON,
        inbox_owner_cards: bool = False,
    ) -> None:
        self.table_name = table_name
        #: Also list cards without approvers in their owner's inbox (two index writes per form cycle more).
        self.inbox_owner_cards = inbox_owner_cards
        self.client: DynamoDBClient = client if client is not None else dynamodb_client()
        # A card carries its form's schema and is often just over 1 KB: compressed (preset dictionary), it bills
        # one write unit. Messages of a few hundred bytes are compressed too: the model's context reads the
        # latest window of them on every model call, and a read is billed per 4 KB it returns.
        self.codec = BodyCodec.for_bucket(
            bucket, s3_client, compress_threshold=compress_threshold, inline_limit=inline_limit, level=compress_level
        )
        self.serializer = serializer
        self.consistent_reads = consistent_reads
        self.key_prefix = key_prefix

    def __call__(self, conversation_id: str) -> ChatMemory:
        if not conversation_id:
            raise ValueError("conversation_id must be non-empty")
        return DynamoDBConversation(self, conversation_id)

    def list_conversations(self, owner: str, limit: int, cursor: str | None = None) -> ConversationPage:
        """One Query on the sparse ``byOwner`` index, newest activity first (eventually consistent, as every
        GSI read is: a turn started a moment ago may show on the next read)."""
        kwargs: dict[str, Any] = {}
        if cursor is not None:
            at, conversation_id = decode_cursor(owner, cursor)
            # Rebuilt from the caller's own owner: a cursor can never open another owner's partition.
            kwargs["ExclusiveStartKey"] = {
                _LIST_OWNER: {"S": owner},
                _LAST_ACTIVITY: {"S": at},
                _CID: {"S": conversation_id},
                _SK: {"S": _HEAD},
            }
        try:
            response = self.client.query(
                TableName=self.table_name,
                IndexName=tables.OWNER_INDEX,
                KeyConditionExpression="#lo = :owner",
                ExpressionAttributeNames=_names("#lo"),
                ExpressionAttributeValues={":owner": {"S": owner}},
                ScanIndexForward=False,
                Limit=max(limit, 1),
                **kwargs,
            )
        except ClientError as exc:
            if cursor is not None and error_code(exc) == "ValidationException":
                # The start key is the only part of this request a client chose: DynamoDB refusing it means a
                # cursor this listing did not hand out (decode_cursor already refuses every one we know of).
                raise InvalidCursorError(cursor) from None
            raise storage_error(exc, "DynamoDBChatMemory.list_conversations") from exc
        except BotoCoreError as exc:
            # Throttled after the SDK's retries, a lost connection: the core's errors, as every other method.
            raise storage_error(exc, "DynamoDBChatMemory.list_conversations") from exc
        items = cast("list[Item]", response.get("Items", []))
        summaries = [
            ConversationSummary(
                conversation_id=as_str(item.get(_CID)) or "",
                title=as_str(item.get(_TITLE)) or "",
                last_activity_at=as_str(item.get(_LAST_ACTIVITY)) or "",
            )
            for item in items
        ]
        last = response.get("LastEvaluatedKey")
        next_cursor = None
        if last and summaries:
            next_cursor = encode_cursor(owner, summaries[-1].last_activity_at, summaries[-1].conversation_id)
        return ConversationPage(conversations=summaries, cursor=next_cursor)

    # ------------------------------------------------------------------ the inbox (agentturn.timeline.inbox.Inbox)

    def pending_for(self, assignee: str, after: str | None, limit: int) -> tuple[list[InboxEntry], bool]:
        """One Query of the sparse ``byAssignee`` index (eventually consistent, as every GSI read)."""
        condition = "#as = :as" + (" AND #due > :after" if after is not None else "")
        values: Item = {":as": {"S": assignee}}
        if after is not None:
            values[":after"] = {"S": after}
        try:
            response = self.client.query(
                TableName=self.table_name,
                IndexName=tables.INBOX_INDEX,
                KeyConditionExpression=condition,
                ExpressionAttributeNames=(
                    {"#as": _ASSIGNEE, "#due": _INBOX_DUE} if after is not None else {"#as": _ASSIGNEE}
                ),
                ExpressionAttributeValues=values,
                # One more than asked tells whether more follow, in the same request.
                Limit=max(limit, 1) + 1,
            )
        except (ClientError, BotoCoreError) as exc:
            raise storage_error(exc, "DynamoDBChatMemory.pending_for") from exc
        items = cast("list[Item]", response.get("Items", []))
        entries: list[InboxEntry] = []
        for item in items[: max(limit, 1)]:
            conversation = DynamoDBConversation(self, as_str(item.get(_CID)) or "")
            card = conversation._decode(item, _TIMELINE)
            if isinstance(card, FormMessage | ApprovalMessage):
                entries.append(InboxEntry(conversation.conversation_id, card, as_str(item.get(_INBOX_DUE)) or ""))
        return entries, len(items) > max(limit, 1) or bool(response.get("LastEvaluatedKey") and len(items) > limit)

    # ------------------------------------------------------------------ audit records (agentturn.ports.audit)

    @staticmethod
    def _audit_prefix(created_at: str, turn_id: str) -> str:
        # The prefix retention deletes a turn's entries by (agentturn.aws.retention).
        return f"{_AUDIT_PREFIX}{created_at}#{turn_id}#"

    def _put_once(self, item: Item, operation: str) -> bool:
        """Put ``item`` unless one with its key is there (an audit record is never rewritten): ``False`` then."""
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(#sk)",
                ExpressionAttributeNames={"#sk": _SK},
            )
        except ClientError as exc:
            if error_code(exc) == CONDITION_FAILED:
                return False
            raise storage_error(exc, operation) from exc
        except BotoCoreError as exc:
            raise storage_error(exc, operation) from exc
        return True

    def record_decision(self, conversation_id: str, created_at: str, record: AuditRecord) -> bool:
        """One conditional PutItem: never over a record that is there (a retry's finds its own and stops)."""
        item: Item = {
            _CID: {"S": conversation_id},
            _SK: {"S": self._audit_prefix(created_at, record.turn_id) + record_key(record)},
            _MESSAGE_ID: {"S": f"{record.turn_id}:audit:{record_key(record)}"},
            _BODY: {"S": self.serializer.dumps(record)},
        }
        return self._put_once(item, "DynamoDBChatMemory.record_decision")

    def record_outcome(self, conversation_id: str, created_at: str, record: OutcomeRecord) -> bool:
        """One conditional PutItem keyed by the card: the first outcome stays (a rerun after a crash finds it)."""
        key = self._audit_prefix(created_at, record.turn_id) + _OUTCOME_MARK + record.action_id
        item: Item = {
            _CID: {"S": conversation_id},
            _SK: {"S": key},
            _MESSAGE_ID: {"S": f"{record.turn_id}:audit-outcome:{record.action_id}"},
            _BODY: {"S": self.serializer.dumps(record)},
        }
        return self._put_once(item, "DynamoDBChatMemory.record_outcome")

    def outcomes(self, conversation_id: str, created_at: str, turn_id: str) -> list[OutcomeRecord]:
        records = [
            self.serializer.loads(decode_inline(item[_BODY]), _OUTCOME)
            for item in self._audit_items(conversation_id, created_at, turn_id, _OUTCOME_MARK)
        ]
        return sorted(records, key=lambda r: r.at)

    def decisions(self, conversation_id: str, created_at: str, turn_id: str) -> list[AuditRecord]:
        outcomes = self._audit_prefix(created_at, turn_id) + _OUTCOME_MARK
        records = [
            self.serializer.loads(decode_inline(item[_BODY]), _AUDIT)
            for item in self._audit_items(conversation_id, created_at, turn_id, "")
            if not (as_str(item.get(_SK)) or "").startswith(outcomes)
        ]
        return sorted(records, key=lambda r: r.at)

    def _audit_items(self, conversation_id: str, created_at: str, turn_id: str, after_prefix: str) -> list[Item]:
        items: list[Item] = []
        kwargs: dict[str, Any] = {}
        while True:
            try:
                response = self.client.query(
                    TableName=self.table_name,
                    KeyConditionExpression="#cid = :cid AND begins_with(#sk, :prefix)",
                    ExpressionAttributeNames={"#cid": _CID, "#sk": _SK},
                    ExpressionAttributeValues={
                        ":cid": {"S": conversation_id},
                        ":prefix": {"S": self._audit_prefix(created_at, turn_id) + after_prefix},
                    },
                    ConsistentRead=True,
                    **kwargs,
                )
            except (ClientError, BotoCoreError) as exc:
                raise storage_error(exc, "DynamoDBChatMemory.decisions") from exc
            items += [cast("Item", item) for item in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if start is None:
                return items
            kwargs["ExclusiveStartKey"] = start


@translates_errors
class DynamoDBConversation:
    """One conversation's timeline (what :class:`DynamoDBChatMemory` returns for a conversation id)."""

    def __init__(self, memory: DynamoDBChatMemory, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self._client = memory.client
        self._table = memory.table_name
        self._codec = memory.codec
        self._serializer = memory.serializer
        self._key_prefix = memory.key_prefix
        self._consistent = memory.consistent_reads
        self._inbox_owner_cards = memory.inbox_owner_cards

    # ------------------------------------------------------------------ items

    def _entry(self, key: str, message_id: str, text: str, *, immutable: bool, what: str) -> Item:
        """An entry's item at ``key``: its id, a fresh ``writeId`` and the body (its spilled object, if any,
        already written; ``immutable``: the same text is always written under this key)."""
        write_id = new_write_id()
        item: Item = {
            _CID: {"S": self.conversation_id},
            _SK: {"S": key},
            _MESSAGE_ID: {"S": message_id},
            WRITE_ID: {"S": write_id},
        }
        # The key of a spilled body is worked out only for a body that spills.
        item.update(
            self._codec.encode(text, object_key=lambda: self._object_key(key, write_id, immutable=immutable), what=what)
        )
        return item

    def _item(self, message: TimelineMessage) -> Item:
        """The entry's item (its spilled body, if any, already written), with a fresh ``writeId``."""
        item = self._entry(
            entry_key(message),
            message.message_id,
            self._serializer.dumps(message),
            immutable=message.model_visible,
            what=f"timeline entry {message.message_id!r}",
        )
        if isinstance(message, FormMessage | ApprovalMessage):
            item[_VERSION] = {"N": str(message.version)}
            item[_TYPE] = {"S": message.type}
            keys = assignees(self.conversation_id, message, owner_cards=self._inbox_owner_cards)
            if keys:
                # The inbox rides on the card's own write: a pending card is in the sparse index under its first
                # assignee; the write that settles it (a whole-item put without these) takes it out.
                item[_ASSIGNEE] = {"S": keys[0]}
                item[_INBOX_DUE] = {"S": due(message)}
        return item

    def _inbox_extras(self, card: FormMessage | ApprovalMessage, item: Item) -> None:
        """A card waiting for several principals: an inbox entry for each after the first (the card carries the
        first), put while it waits and put again without its assignee once the card settles (out of the sparse
        index; the item leaves with its turn, so the functions need no DeleteItem). One request each, only for
        such cards."""
        if card.people is None:
            return
        pending = card.status == "PENDING"
        for key in card.people.approvers.inbox_keys()[1:]:
            sk = f"{_INBOX_PREFIX}{card.sort_key}{_SEPARATOR}{card.message_id}{_SEPARATOR}{key}"
            if pending:
                extra = {k: v for k, v in item.items() if k not in (_VERSION, _TYPE, WRITE_ID)}
                extra[_SK] = {"S": sk}
                extra[_ASSIGNEE] = {"S": key}
            else:
                extra = {_CID: {"S": self.conversation_id}, _SK: {"S": sk}, _MESSAGE_ID: {"S": card.message_id}}
            self._client.put_item(TableName=self._table, Item=extra)

    def _group_item(self, messages: Sequence[TimelineMessage]) -> Item:
        """One item holding ``messages`` (consecutive, of one turn), keyed by the last; a fresh ``writeId``."""
        last = messages[-1]
        item = self._entry(
            entry_key(last),
            last.message_id,
            "[" + ",".join(self._serializer.dumps(message) for message in messages) + "]",
            # A group at a key may be replaced by a larger one: every write gets its own object.
            immutable=False,
            what=f"timeline group ending at {last.message_id!r}",
        )
        item[_COUNT] = {"N": str(len(messages))}
        return item

    def _object_key(self, key: str, write_id: str, *, immutable: bool) -> str:
        digest = hashlib.sha256(f"{self.conversation_id}\n{key}".encode()).hexdigest()[:32]
        if immutable:
            # Re-projection writes the same content, so the same object key is harmless.
            return f"{self._key_prefix}{digest}.json.gz"
        # Cards change: every write gets its own object, so a losing writer never clobbers the winner's (all
        # of a card's objects share the digest's prefix: retention removes them together).
        return f"{self._key_prefix}{digest}/{write_id}.json.gz"

    def _decode(self, item: Item, schema: TypeAdapter[T]) -> T:
        text = self._codec.decode(item, what=f"timeline entry {as_str(item.get(_MESSAGE_ID))!r}")
        return self._serializer.loads(text, schema)

    def _messages(self, item: Item) -> list[TimelineMessage]:
        """The messages an item holds: one, or a group's."""
        if _COUNT in item:
            return self._decode(item, _TIMELINE_GROUP)
        return [self._decode(item, _TIMELINE)]

    # ------------------------------------------------------------------ reads

    def _query(self, prefix: str, limit: int | None) -> list[Item]:
        """Entries of this conversation in the ``prefix`` range, latest ``limit`` (all for ``None``), oldest first."""
        if limit is not None and limit <= 0:
            return []
        condition = "#cid = :cid AND begins_with(#sk, :prefix)"
        kwargs: dict[str, Any] = {}
        items: list[Item] = []
        start: Item | None = None
        while True:
            if start is not None:
                kwargs["ExclusiveStartKey"] = start
            if limit is not None:
                kwargs["Limit"] = limit - len(items)
            response = self._client.query(
                TableName=self._table,
                KeyConditionExpression=condition,
                ExpressionAttributeNames=_names(condition),
                ExpressionAttributeValues={":cid": {"S": self.conversation_id}, ":prefix": {"S": prefix}},
                ConsistentRead=self._consistent,
                # The latest N: read backwards from the end, then turn the page around.
                ScanIndexForward=limit is None,
                **kwargs,
            )
            items += [cast("Item", raw) for raw in response.get("Items", [])]
            start = cast("Item | None", response.get("LastEvaluatedKey"))
            if start is None or (limit is not None and len(items) >= limit):
                break
        if limit is not None:
            items.reverse()
        return items

    def get_messages(self, limit: int | None = None) -> list[TimelineMessage]:
        # The latest ``limit`` items of both ranges hold the latest ``limit`` of the merged timeline (a group is
        # keyed by its last message).
        items = self._query(_MODEL_PREFIX, limit) + self._query(_CARD_PREFIX, limit)
        messages = _once_in_order([m for item in items for m in self._messages(item)])
        return _latest(messages, limit)

    def get_model_messages(self, limit: int | None = None) -> list[ModelMessage]:
        items = self._query(_MODEL_PREFIX, limit)
        return _latest(_once_in_order([m for item in items for m in self._model_messages(item)]), limit)

    def _model_messages(self, item: Item) -> list[ModelMessage]:
        """The model messages an item holds (a group an earlier release wrote may also hold an answered card)."""
        return [m for m in self._messages(item) if not isinstance(m, FormMessage | ApprovalMessage)]

    def _walk(self, key_condition: str, values: Item, matching: str, *, forward: bool) -> Iterator[Item]:
        """This conversation's items within ``key_condition`` that pass the filter ``matching`` (``values`` fill
        both, ``:cid`` besides), in key order or from the end, one page at a time (a caller that stops early
        reads no further page)."""
        kwargs: dict[str, Any] = {}
        while True:
            response = self._client.query(
                TableName=self._table,
                KeyConditionExpression=key_condition,
                FilterExpression=matching,
                ExpressionAttributeNames=_names(key_condition + matching),
                ExpressionAttributeValues={":cid": {"S": self.conversation_id}, **values},
                ConsistentRead=self._consistent,
                ScanIndexForward=forward,
                **kwargs,
            )
            yield from (cast("Item", raw) for raw in response.get("Items", []))
            start = response.get("LastEvaluatedKey")
            if start is None:
                return
            kwargs["ExclusiveStartKey"] = start

    def _walk_back(self, prefix: str, message_id: str, matching: str) -> Iterator[Item]:
        """The ``prefix`` range's items that pass the filter ``matching`` (on ``:mid``, the id looked for), from
        the newest."""
        values: Item = {":prefix": {"S": prefix}, ":mid": {"S": message_id}}
        return self._walk("#cid = :cid AND begins_with(#sk, :prefix)", values, matching, forward=False)

    def _search(self, prefix: str, message_id: str) -> Item | None:
        """The entry with ``message_id`` in the ``prefix`` range, walking it back from its end: a card looked
        up by id (the projection's repair, a card whose sort key moved) is nearly always one of the newest,
        and an index to find it would bill a write unit on every card write."""
        return next(self._walk_back(prefix, message_id, "#mid = :mid"), None)

    def get_message(self, message_id: str) -> TimelineMessage | None:
        item = self._search(_CARD_PREFIX, message_id)
        if item is None:
            return self._find_model_message(message_id)
        if _BODY not in item and _BODY_REF not in item:
            return None
        return self._decode(item, _TIMELINE)

    def _find_model_message(self, message_id: str) -> TimelineMessage | None:
        """A model message by id, walking the model range back from its end once: the item it is alone in, or
        a group (which holds it only if its body says so)."""
        for item in self._walk_back(_MODEL_PREFIX, message_id, "#mid = :mid OR attribute_exists(#n)"):
            for message in self._messages(item):
                if message.message_id == message_id:
                    return message
        return None

    # ------------------------------------------------------------------ writes

    def _put(self, item: Item, condition: str, values: Item | None = None) -> tuple[bool, Item | None]:
        """One conditional PutItem: ``(True, None)`` when written; ``(False, seen)`` when its condition failed,
        ``seen`` being the item the condition saw (``None``: there was none)."""
        kwargs: dict[str, Any] = {"ExpressionAttributeValues": values} if values else {}
        try:
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(condition),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **kwargs,
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            return False, old_item(exc)
        return True, None

    def _put_new(self, item: Item) -> bool:
        written, seen = self._put(item, "attribute_not_exists(#sk)")
        # Present already: an earlier append (False), or this very put, landed before its answer was lost.
        return written or written_by(seen, item[WRITE_ID]["S"])

    def append(self, message: TimelineMessage) -> bool:
        _require_id(message)
        item = self._item(message)
        written = self._put_new(item)
        if written and isinstance(message, FormMessage | ApprovalMessage):
            self._inbox_extras(message, item)
        return written

    def append_all(self, messages: Sequence[TimelineMessage]) -> None:
        for message in messages:
            _require_id(message)
        # Model messages are immutable: they go in groups of up to 1 KB (see the module's docstring). Cards
        # change after they are appended: they go one by one, only if absent.
        immutable: dict[str, TimelineMessage] = {}
        cards: list[TimelineMessage] = []
        for message in messages:
            if message.model_visible:
                # The first occurrence of a key wins, as in the reference.
                immutable.setdefault(entry_key(message), message)
            else:
                cards.append(message)
        # In timeline order: a group is keyed by its last message, which must be its latest (see _groups).
        for group, item in self._groups(sorted(immutable.values(), key=_position)):
            if item is None:
                self.append(group[0])
            else:
                self._put_group(item)
        for card in cards:
            self.append(card)

    def _groups(self, messages: list[TimelineMessage]) -> list[tuple[list[TimelineMessage], Item | None]]:
        """``messages`` (in timeline order) cut into runs of one turn whose group item is at most 1 KB (a message
        larger than that alone), each with the group item its size was measured on (``None`` for a message
        alone). Each run is keyed by its last message, its latest: so the item holding a message is keyed at or
        after it, and the latest N items hold the latest N messages."""
        groups: list[tuple[list[TimelineMessage], Item | None]] = []
        current: list[TimelineMessage] = []
        current_item: Item | None = None
        for message in messages:
            if current and current[-1].turn_id == message.turn_id:
                candidate = [*current, message]
                item = self._group_item(candidate)
                if item_size(item) <= _GROUP_BYTES:
                    current, current_item = candidate, item
                    continue
            if current:
                groups.append((current, current_item))
            current, current_item = [message], None
        if current:
            groups.append((current, current_item))
        return groups

    def _put_group(self, item: Item) -> None:
        """Put a group unless its key holds a larger one (a newer projection's): never fewer messages there. A
        refusal leaves nothing missing: the group there holds these messages and more."""
        self._put(item, "attribute_not_exists(#sk) OR attribute_not_exists(#n) OR #n <= :n", {":n": item[_COUNT]})

    def update_message(self, message: CardMessage, expected_version: int) -> bool:
        _require_id(message)
        key = entry_key(message)
        outcome = self._replace_card(message, expected_version)
        if outcome is not None:
            return outcome
        # Nothing under the key the card names: its sort key differs from the stored one. Find the entry by
        # id and update it where it is, keeping the stored position (as the reference does).
        located = self._search(_CARD_PREFIX, message.message_id)
        if located is None:
            return False
        stored_key = as_str(located.get(_SK)) or key
        if stored_key == key:
            return False
        moved = message.model_copy(update={"sort_key": _sort_key_of(stored_key, message.message_id)})
        return bool(self._replace_card(moved, expected_version))

    def _replace_card(self, message: CardMessage, expected_version: int) -> bool | None:
        """One conditional PutItem at the card's key; ``None`` when there is no item under that key at all."""
        item = self._item(message)
        values: Item = {
            ":mid": {"S": message.message_id},
            ":expected": {"N": str(expected_version)},
            ":type": {"S": message.type},
        }
        written, seen = self._put(item, "#mid = :mid AND #v = :expected AND #type = :type", values)
        if seen is None and not written:
            return None
        # Otherwise: the card at another version, or this very put, landed before its answer was lost.
        done = written or written_by(seen, item[WRITE_ID]["S"])
        if done:
            self._inbox_extras(message, item)
        return done

    # ------------------------------------------------------------------ the conversation's active turn

    def get_active_turn(self) -> str | None:
        response = self._client.get_item(
            TableName=self._table,
            Key={_CID: {"S": self.conversation_id}, _SK: {"S": _HEAD}},
            ConsistentRead=True,
            ProjectionExpression="#at",
            ExpressionAttributeNames=_names("#at"),
        )
        item = cast("Item | None", response.get("Item"))
        return as_str(item.get(_ACTIVE_TURN)) if item else None

    def set_active_turn(
        self, turn_id: str | None, *, expected: str | None, listing: ConversationListing | None = None
    ) -> bool:
        values: Item = {}
        if turn_id is None:
            update = "REMOVE #at"
        else:
            update = "SET #at = :turn"
            values[":turn"] = {"S": turn_id}
            if listing is not None:
                # The conversations list rides on this write (no request of its own): same item, same write
                # unit while the head stays under 1 KB; the byOwner index pays one or two index writes.
                update += ", #lo = :owner, #la = :activity, #ti = if_not_exists(#ti, :title)"
                values[":owner"] = {"S": listing.owner}
                values[":activity"] = {"S": listing.at}
                values[":title"] = {"S": listing.title}
        if expected is None:
            condition = "attribute_not_exists(#at)"
        else:
            condition = "#at = :expected"
            values[":expected"] = {"S": expected}
        kwargs: dict[str, Any] = {"ExpressionAttributeValues": values} if values else {}
        try:
            # One conditional write on the head item is the whole "one active turn per conversation" rule:
            # of two concurrent runs, exactly one sees the condition hold.
            self._client.update_item(
                TableName=self._table,
                Key={_CID: {"S": self.conversation_id}, _SK: {"S": _HEAD}},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(update + condition),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **kwargs,
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            # Taking is idempotent: a head that already names this turn (turn ids are unique, so only this
            # call's first attempt can have put it there) means the take landed before its answer was lost.
            # Answering "busy" would make the start delete its own turn and name it as the one in the way.
            head = old_item(exc)
            return turn_id is not None and head is not None and as_str(head.get(_ACTIVE_TURN)) == turn_id
        return True
