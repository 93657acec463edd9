"""DynamoDBTurnStore: the TurnStore port on DynamoDB (one item per turn), large bodies spilled to S3.

The item of a turn::

    turnId            S   partition key
    version           N   the snapshot's version; every write is conditional on it
    status            S   TurnStatus
    conversationId    S   for operators (which conversation a turn belongs to)
    body              S|B the snapshot JSON: plain text when small, zlib-compressed binary otherwise
    bodyRef           S   instead of body: S3 key of a gzip object, for snapshots too large for an item
    cancelRequested   BOOL monotonic: only request_cancel (or a save of a turn that carries it) sets it,
                          no save clears it; absent until then
    updatedAt         N   store-clock epoch seconds of the last snapshot write
    runnableShard S, runnableSince N          present only while READY/RUNNING: the sparse, keys-only
                          "runnable" index the sweeper reads; both keep their value while the turn stays
                          runnable, so its saves and claims write nothing to the index
    leaseId S, leaseExpiresAt N               present only while leased (``leaseOwner``, on items written
                          before, is removed with them)
    overdueShard S, waitExpiresAt N           present only while blocked on a wait with a deadline: the
                          sparse "overdue" index (find_overdue)
    expiresAt         N   TTL: ``turn.retain_until`` of a terminal turn (DynamoDB deletes it after that)
    writeId           S   nonce of the create/save/mark that wrote the item (recognises a retried write as ours)
    unreadableAttempts N, notBefore N   only on a turn whose body cannot be read: attempts counted so far and
                          when the next is due (``mark_unreadable``; the body itself is never rewritten)
    errorType, errorMessage S           only on a turn ended FAILED because its body cannot be read
    queuedAnswers L, queuedActions SS   only while answers wait beside a running turn (``queue_answer``: each a
                          QueuedAnswer written with the serializer, and the action ids they answer); a save
                          that leaves the turn waiting or ended takes them all or fails (``AnswersQueuedError``)

Semantics are those of :class:`agentturn.ports.store.InMemoryTurnStore`, which is the reference; the contract
suite in ``tests/contract`` runs the same tests against both. Each operation is one DynamoDB request
(``find_runnable`` / ``find_overdue``: one Query per shard, ``find_runnable`` then one BatchGetItem per
100 candidates; ``save``: two in the one case where it finds
a cancel requested after its turn was loaded; a spilled body adds one S3 PUT per save, one GET per load).
Conditional writes ask for ``ReturnValuesOnConditionCheckFailure=ALL_OLD``, so a lost condition is told
apart (not found / lease lost / version conflict, with the stored version) without another read.

Writes whose answer is lost (DESIGN invariant 10). The SDK retries a request whose response timed out,
and that retry then fails its condition because the first attempt landed. Every conditional write carries
a nonce (``writeId`` for create/save, the fresh lease id for a claim), and a failed condition whose old item
carries it counts as the success it was. ``renew`` and ``request_cancel`` are idempotent as they stand (a
repeated attempt meets its condition again); ``release`` may answer ``False`` for a release that landed,
which no caller acts on. S3 objects are deleted only when a successful write's own ``UPDATED_OLD`` (or a
delete's ``ALL_OLD``) proves the item stopped referencing them: an object written for a write that failed
or whose answer was lost is never deleted here (it may be the very object the item references); the
retention consumer (:mod:`agentturn.aws.retention`) removes a turn's objects together with the turn.
"""

from __future__ import annotations

import logging
import math
import random
import time
import zlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, cast

from botocore.exceptions import ClientError
from pydantic import TypeAdapter, ValidationError

from agentturn.aws import tables
from agentturn.aws._support import (
    CONDITION_FAILED,
    WRITE_ID,
    Item,
    as_float,
    as_int,
    as_str,
    dynamodb_client,
    error_code,
    new_write_id,
    number,
    old_item,
    written_by,
)
from agentturn.aws.body_codec import BODY, BODY_REF, CORRUPT_BODY, BodyCodec
from agentturn.aws.translate import translates_errors
from agentturn.engine.clock import Clock
from agentturn.errors import (
    AnswersQueuedError,
    BodyMissingError,
    LeaseLostError,
    SnapshotUnreadableError,
    StorageError,
    StorageUnavailableError,
    TurnNotFoundError,
    VersionConflictError,
)
from agentturn.ports.serializer import JSON, Serializer
from agentturn.ports.store import (
    SNAPSHOT_UNREADABLE,
    Lease,
    RunnableTurn,
    as_written,
    backoff_until,
    check_round_trip,
    check_schema_version,
    new_lease_id,
    wait_deadline,
)
from agentturn.state.turn import QueuedAnswer, Turn, TurnStatus

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

_log = logging.getLogger("agentturn.aws.turn_store")

_TURN_ID: Final = tables.TURN_ID
_VERSION: Final = tables.TURN_VERSION
_STATUS: Final = "status"
_CONVERSATION: Final = "conversationId"
_BODY: Final = BODY
_BODY_REF: Final = BODY_REF
_CANCEL: Final = "cancelRequested"
_UPDATED_AT: Final = tables.UPDATED_AT
_SHARD: Final = tables.RUNNABLE_SHARD
_RUNNABLE_SINCE: Final = tables.RUNNABLE_SINCE
_LEASE_ID: Final = "leaseId"
_LEASE_OWNER: Final = "leaseOwner"
_LEASE_EXPIRES: Final = tables.LEASE_EXPIRES_AT
_OVERDUE_SHARD: Final = tables.OVERDUE_SHARD
_WAIT_EXPIRES: Final = tables.WAIT_EXPIRES_AT
_EXPIRES_AT: Final = tables.EXPIRES_AT
_UNREADABLE_ATTEMPTS: Final = "unreadableAttempts"
_NOT_BEFORE: Final = "notBefore"
_ERROR_TYPE: Final = "errorType"
_ERROR_MESSAGE: Final = "errorMessage"
_QUEUED: Final = "queuedAnswers"
_QUEUED_ACTIONS: Final = "queuedActions"

# Every attribute an expression names goes through a placeholder: "status" is a reserved word, and one
# table of placeholders keeps the expressions readable.
_NAMES: Final = {
    "#tid": _TURN_ID,
    "#v": _VERSION,
    "#st": _STATUS,
    "#body": _BODY,
    "#ref": _BODY_REF,
    "#cx": _CANCEL,
    "#ua": _UPDATED_AT,
    "#shard": _SHARD,
    "#rs": _RUNNABLE_SINCE,
    "#lid": _LEASE_ID,
    "#lo": _LEASE_OWNER,
    "#lx": _LEASE_EXPIRES,
    "#exp": _EXPIRES_AT,
    "#oshard": _OVERDUE_SHARD,
    "#wx": _WAIT_EXPIRES,
    "#wid": WRITE_ID,
    "#ux": _UNREADABLE_ATTEMPTS,
    "#nb": _NOT_BEFORE,
    "#et": _ERROR_TYPE,
    "#em": _ERROR_MESSAGE,
    "#qa": _QUEUED,
    "#qk": _QUEUED_ACTIONS,
}
_RUNNABLE_VALUES: Final = {":ready": {"S": TurnStatus.READY.value}, ":running": {"S": TurnStatus.RUNNING.value}}
#: Statuses a turn can still leave: the ones an unreadable turn may be counted (and ended) in.
_OPEN_VALUES: Final = {f":open{i}": {"S": s.value} for i, s in enumerate(TurnStatus) if not s.is_terminal}
#: What a body that does not decode raises (transport errors are none of these: they are retried as such).
_UNDECODABLE: Final = (*CORRUPT_BODY, ValidationError, ValueError)
_TURN: Final[TypeAdapter[Turn]] = TypeAdapter(Turn)
_QUEUED_ANSWER: Final[TypeAdapter[QueuedAnswer]] = TypeAdapter(QueuedAnswer)
#: A body pointer that no longer resolves is re-read this many times (a concurrent save replaced it).
_LOAD_ATTEMPTS: Final = 3
#: BatchGetItem takes at most 100 keys; unprocessed keys (throttling) are asked for again this many times.
_BATCH_GET_SIZE: Final = 100
_BATCH_GET_ATTEMPTS: Final = 8


class _CancelRequestedMeanwhile(Exception):
    """A save's only failed condition was "no cancel requested": retry it carrying the flag."""


@dataclass(frozen=True)
class _Landed:
    """A save's condition failed on the SDK's retry because the first attempt had landed: it succeeded."""

    cancel_requested: bool


def _names(expression: str) -> dict[str, str]:
    """The placeholders ``expression`` uses (DynamoDB refuses unused ones)."""
    return {k: v for k, v in _NAMES.items() if k in expression}


#: Index keys that keep their stored value when present: the runnable index's keys stay put while the turn
#: stays runnable, so no save of a runnable turn moves it in the index (a move bills a delete and a put).
_STABLE: Final = frozenset({"#shard", "#rs"})


def _set_expression(placeholder: str) -> str:
    value = f":{placeholder[1:]}"
    if placeholder in _STABLE:
        return f"{placeholder} = if_not_exists({placeholder}, {value})"
    return f"{placeholder} = {value}"


@translates_errors
class DynamoDBTurnStore:
    """A TurnStore on one DynamoDB table (see :data:`agentturn.aws.tables.TURNS_TABLE`).

    ``bucket`` (with ``s3_client``) receives bodies whose compressed size exceeds ``inline_limit``, as
    ``turns/<turnId>/<version>-<nonce>.json.gz`` (the write's nonce): a fenced-off writer never overwrites
    the object a current writer's item points to, and an SDK retry of a PUT rewrites the same bytes.
    Without a bucket, bodies up to the item limit stay inline and larger ones raise
    :class:`~agentturn.errors.BodyTooLargeError` (see :mod:`agentturn.aws.body_codec`). ``serializer`` makes
    the text a snapshot is stored as (:data:`agentturn.ports.serializer.JSON` by default).
    ``clock`` decides lease expiry and ``updatedAt`` (inject one in tests; every process of a deployment
    must agree on time within much less than a lease).
    """

    def __init__(
        self,
        table_name: str,
        *,
        client: DynamoDBClient | None = None,
        s3_client: S3Client | None = None,
        bucket: str | None = None,
        clock: Clock = time.time,
        compress_threshold: int = 256,
        inline_limit: int = 64 * 1024,
        compress_level: int = 6,
        runnable_shards: int = tables.RUNNABLE_SHARDS,
        terminal_ttl_seconds: float | None = None,
        key_prefix: str = "turns/",
        serializer: Serializer = JSON,
        check_round_trip: bool = False,
    ) -> None:
        if runnable_shards < 1:
            raise ValueError(f"runnable_shards must be at least 1, not {runnable_shards!r}")
        self.table_name = table_name
        self.client: DynamoDBClient = client if client is not None else dynamodb_client()
        # Every snapshot but the tiniest is compressed (with the preset dictionary of body_dictionary): a write
        # is billed per started KB of the item, and compressing a few KB costs tens of microseconds. Above
        # ``inline_limit`` a body costs more as write units than as an S3 PUT + GET (64 KB = 64 WCU/save).
        self.codec = BodyCodec.for_bucket(
            bucket, s3_client, compress_threshold=compress_threshold, inline_limit=inline_limit, level=compress_level
        )
        self.serializer = serializer
        # Off in production (a second decode of every write); the conformance suite turns it on.
        self.check_round_trip = check_round_trip
        self.clock = clock
        self.runnable_shards = runnable_shards
        # For turns that carry no retain_until of their own (the Runner sets one from the agent's policy).
        self.terminal_ttl_seconds = terminal_ttl_seconds
        self.key_prefix = key_prefix

    # ------------------------------------------------------------------ encoding

    def _shard(self, turn_id: str) -> str:
        return f"R#{zlib.crc32(turn_id.encode()) % self.runnable_shards}"

    def _derived(self, turn: Turn, now: float) -> tuple[Item, list[str]]:
        """The index and TTL attributes ``turn``'s state implies: ``(to set, placeholders to remove)``.

        Sparse indexes hold a turn only while it has the attributes, so "not runnable" is "attribute
        removed" in the same write that changes the status.
        """
        sets: Item = {}
        removes: list[str] = []
        shard = self._shard(turn.id)
        if turn.status.is_runnable:
            # Both index keys keep the value they had while the turn stays runnable (see _set_expression).
            sets["#shard"] = {"S": shard}
            sets["#rs"] = {"N": number(now)}
        else:
            # Nothing left to run: the turn leaves the runnable index and its lease ends with this write.
            removes += ["#shard", "#rs", "#lid", "#lo", "#lx"]
        due = backoff_until(turn)
        if due is not None:
            # In the backoff of a failed attempt: the sweeper leaves the turn alone until then.
            sets["#nb"] = {"N": number(due)}
        else:
            removes.append("#nb")
        deadline = wait_deadline(turn)
        if deadline is not None:
            sets["#oshard"] = {"S": shard}
            sets["#wx"] = {"N": number(deadline)}
        else:
            removes += ["#oshard", "#wx"]
        retain_until = turn.retain_until
        if retain_until is None and self.terminal_ttl_seconds is not None:
            retain_until = now + self.terminal_ttl_seconds
        if turn.status.is_terminal and retain_until is not None:
            # DynamoDB's TTL takes whole epoch seconds; rounding up never deletes early.
            sets["#exp"] = {"N": str(math.ceil(retain_until))}
        else:
            removes.append("#exp")
        return sets, removes

    def _encode_body(self, turn: Turn, write_id: str) -> Item:
        """``{"body"|"bodyRef": value}``; writes the S3 object first if the body is spilled."""
        text = self.serializer.dumps(turn)
        if self.check_round_trip:
            check_round_trip(turn, text, self.serializer)
        # The write's nonce in the key: a fenced-off writer never overwrites the object a current item names.
        body = self.codec.encode(
            text,
            object_key=lambda: f"{self.key_prefix}{turn.id}/{turn.version}-{write_id}.json.gz",
            what=f"snapshot of turn {turn.id!r}",
        )
        return body

    def _decode(self, text: str, version: int, cancel_requested: bool) -> Turn:
        turn = check_schema_version(self.serializer.loads(text, _TURN))
        return turn.model_copy(update={"version": version, "cancel_requested": cancel_requested})

    def _read(self, item: Item) -> Turn | None:
        """The turn ``item`` holds; ``None`` if its S3 body object is gone (it may have just been replaced)."""
        if _BODY not in item and _BODY_REF not in item:
            raise self._unreadable(item, "the item has neither a body nor a body reference")
        try:
            text = self.codec.decode(item, what=f"turn item {as_str(item.get(_TURN_ID))!r}")
            turn = self._decode(text, as_int(item.get(_VERSION)), bool(item.get(_CANCEL, {}).get("BOOL", False)))
            turn.queued_answers = self._queued(item)
            return turn
        except _UNDECODABLE as exc:
            first_line = next(iter(str(exc).splitlines()), "")
            raise self._unreadable(item, f"{type(exc).__name__}: {first_line}") from exc
        except BodyMissingError:
            if not self.codec.spills:
                # A spilled body and no bucket to read it from: a misconfiguration, not a race.
                raise
            return None

    def _queued(self, item: Item) -> list[QueuedAnswer]:
        """The answers queued beside the turn ``item`` holds, oldest first."""
        return [self.serializer.loads(raw["S"], _QUEUED_ANSWER) for raw in item.get(_QUEUED, {}).get("L", [])]

    @staticmethod
    def _unreadable(item: Item, detail: str) -> SnapshotUnreadableError:
        """The error for an unreadable ``item``, with what the item says besides its body."""
        not_before = item.get(_NOT_BEFORE)
        return SnapshotUnreadableError(
            as_str(item.get(_TURN_ID)) or "?",
            detail,
            status=as_str(item.get(_STATUS)),
            version=as_int(item.get(_VERSION)),
            conversation_id=as_str(item.get(_CONVERSATION)),
            attempts=as_int(item.get(_UNREADABLE_ATTEMPTS)),
            not_before=as_float(not_before) if not_before is not None else None,
            error_type=as_str(item.get(_ERROR_TYPE)),
        )

    # ------------------------------------------------------------------ TurnStore

    def create(self, turn: Turn, *, lease: Lease | None = None) -> Turn:
        stored = as_written(turn, version=1, cancel_requested=turn.cancel_requested)
        write_id = new_write_id()
        body = self._encode_body(stored, write_id)
        now = self.clock()
        item: Item = {
            _TURN_ID: {"S": turn.id},
            _VERSION: {"N": "1"},
            _STATUS: {"S": stored.status.value},
            _CONVERSATION: {"S": stored.conversation_id},
            _UPDATED_AT: {"N": number(now)},
            WRITE_ID: {"S": write_id},
            **body,
        }
        if stored.cancel_requested:
            # Absent means "not requested" (the save conditions read it so): every byte of an item is billed.
            item[_CANCEL] = {"BOOL": True}
        derived, _ = self._derived(stored, now)
        item.update({_NAMES[placeholder]: value for placeholder, value in derived.items()})
        if lease is not None:
            # Created already claimed (a synchronous run): one write instead of a Put and a claim.
            item[_NAMES["#lid"]] = {"S": lease.lease_id}
            item[_NAMES["#lx"]] = {"N": number(lease.expires_at)}
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(#tid)",
                ExpressionAttributeNames=_names("#tid"),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            existing = old_item(exc)
            if not written_by(existing, write_id):
                # Another turn holds the id. The body object written above (if any) is left alone: deleting
                # it is not worth reasoning about which attempt of which request might still reference it.
                raise VersionConflictError(turn.id, None, as_int((existing or {}).get(_VERSION), 0) or None) from None
            # Our own put landed and the SDK's retry of it found the item: created as asked.
            _log.info("create of turn %r landed before its answer was lost; counted as done", turn.id)
        return stored

    def load(self, turn_id: str) -> Turn:
        gone: Item = {}
        for _ in range(_LOAD_ATTEMPTS):
            response = self.client.get_item(
                TableName=self.table_name, Key={_TURN_ID: {"S": turn_id}}, ConsistentRead=True
            )
            item = cast("Item | None", response.get("Item"))
            if item is None:
                raise TurnNotFoundError(turn_id)
            turn = self._read(item)
            if turn is not None:
                return turn
            # The object was replaced and deleted by a save between our GetItem and our S3 GET: read the item
            # again, it now points to the newer body. (Gone on every read: it is gone for good.)
            gone = item
        raise self._unreadable(gone, f"its body object {as_str(gone.get(_BODY_REF))!r} is gone")

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        now = self.clock()
        version = expected_version + 1
        stored = as_written(turn, version=version, cancel_requested=turn.cancel_requested)
        write_id = new_write_id()
        body = self._encode_body(stored, write_id)
        cancel = stored.cancel_requested
        # Queued answers: checked (and taken) only by a save that leaves the turn waiting or ended, or took some.
        taken = turn.answers_taken if turn.answers_taken or not turn.status.is_runnable else None
        # A failed save leaves the object it wrote (if any) in place: see the module's note on lost answers.
        try:
            outcome = self._update_snapshot(
                stored, body, expected_version, lease_id, now, write_id, cancel=cancel, taken=taken
            )
        except _CancelRequestedMeanwhile:
            # The only thing that failed is "cancel not requested": write again carrying the flag. This is
            # the one case a save costs two requests, and it happens once, on a turn about to be cancelled.
            cancel = True
            # Carrying the flag changes what the indexes hold (a blocked turn with it is due for the sweeper).
            stored = stored.model_copy(update={"cancel_requested": True})
            outcome = self._update_snapshot(
                stored, body, expected_version, lease_id, now, write_id, cancel=cancel, taken=taken
            )
        if isinstance(outcome, _Landed):
            # Our write is what the item holds; a cancel requested since then is on it too.
            if outcome.cancel_requested and not cancel:
                return stored.model_copy(update={"cancel_requested": True})
            return stored
        previous_ref = as_str(outcome.get(_BODY_REF))
        if previous_ref is not None and previous_ref != as_str(body.get(_BODY_REF)):
            # UPDATED_OLD of this very write: the item referenced that object until now, and no later write
            # can point back to it (each object belongs to one version, and versions only grow).
            self.codec.discard(previous_ref)
        return stored

    def _update_snapshot(
        self,
        stored: Turn,
        body: Item,
        expected_version: int,
        lease_id: str | None,
        now: float,
        write_id: str,
        *,
        cancel: bool,
        taken: int | None = None,
    ) -> Item | _Landed:
        """One conditional UpdateItem writing ``stored``: the attributes it replaced, or :class:`_Landed` when
        an SDK retry found the item already holding this write; raises the core's error for a failed condition."""
        values: Item = {
            ":v": {"N": str(stored.version)},
            ":expected": {"N": str(expected_version)},
            ":st": {"S": stored.status.value},
            ":now": {"N": number(now)},
            ":wid": {"S": write_id},
        }
        sets = ["#v = :v", "#st = :st", "#ua = :now", "#wid = :wid"]
        removes: list[str] = []
        if _BODY in body:
            sets.append("#body = :body")
            values[":body"] = body[_BODY]
            removes.append("#ref")
        else:
            sets.append("#ref = :ref")
            values[":ref"] = body[_BODY_REF]
            removes.append("#body")
        derived, derived_removes = self._derived(stored, now)
        for placeholder, value in derived.items():
            sets.append(_set_expression(placeholder))
            values[f":{placeholder[1:]}"] = value
        removes += derived_removes
        condition = "attribute_exists(#tid) AND #v = :expected AND "
        if lease_id is not None:
            # The lease must be the current one, expired or not: only a takeover by another claim fences us.
            condition += "#lid = :lid"
            values[":lid"] = {"S": lease_id}
        else:
            condition += "(attribute_not_exists(#lx) OR #lx <= :now)"
        if cancel:
            sets.append("#cx = :true")
            values[":true"] = {"BOOL": True}
        else:
            # The flag is never written false, so no stale save can clear it; and the save asserts it is
            # still down, so the turn it returns carries the stored flag without a second read. (Reading it
            # back through ReturnValues is not portable: moto omits attributes an update left unchanged.)
            condition += " AND (attribute_not_exists(#cx) OR #cx = :false)"
            values[":false"] = {"BOOL": False}
        if taken == 0:
            condition += " AND attribute_not_exists(#qa)"
        elif taken is not None:
            # Exactly the answers this turn applied: one queued since then fails the write (and is applied next).
            condition += " AND size(#qa) = :taken"
            values[":taken"] = {"N": str(taken)}
            removes += ["#qa", "#qk"]
        update = f"SET {', '.join(sets)} REMOVE {', '.join(removes)}"
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key={_TURN_ID: {"S": stored.id}},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(update + condition),
                ExpressionAttributeValues=values,
                # The old bodyRef (if any) names the S3 object this write orphaned.
                ReturnValues="UPDATED_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return cast("Item", response.get("Attributes", {}))
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            item = old_item(exc)
        if item is not None and written_by(item, write_id):
            _log.info("save of turn %r at version %d landed before its answer was lost", stored.id, stored.version)
            return _Landed(cancel_requested=bool(item.get(_CANCEL, {}).get("BOOL", False)))
        if item is not None and not cancel and self._only_cancel_differs(item, expected_version, lease_id, now):
            raise _CancelRequestedMeanwhile
        if item is not None and taken is not None and self._fenced_ok(item, expected_version, lease_id, now):
            queued = self._queued(item)
            if len(queued) != taken:
                raise AnswersQueuedError(stored.id, queued)
        raise self._save_conflict(stored.id, expected_version, lease_id, item)

    @staticmethod
    def _fenced_ok(item: Item, expected_version: int, lease_id: str | None, now: float) -> bool:
        """The item is at the version a save expected, and its lease condition holds."""
        if as_int(item.get(_VERSION)) != expected_version:
            return False
        if lease_id is not None:
            return as_str(item.get(_LEASE_ID)) == lease_id
        return _LEASE_EXPIRES not in item or as_float(item.get(_LEASE_EXPIRES)) <= float(number(now))

    @classmethod
    def _only_cancel_differs(cls, item: Item, expected_version: int, lease_id: str | None, now: float) -> bool:
        lease_ok = cls._fenced_ok(item, expected_version, lease_id, now)
        return lease_ok and bool(item.get(_CANCEL, {}).get("BOOL", False))

    @staticmethod
    def _save_conflict(
        turn_id: str, expected_version: int, lease_id: str | None, item: Item | None
    ) -> TurnNotFoundError | VersionConflictError:
        """Which condition failed, decided on the item the write saw (the same order as the reference)."""
        if item is None:
            return TurnNotFoundError(turn_id)
        actual = as_int(item.get(_VERSION))
        if lease_id is not None and as_str(item.get(_LEASE_ID)) != lease_id:
            return LeaseLostError(turn_id, lease_id)
        return VersionConflictError(turn_id, expected_version, actual)

    def claim(self, turn_id: str, worker_id: str, lease_seconds: float) -> Lease | None:
        now = self.clock()
        lease = Lease(turn_id, worker_id, new_lease_id(), float(number(now + lease_seconds)))
        condition = (
            "attribute_exists(#tid) AND #st IN (:ready, :running) AND (attribute_not_exists(#lx) OR #lx <= :now)"
        )
        # The holder's worker id is not stored (the lease id fences; who held it is in the worker's logs): every
        # byte of the item is billed again on each of its writes.
        update = "SET #lid = :lid, #lx = :lx"
        try:
            # ALL_NEW hands the snapshot back with the claim: the worker needs no read before it starts.
            response = self.client.update_item(
                TableName=self.table_name,
                Key={_TURN_ID: {"S": turn_id}},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(update + condition),
                ExpressionAttributeValues={
                    ":lid": {"S": lease.lease_id},
                    ":lx": {"N": number(lease.expires_at)},
                    ":now": {"N": number(now)},
                    **_RUNNABLE_VALUES,
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            item = cast("Item", response.get("Attributes", {}))
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            landed = old_item(exc)
            if landed is None or as_str(landed.get(_LEASE_ID)) != lease.lease_id:
                # Not runnable, missing, or leased by someone else: all mean "not yours".
                return None
            # The lease id is new with this call: the item holding it is our claim, landed before its answer
            # was lost. (Answering "not yours" would leave the turn leased to nobody until the lease expires.)
            _log.info("claim of turn %r landed before its answer was lost; counted as done", turn_id)
            item = landed
        if not item:
            return lease
        try:
            turn = self._read(item)
            if turn is None:
                # Under our lease nobody can replace the body: its object is gone for good.
                raise self._unreadable(item, f"its body object {as_str(item.get(_BODY_REF))!r} is gone")
        except SnapshotUnreadableError:
            # A snapshot that cannot be read is claimed by nobody (as in the reference): give the lease back.
            try:
                self.release(lease)
            except StorageError as exc:
                _log.warning("could not release the lease on unreadable turn %r (it expires): %s", turn_id, exc)
            raise
        return replace(lease, turn=turn)

    def renew(self, lease: Lease, lease_seconds: float) -> Lease:
        renewed = replace(lease, expires_at=float(number(self.clock() + lease_seconds)), turn=None)
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={_TURN_ID: {"S": lease.turn_id}},
                UpdateExpression="SET #lx = :lx",
                ConditionExpression="#lid = :lid",
                ExpressionAttributeNames=_names("#lx #lid"),
                ExpressionAttributeValues={":lx": {"N": number(renewed.expires_at)}, ":lid": {"S": lease.lease_id}},
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            raise LeaseLostError(lease.turn_id, lease.lease_id) from None
        return renewed

    def release(self, lease: Lease) -> bool:
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={_TURN_ID: {"S": lease.turn_id}},
                UpdateExpression="REMOVE #lid, #lo, #lx",
                ConditionExpression="#lid = :lid",
                ExpressionAttributeNames=_names("#lid #lo #lx"),
                ExpressionAttributeValues={":lid": {"S": lease.lease_id}},
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            return False
        return True

    def request_cancel(self, turn_id: str) -> None:
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={_TURN_ID: {"S": turn_id}},
                UpdateExpression="SET #cx = :true",
                ConditionExpression="attribute_exists(#tid)",
                ExpressionAttributeNames=_names("#cx #tid"),
                ExpressionAttributeValues={":true": {"BOOL": True}},
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            raise TurnNotFoundError(turn_id) from None

    def queue_answer(self, turn_id: str, answer: QueuedAnswer) -> None:
        action = answer.command.action_id or ""
        condition = "attribute_exists(#tid) AND #st IN (:ready, :running) AND NOT contains(#qk, :aid)"
        update = "SET #qa = list_append(if_not_exists(#qa, :none), :one) ADD #qk :aids"
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={_TURN_ID: {"S": turn_id}},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(update + condition),
                ExpressionAttributeValues={
                    ":none": {"L": []},
                    ":one": {"L": [{"S": self.serializer.dumps(answer)}]},
                    ":aids": {"SS": [action]},
                    ":aid": {"S": action},
                    **_RUNNABLE_VALUES,
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            item = old_item(exc)
            if item is None:
                raise TurnNotFoundError(turn_id) from None
            if any(queued.nonce == answer.nonce for queued in self._queued(item)):
                _log.info("queued answer to turn %r landed before its answer was lost", turn_id)
                return
            raise VersionConflictError(turn_id, None, as_int(item.get(_VERSION))) from None

    def find_runnable(self, *, idle_seconds: float, limit: int = 100) -> list[RunnableTurn]:
        """One Query per shard of the sparse, keys-only ``runnable`` index (never a Scan), then one
        BatchGetItem per 100 candidates for what the decision needs (version, update time, lease).

        A turn idle since ``horizon`` has been runnable since then at the latest, so the index's sort key
        (when it became runnable) narrows the candidates; their items decide. The index is eventually
        consistent: a turn written a moment ago may show up one sweep later, which is what a sweeper of
        *idle* turns wants anyway. Each shard yields its earliest-runnable candidates first; the answer is
        the ``limit`` least recently written of those. A shard is read further only while the candidates
        found so far do not make up ``limit``.
        """
        if limit <= 0:
            return []
        now = self.clock()
        horizon = now - idle_seconds
        # Shard → where its next page starts (None: from the beginning); a shard read to its end leaves.
        pages: dict[str, Item | None] = {f"R#{shard}": None for shard in range(self.runnable_shards)}
        found: list[RunnableTurn] = []
        while pages and len(found) < limit:
            candidates: list[str] = []
            for shard, start in list(pages.items()):
                turn_ids, following = self._runnable_page(shard, horizon, limit, start)
                candidates += turn_ids
                if following is None:
                    del pages[shard]
                else:
                    pages[shard] = following
            for item in self._current(candidates):
                if _SHARD not in item or as_float(item.get(_UPDATED_AT)) > float(number(horizon)):
                    continue  # not runnable any more, or written since the horizon
                if _LEASE_EXPIRES in item and as_float(item.get(_LEASE_EXPIRES)) > float(number(now)):
                    continue  # a live lease means a worker is on it: not the sweeper's business
                if _NOT_BEFORE in item and as_float(item.get(_NOT_BEFORE)) > float(number(now)):
                    continue  # in a backoff: a worker would drop the message as early
                found.append(self._runnable(item))
        found.sort(key=lambda r: (r.updated_at, r.turn_id))
        return found[:limit]

    def _runnable_page(
        self, shard: str, horizon: float, limit: int, start: Item | None
    ) -> tuple[list[str], Item | None]:
        """Turn ids of one page of ``shard`` runnable since ``horizon`` at the latest, and where the next starts."""
        condition = "#shard = :shard AND #rs <= :horizon"
        kwargs: dict[str, Any] = {} if start is None else {"ExclusiveStartKey": start}
        response = self.client.query(
            TableName=self.table_name,
            IndexName=tables.RUNNABLE_INDEX,
            KeyConditionExpression=condition,
            ExpressionAttributeNames=_names(condition),
            ExpressionAttributeValues={":shard": {"S": shard}, ":horizon": {"N": number(horizon)}},
            ScanIndexForward=True,
            Limit=limit,
            **kwargs,
        )
        turn_ids = [as_str(cast("Item", raw).get(_TURN_ID)) or "" for raw in response.get("Items", [])]
        return turn_ids, cast("Item | None", response.get("LastEvaluatedKey"))

    def _current(self, turn_ids: list[str]) -> list[Item]:
        """What the sweep decides on, read from the items of ``turn_ids`` (strongly consistent)."""
        if not turn_ids:
            return []
        projection = "#tid, #v, #ua, #lx, #shard, #nb"
        items: list[Item] = []
        for start in range(0, len(turn_ids), _BATCH_GET_SIZE):
            keys: list[Any] = [{_TURN_ID: {"S": turn_id}} for turn_id in turn_ids[start : start + _BATCH_GET_SIZE]]
            for attempt in range(_BATCH_GET_ATTEMPTS):
                response = self.client.batch_get_item(
                    RequestItems={
                        self.table_name: {
                            "Keys": keys,
                            "ProjectionExpression": projection,
                            "ExpressionAttributeNames": _names(projection),
                            "ConsistentRead": True,
                        }
                    }
                )
                items += [cast("Item", raw) for raw in response.get("Responses", {}).get(self.table_name, [])]
                unprocessed = cast("dict[str, Any]", response.get("UnprocessedKeys") or {})
                keys = list(unprocessed.get(self.table_name, {}).get("Keys", []))
                if not keys:
                    break
                if attempt + 1 < _BATCH_GET_ATTEMPTS:
                    time.sleep(random.uniform(0, min(2.0, 0.05 * 2**attempt)))
            else:
                raise StorageUnavailableError(
                    f"{len(keys)} turns of table {self.table_name!r} were still unprocessed after "
                    f"{_BATCH_GET_ATTEMPTS} attempts"
                )
        return items

    @staticmethod
    def _runnable(item: Item) -> RunnableTurn:
        return RunnableTurn(
            turn_id=as_str(item.get(_TURN_ID)) or "",
            version=as_int(item.get(_VERSION)),
            updated_at=as_float(item.get(_UPDATED_AT)),
        )

    def _query_index(
        self, index: str, key_condition: str, shard: str, now: float, limit: int, *, extra: str = ""
    ) -> list[Item]:
        """Up to ``limit`` items of one shard of a sparse index, in index order (ascending), paging as needed.

        Each shard is sorted, so the first ``limit`` of every shard contain the first ``limit`` overall.
        """
        values: Item = {":shard": {"S": shard}, ":now": {"N": number(now)}}
        projection = "#tid, #v, #ua" + (f", {extra}" if extra else "")
        kwargs: dict[str, Any] = {}
        names = _names(key_condition + projection)
        used_values = {k: v for k, v in values.items() if k in key_condition}
        found: list[Item] = []
        while len(found) < limit:
            response = self.client.query(
                TableName=self.table_name,
                IndexName=index,
                KeyConditionExpression=key_condition,
                ProjectionExpression=projection,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=used_values,
                ScanIndexForward=True,
                Limit=limit,
                **kwargs,
            )
            found += [cast("Item", raw) for raw in response.get("Items", [])]
            start = cast("Item | None", response.get("LastEvaluatedKey"))
            if start is None:
                break
            kwargs["ExclusiveStartKey"] = start
        return found[:limit]

    def find_overdue(self, *, limit: int = 100) -> list[RunnableTurn]:
        """Blocked turns whose wait deadline has passed, earliest deadline first: one Query per shard of the
        sparse ``overdue`` index (eventually consistent, like ``find_runnable``)."""
        if limit <= 0:
            return []
        now = self.clock()
        found: list[tuple[float, RunnableTurn]] = []
        for shard in range(self.runnable_shards):
            for item in self._query_index(
                tables.OVERDUE_INDEX, "#oshard = :shard AND #wx <= :now", f"R#{shard}", now, limit, extra="#wx"
            ):
                found.append((as_float(item.get(_WAIT_EXPIRES)), self._runnable(item)))
        found.sort(key=lambda pair: (pair[0], pair[1].turn_id))
        return [turn for _, turn in found[:limit]]

    def mark_unreadable(
        self,
        turn_id: str,
        *,
        version: int,
        attempts: int,
        fail: bool,
        not_before: float | None = None,
        message: str = "",
        retain_until: float | None = None,
    ) -> bool:
        """One conditional UpdateItem that never reads nor rewrites the body (see the port)."""
        now = self.clock()
        write_id = new_write_id()
        values: Item = {
            ":v": {"N": str(version)},
            ":n": {"N": str(attempts)},
            ":now": {"N": number(now)},
            ":wid": {"S": write_id},
            **_OPEN_VALUES,
        }
        sets = ["#ux = :n", "#wid = :wid"]
        removes: list[str] = []
        if fail:
            sets += ["#st = :failed", "#v = :next", "#et = :et", "#em = :em", "#ua = :now"]
            values.update(
                {
                    ":failed": {"S": TurnStatus.FAILED.value},
                    ":next": {"N": str(version + 1)},
                    ":et": {"S": SNAPSHOT_UNREADABLE},
                    ":em": {"S": message or SNAPSHOT_UNREADABLE},
                }
            )
            # Out of both sparse indexes and unleased, in this one write (as a save of a terminal turn does).
            removes += ["#shard", "#rs", "#lid", "#lo", "#lx", "#oshard", "#wx", "#nb"]
            if retain_until is None and self.terminal_ttl_seconds is not None:
                retain_until = now + self.terminal_ttl_seconds
            if retain_until is not None:
                sets.append("#exp = :exp")
                values[":exp"] = {"N": str(math.ceil(retain_until))}
        elif not_before is not None:
            sets.append("#nb = :nb")
            values[":nb"] = {"N": number(not_before)}
        condition = (
            f"#v = :v AND #st IN ({', '.join(_OPEN_VALUES)}) AND (attribute_not_exists(#lx) OR #lx <= :now) AND "
        )
        if attempts <= 1:
            condition += "(attribute_not_exists(#ux) OR #ux = :seen)"
        else:
            condition += "#ux = :seen"
        values[":seen"] = {"N": str(attempts - 1)}
        update = f"SET {', '.join(sets)}" + (f" REMOVE {', '.join(removes)}" if removes else "")
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={_TURN_ID: {"S": turn_id}},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(update + condition),
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            # Landed before its answer was lost (the SDK's retry then met its own write), or someone else won.
            return written_by(old_item(exc), write_id)
        return True

    def delete(self, turn_id: str, *, expected_version: int) -> None:
        try:
            response = self.client.delete_item(
                TableName=self.table_name,
                Key={_TURN_ID: {"S": turn_id}},
                ConditionExpression="attribute_not_exists(#tid) OR #v = :expected",
                ExpressionAttributeNames=_names("#tid #v"),
                ExpressionAttributeValues={":expected": {"N": str(expected_version)}},
                # The deleted item says whether an S3 body has to go too (delete is rare: race losers).
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise
            existing = old_item(exc) or {}
            raise VersionConflictError(turn_id, expected_version, as_int(existing.get(_VERSION))) from None
        deleted = cast("Item", response.get("Attributes", {}))
        self.codec.discard(self.codec.reference(deleted))
