"""Break a stored snapshot the ways it can break in production, underneath a TurnStore.

Each breakage rewrites what the store holds for one turn and nothing else (status, version, lease, indexes
stay as they were), exactly as a bad deploy, a bit flip, a hand edit or a lost S3 object would leave it:

* ``garbage``: the body is not a snapshot any more (truncated JSON);
* ``newer_schema``: the body is a snapshot of a ``schemaVersion`` newer than this code reads;
* ``bad_zlib``: a compressed body whose bytes do not inflate (DynamoDB adapter only);
* ``object_gone``: the item points to an S3 body object that does not exist (DynamoDB adapter only).
"""

from __future__ import annotations

import json
from typing import Final, Literal

from agentturn import InMemoryTurnStore, TurnStore
from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.state import SCHEMA_VERSION

Breakage = Literal["garbage", "newer_schema", "bad_zlib", "object_gone"]
BREAKAGES: Final[tuple[Breakage, ...]] = ("garbage", "newer_schema", "bad_zlib", "object_gone")
_TRUNCATED: Final = '{"id": "trunc'


def can_break(store: TurnStore, how: Breakage) -> bool:
    """Whether ``store`` can hold a body broken that way (the in-memory store has no compression, no S3)."""
    return isinstance(store, DynamoDBTurnStore) or how in ("garbage", "newer_schema")


def _newer(text: str) -> str:
    body = json.loads(text)
    body["schemaVersion"] = SCHEMA_VERSION + 1
    return json.dumps(body)


def break_snapshot(store: TurnStore, turn_id: str, how: Breakage) -> None:
    if isinstance(store, InMemoryTurnStore):
        record = store._records[turn_id]
        if how == "garbage":
            record.body = _TRUNCATED
        elif how == "newer_schema":
            record.body = _newer(record.body)
        else:
            raise ValueError(f"the in-memory store cannot hold a body broken as {how!r}")
        return
    if not isinstance(store, DynamoDBTurnStore):
        raise TypeError(f"cannot break snapshots in {type(store).__name__}")
    key = {"turnId": {"S": turn_id}}
    item = store.client.get_item(TableName=store.table_name, Key=key, ConsistentRead=True)["Item"]
    if how == "object_gone":
        value = {"S": f"{store.key_prefix}{turn_id}/never-written.json.gz"}
        store.client.update_item(
            TableName=store.table_name,
            Key=key,
            UpdateExpression="SET bodyRef = :ref REMOVE body",
            ExpressionAttributeValues={":ref": value},
        )
        return
    if how == "garbage":
        body: dict[str, object] = {"S": _TRUNCATED}
    elif how == "newer_schema":
        text = store.codec.decode(item, what=f"turn {turn_id!r}")
        body = {"S": _newer(text)}
    else:
        body = {"B": b"x\x9c this is not a zlib stream"}
    store.client.update_item(
        TableName=store.table_name,
        Key=key,
        UpdateExpression="SET body = :body REMOVE bodyRef",
        ExpressionAttributeValues={":body": body},  # type: ignore[dict-item]
    )
