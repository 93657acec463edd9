"""The DynamoDB adapters' side of the store conformance suites: breaking a stored body the ways only they
can hold one, and the checks of where a snapshot went. Importing this module imports botocore (through
:mod:`agentturn.aws`); nothing else in :mod:`agentturn.testing` does."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.ports.store import SNAPSHOT_UNREADABLE, TurnStore
from agentturn.testing.broken import TRUNCATED, newer_schema
from agentturn.testing.capabilities import BREAKAGES, Breakage, Capabilities

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: What the DynamoDB adapters declare (moto's emulator: the same, without isolated conditional writes).
DYNAMODB_CAPABILITIES = Capabilities(
    atomic_conditional_writes=True,
    spills_to_blob_store=True,
    holds_binary_bodies=True,
    breakages=frozenset(BREAKAGES),
)


def break_dynamodb_snapshot(store: TurnStore, turn_id: str, how: Breakage) -> None:
    """Rewrite the item's body (or its S3 reference) and nothing else."""
    if not isinstance(store, DynamoDBTurnStore):
        raise TypeError(f"cannot break snapshots in {type(store).__name__}")
    key: dict[str, Any] = {"turnId": {"S": turn_id}}
    if how == "object_gone":
        store.client.update_item(
            TableName=store.table_name,
            Key=key,
            UpdateExpression="SET bodyRef = :ref REMOVE body",
            ExpressionAttributeValues={":ref": {"S": f"{store.key_prefix}{turn_id}/never-written.json.gz"}},
        )
        return
    body: dict[str, Any]
    if how == "garbage":
        body = {"S": TRUNCATED}
    elif how == "newer_schema":
        # The body is the snapshot as the store serialises it (read through the public protocol).
        body = {"S": newer_schema(store.load(turn_id).model_dump_json(by_alias=True))}
    else:
        body = {"B": b"x\x9c this is not a zlib stream"}
    store.client.update_item(
        TableName=store.table_name,
        Key=key,
        UpdateExpression="SET body = :body REMOVE bodyRef",
        ExpressionAttributeValues={":body": body},
    )


class DynamoDBInspector:
    """Checks what the DynamoDB turn store wrote, past what the TurnStore protocol shows."""

    def __init__(self, store: DynamoDBTurnStore, s3: S3Client, bucket: str) -> None:
        self.store = store
        self.s3 = s3
        self.bucket = bucket

    def _item(self, turn_id: str) -> dict[str, Any]:
        key: dict[str, Any] = {"turnId": {"S": turn_id}}
        return dict(self.store.client.get_item(TableName=self.store.table_name, Key=key, ConsistentRead=True)["Item"])

    def _objects(self, turn_id: str) -> list[str]:
        listing = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=f"{self.store.key_prefix}{turn_id}/")
        return [o["Key"] for o in listing.get("Contents", [])]

    def check_spilled(self, turn_id: str, version: int) -> None:
        """The item points to S3 instead of holding the body, and the bodies replaced by later saves are
        gone: exactly one object is left for the turn."""
        item = self._item(turn_id)
        assert "body" not in item, "a large body stayed in the item"
        ref = item["bodyRef"]["S"]
        assert ref.startswith(f"{self.store.key_prefix}{turn_id}/{version}-"), ref
        assert self._objects(turn_id) == [ref]

    def check_retained_failed(self, turn_id: str, *, retain_until: float, message: str) -> None:
        """Retained like any terminal turn (TTL in whole seconds, rounded up), out of both sweeps' indexes,
        the broken body kept for an operator."""
        item = self._item(turn_id)
        assert item["expiresAt"] == {"N": str(math.ceil(retain_until))}
        assert item["errorType"] == {"S": SNAPSHOT_UNREADABLE}
        assert item["errorMessage"] == {"S": message}
        assert "runnableShard" not in item
        assert "leaseId" not in item
        assert "body" in item
