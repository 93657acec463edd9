"""True retention: when DynamoDB's TTL removes a turn, everything that belongs to it leaves with it.

DynamoDB deletes a terminal turn's item after ``expiresAt`` (its ``retain_until``). What the item does not
hold leaves only through this consumer of the turns table's stream (``OLD_IMAGE``):

* the turn's S3 objects: every object under ``turns/<turnId>/`` (the current body, and bodies written by
  saves that failed or lost their answer, which the store never deletes itself);
* the turn's timeline entries — its user message, AI and tool messages, cards — which are exactly the
  conversation's items whose key starts with ``t#<turn.createdAt>#<turnId>#`` (model-visible entries) or
  ``c#<turn.createdAt>#<turnId>#`` (cards) (the projection gives every entry of a turn that sort-key
  prefix), and each entry's S3 objects (a spilled body; every version of a card);
* the conversation head, if it still names the turn (a turn that ended without letting go);
* the conversation's listing (``GET /conversations``): its title is the first line of the conversation's first
  turn's input, so it leaves with that turn (cleared when it is the earliest turn left); once no entry of the
  conversation is left, the head item itself is deleted, and the conversation is no longer listed.

Why a stream consumer and not a TTL attribute on timeline items: entries are written while the turn runs,
before anyone knows when it will end, so each would need a second write at the end (every entry's
``expiresAt``), and S3 objects have no item-level TTL at all (a lifecycle rule counts from an object's own
creation, not from the end of its turn). The stream's TTL removal is the one exact moment, costs no write on
the hot path, and only TTL removals are acted on: a turn deleted by the runtime (a start that lost its
conversation) was never projected, and an operator's delete is theirs to scope.

Idempotent: a redelivered record deletes what is left. The order makes a retry after a partial failure
complete: the timeline goes first (its prefix is read from the turn's body), the turn's own objects last;
if the body is already gone, the timeline is found by message id (``<turnId>:...``) instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Literal, cast

# Before pydantic, on purpose: Powertools' batch types import its parser's pydantic models (SQS, Kinesis, Kafka,
# DynamoDB records; ≈ 0.1-0.2 s of a cold start) only when pydantic is already loaded; they are never used here.
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentturn.aws import tables
from agentturn.aws._support import AttributeValue, Item, as_str
from agentturn.aws.body_codec import CORRUPT_BODY, BlobStore, decode_inline
from agentturn.errors import BodyMissingError, StorageError
from agentturn.timeline.conversation_list import title_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

_log = logging.getLogger("agentturn.aws.retention")

#: Who deletes an item when its TTL passes, as the stream record says it.
TTL_PRINCIPAL: Final = "dynamodb.amazonaws.com"
#: Model-visible entries, cards, the cards' further inbox entries and the turn's audit records.
_ENTRY_PREFIXES: Final = (
    tables.MODEL_ENTRY_PREFIX,
    tables.CARD_ENTRY_PREFIX,
    tables.INBOX_ENTRY_PREFIX,
    tables.AUDIT_ENTRY_PREFIX,
)
_DELETE_OBJECTS: Final = 1000
_HEAD: Final = "head"
_ACTIVE_TURN: Final = "activeTurnId"


class RetentionError(StorageError):
    """Part of a removed turn could not be deleted (after bounded retries); the record is retried."""


class _Identity(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str = ""
    principal_id: str = Field(default="", alias="principalId")


class _Change(BaseModel):
    model_config = ConfigDict(extra="ignore")

    old_image: dict[str, dict[str, Any]] | None = Field(default=None, alias="OldImage")


class StreamRecord(BaseModel):
    """The fields of a DynamoDB stream record (as Lambda delivers it) that retention reads."""

    model_config = ConfigDict(extra="ignore")

    event_id: str = Field(default="", alias="eventID")
    event_name: Literal["INSERT", "MODIFY", "REMOVE"] = Field(alias="eventName")
    user_identity: _Identity | None = Field(default=None, alias="userIdentity")
    dynamodb: _Change

    @property
    def is_ttl_removal(self) -> bool:
        identity = self.user_identity
        return (
            self.event_name == "REMOVE"
            and identity is not None
            and identity.type == "Service"
            and identity.principal_id == TTL_PRINCIPAL
        )


@dataclass(frozen=True)
class RemovedTurn:
    """What the consumer needs of a turn item DynamoDB removed (its old image)."""

    turn_id: str
    conversation_id: str
    #: ``S`` text, or ``B`` zlib bytes (already base64-decoded), or ``None`` when the body is in S3.
    body: AttributeValue | None
    body_ref: str | None

    @classmethod
    def from_image(cls, image: Mapping[str, Mapping[str, Any]]) -> RemovedTurn:
        """From a stream OLD_IMAGE (``B`` values arrive base64-encoded in Lambda's JSON event)."""
        turn_id = as_str(dict(image.get(tables.TURN_ID) or {}))
        conversation_id = as_str(dict(image.get("conversationId") or {}))
        if not turn_id or not conversation_id:
            raise ValueError("the old image names no turnId and conversationId: not a turn item")
        raw_body = image.get("body")
        body: AttributeValue | None = None
        if raw_body is not None and "B" in raw_body:
            data = raw_body["B"]
            body = {"B": base64.b64decode(data) if isinstance(data, str) else bytes(data)}
        elif raw_body is not None and "S" in raw_body:
            body = {"S": str(raw_body["S"])}
        return cls(turn_id, conversation_id, body, as_str(dict(image.get("bodyRef") or {})))


class ListingChange(StrEnum):
    """What a removal did to the conversation's listing (``GET /conversations``)."""

    #: Nothing: an earlier turn of the conversation is left (the title is its), or the title is another turn's.
    KEPT = "kept"
    #: The title was the removed turn's input and later turns are left: the title is cleared.
    TITLE_CLEARED = "title_cleared"
    #: No entry of the conversation is left: its head item (listing included) is deleted.
    UNLISTED = "unlisted"


@dataclass(frozen=True)
class Purged:
    """What one removal deleted."""

    turn_id: str
    timeline_entries: int
    objects: int
    released_conversation: bool
    listing: ListingChange = ListingChange.KEPT


@dataclass(frozen=True)
class _BodyFacts:
    """What the removed turn's body says that the purge needs: its timeline prefix and its listing title."""

    created_at: str | None = None
    title: str | None = None


class RetentionCleaner:
    """Deletes what belongs to removed turns: their timeline entries, S3 objects and conversation hold.

    ``turn_key_prefix`` / ``conversation_key_prefix`` must be those of the store and the chat memory
    (their defaults are the same as theirs).
    """

    def __init__(
        self,
        conversations_table: str,
        *,
        client: DynamoDBClient,
        s3_client: S3Client | None = None,
        bucket: str | None = None,
        turn_key_prefix: str = "turns/",
        conversation_key_prefix: str = "conversations/",
    ) -> None:
        self.conversations_table = conversations_table
        self.client = client
        self._blobs = BlobStore(s3_client, bucket) if s3_client is not None and bucket is not None else None
        self.turn_key_prefix = turn_key_prefix
        self.conversation_key_prefix = conversation_key_prefix

    # ------------------------------------------------------------------ one removed turn

    def purge(self, turn: RemovedTurn) -> Purged:
        facts = self._body_facts(turn)
        created_at = facts.created_at
        entries = self._entries(turn, created_at)
        objects = self._delete_entry_objects(turn.conversation_id, entries)
        self._delete_items(
            [
                {tables.CONVERSATION_ID: e[tables.CONVERSATION_ID], tables.ENTRY_KEY: e[tables.ENTRY_KEY]}
                for e in entries
            ]
        )
        released = self._release(turn)
        listing = self._settle_listing(turn, facts)
        # Last: the body is what the timeline's prefix is read from, should this record be retried.
        objects += self._delete_prefix(f"{self.turn_key_prefix}{turn.turn_id}/")
        _log.info(
            "turn %r removed: %d timeline entries, %d objects, listing %s",
            turn.turn_id,
            len(entries),
            objects,
            listing.value,
        )
        return Purged(turn.turn_id, len(entries), objects, released, listing)

    def _body_facts(self, turn: RemovedTurn) -> _BodyFacts:
        """The turn's ``createdAt`` (its timeline prefix) and its listing title, from the old image's body or its
        S3 object; empty when there is no body to read them from, or one that cannot be read (a turn ended
        ``snapshot_unreadable`` is removed like any other: its timeline is then found by message id)."""
        try:
            text: str | None = None
            if turn.body is not None:
                text = decode_inline(turn.body)
            elif turn.body_ref is not None and self._blobs is not None:
                text = self._blobs.get(turn.body_ref)
            if text is None:
                return _BodyFacts()
            body = json.loads(text)
        except BodyMissingError:
            return _BodyFacts()
        except (*CORRUPT_BODY, ValueError) as exc:
            _log.warning("turn %r: its body cannot be read (%s)", turn.turn_id, type(exc).__name__)
            return _BodyFacts()
        if not isinstance(body, dict):
            return _BodyFacts()
        created_at, text_input = body.get("createdAt"), body.get("input")
        return _BodyFacts(
            created_at=created_at if isinstance(created_at, str) and created_at else None,
            # The title the turn's start wrote into the listing, if it was the conversation's first turn.
            title=title_of(text_input) if isinstance(text_input, str) else None,
        )

    def _entries(self, turn: RemovedTurn, created_at: str | None) -> list[Item]:
        """The turn's timeline items (keys, message id, body reference), model-visible entries and cards."""
        if created_at is None:
            # The body is gone (a retry after the turn's objects were deleted): walk the conversation and keep
            # the entries whose id is the turn's. Exact, only slower.
            _log.warning("turn %r: no body to read its timeline prefix from; scanning its conversation", turn.turn_id)
        found: list[Item] = []
        for range_prefix in _ENTRY_PREFIXES:
            prefix = range_prefix if created_at is None else f"{range_prefix}{created_at}#{turn.turn_id}#"
            found += self._entries_under(turn, prefix)
        return found

    def _entries_under(self, turn: RemovedTurn, prefix: str) -> list[Item]:
        names = {"#cid": tables.CONVERSATION_ID, "#sk": tables.ENTRY_KEY, "#mid": tables.MESSAGE_ID}
        values: dict[str, Any] = {
            ":cid": {"S": turn.conversation_id},
            ":mine": {"S": f"{turn.turn_id}:"},
            ":prefix": {"S": prefix},
        }
        kwargs: dict[str, Any] = {}
        found: list[Item] = []
        while True:
            response = self.client.query(
                TableName=self.conversations_table,
                KeyConditionExpression="#cid = :cid AND begins_with(#sk, :prefix)",
                # Entries of a turn carry ids "<turnId>:m:…", "<turnId>:input:…", "<turnId>:approval:…".
                FilterExpression="begins_with(#mid, :mine)",
                ProjectionExpression="#cid, #sk, #mid, bodyRef",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ConsistentRead=True,
                **kwargs,
            )
            found += [cast("Item", item) for item in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if start is None:
                return found
            kwargs["ExclusiveStartKey"] = start

    def _delete_entry_objects(self, conversation_id: str, entries: Iterable[Item]) -> int:
        if self._blobs is None:
            return 0
        deleted = 0
        for entry in entries:
            key = as_str(entry.get(tables.ENTRY_KEY)) or ""
            digest = hashlib.sha256(f"{conversation_id}\n{key}".encode()).hexdigest()[:32]
            ref = as_str(entry.get("bodyRef"))
            if ref is not None:
                deleted += self._delete_keys([ref])
            if key.startswith(tables.CARD_ENTRY_PREFIX) or (
                ref is not None and ref.startswith(f"{self.conversation_key_prefix}{digest}/")
            ):
                # Cards get one object per write; earlier versions (and writes that lost) share this prefix.
                deleted += self._delete_prefix(f"{self.conversation_key_prefix}{digest}/")
        return deleted

    def _release(self, turn: RemovedTurn) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.update_item(
                TableName=self.conversations_table,
                Key={tables.CONVERSATION_ID: {"S": turn.conversation_id}, tables.ENTRY_KEY: {"S": "head"}},
                UpdateExpression="REMOVE #at",
                ConditionExpression="#at = :turn",
                ExpressionAttributeNames={"#at": "activeTurnId"},
                ExpressionAttributeValues={":turn": {"S": turn.turn_id}},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            return False  # another turn holds the conversation, or none does: nothing of ours to release
        return True

    def _settle_listing(self, turn: RemovedTurn, facts: _BodyFacts) -> ListingChange:
        """Take the removed turn's content out of the conversation's listing (after its entries are gone).

        Nothing left of the conversation: the head item goes (owner, activity, title: the listing), unless a
        turn holds the conversation again (one started since; then only the title is looked at, below). Else the
        title goes if it is this turn's (the same text) and no earlier turn is left: the title is always the
        first turn's input (``if_not_exists`` when a turn starts), and a conversation whose title was cleared
        takes its next turn's."""
        from botocore.exceptions import ClientError

        if not self._any_entry_left(turn.conversation_id):
            try:
                self.client.delete_item(
                    TableName=self.conversations_table,
                    Key=self._head(turn.conversation_id),
                    ConditionExpression="attribute_not_exists(#at)",
                    ExpressionAttributeNames={"#at": _ACTIVE_TURN},
                )
                return ListingChange.UNLISTED
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
        if facts.title is None or facts.created_at is None:
            return ListingChange.KEPT  # no body to tell its title or its place by: a later turn's title is kept
        if self._earlier_entry_left(turn, facts.created_at):
            return ListingChange.KEPT
        try:
            self.client.update_item(
                TableName=self.conversations_table,
                Key=self._head(turn.conversation_id),
                UpdateExpression="REMOVE #ti",
                ConditionExpression="#ti = :title",
                ExpressionAttributeNames={"#ti": tables.TITLE},
                ExpressionAttributeValues={":title": {"S": facts.title}},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            return ListingChange.KEPT  # no head, no title, or another turn's title
        return ListingChange.TITLE_CLEARED

    @staticmethod
    def _head(conversation_id: str) -> Item:
        return {tables.CONVERSATION_ID: {"S": conversation_id}, tables.ENTRY_KEY: {"S": _HEAD}}

    def _any_entry_left(self, conversation_id: str) -> bool:
        """Whether the conversation has any timeline entry (the head sorts between the ``c#`` and ``t#``
        ranges, so two keys of the partition tell)."""
        response = self.client.query(
            TableName=self.conversations_table,
            KeyConditionExpression="#cid = :cid",
            ProjectionExpression="#sk",
            ExpressionAttributeNames={"#cid": tables.CONVERSATION_ID, "#sk": tables.ENTRY_KEY},
            ExpressionAttributeValues={":cid": {"S": conversation_id}},
            ConsistentRead=True,
            Limit=2,
        )
        return any(as_str(cast("Item", item).get(tables.ENTRY_KEY)) != _HEAD for item in response.get("Items", []))

    def _earlier_entry_left(self, turn: RemovedTurn, created_at: str) -> bool:
        """Whether a model-visible entry of an earlier turn is left (every turn's input is one: its user
        message, keyed ``t#<createdAt>#<turnId>#…``, so entries before the removed turn's prefix are earlier)."""
        response = self.client.query(
            TableName=self.conversations_table,
            KeyConditionExpression="#cid = :cid AND #sk BETWEEN :low AND :high",
            ProjectionExpression="#sk",
            ExpressionAttributeNames={"#cid": tables.CONVERSATION_ID, "#sk": tables.ENTRY_KEY},
            ExpressionAttributeValues={
                ":cid": {"S": turn.conversation_id},
                ":low": {"S": tables.MODEL_ENTRY_PREFIX},
                ":high": {"S": f"{tables.MODEL_ENTRY_PREFIX}{created_at}#{turn.turn_id}#"},
            },
            ConsistentRead=True,
            Limit=1,
        )
        return bool(response.get("Items"))

    # ------------------------------------------------------------------ requests

    def _delete_items(self, keys: list[Item]) -> None:
        # One DeleteItem per entry (botocore retries a throttled one): BatchWriteItem would save requests on a
        # path that runs once per turn, and need a grant that lets the function put items as well.
        for key in keys:
            self.client.delete_item(TableName=self.conversations_table, Key=key)

    def _delete_prefix(self, prefix: str) -> int:
        if self._blobs is None:
            return 0
        keys: list[str] = []
        for page in self._blobs.client.get_paginator("list_objects_v2").paginate(
            Bucket=self._blobs.bucket, Prefix=prefix
        ):
            keys += [obj["Key"] for obj in page.get("Contents", [])]
        return self._delete_keys(keys)

    def _delete_keys(self, keys: list[str]) -> int:
        if self._blobs is None or not keys:
            return 0
        for start in range(0, len(keys), _DELETE_OBJECTS):
            chunk = keys[start : start + _DELETE_OBJECTS]
            response = self._blobs.client.delete_objects(
                Bucket=self._blobs.bucket, Delete={"Objects": [{"Key": key} for key in chunk], "Quiet": True}
            )
            errors = response.get("Errors", [])
            if errors:
                raise RetentionError(f"S3 refused to delete {len(errors)} objects, e.g. {errors[0]!r}")
        return len(keys)


def removed_turn(raw: Mapping[str, Any]) -> RemovedTurn | None:
    """The turn a stream record removed by TTL; ``None`` for any other record (an insert, an update, a delete
    that was not TTL's). A record that is not a DynamoDB stream record raises ``ValueError``."""
    try:
        record = StreamRecord.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(f"not a DynamoDB stream record: {exc}") from None
    if not record.is_ttl_removal or record.dynamodb.old_image is None:
        return None
    return RemovedTurn.from_image(record.dynamodb.old_image)


def handle_stream_event(event: Mapping[str, Any], context: Any, cleaner: RetentionCleaner) -> dict[str, Any]:
    """One Lambda invocation on a batch of the turns table's stream: purge each TTL-removed turn; report the
    records that failed (``ReportBatchItemFailures``: Lambda retries from the first failed one)."""

    def record_handler(record: Any) -> str:
        turn = removed_turn(record.raw_event)
        if turn is None:
            return "SKIPPED"
        cleaner.purge(turn)
        return "PURGED"

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
    response = process_partial_response(
        event=dict(event), record_handler=record_handler, processor=processor, context=context
    )
    return dict(response)


def cleaner_from_env(environ: Mapping[str, str] | None = None) -> RetentionCleaner:
    """The cleaner of a deployment: ``CONVERSATIONS_TABLE`` (required) and ``SNAPSHOT_BUCKET`` (optional)."""
    import os

    from agentturn.aws._support import dynamodb_client, s3_client

    env = os.environ if environ is None else environ
    table = env.get(tables.ENV_CONVERSATIONS_TABLE, "").strip()
    if not table:
        raise ValueError(f"environment variable {tables.ENV_CONVERSATIONS_TABLE!r} must name the conversations table")
    bucket = env.get(tables.ENV_SNAPSHOT_BUCKET, "").strip() or None
    return RetentionCleaner(
        table, client=dynamodb_client(), s3_client=s3_client() if bucket is not None else None, bucket=bucket
    )
