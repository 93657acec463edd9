"""``--persist DIR``: the emulator's data kept across restarts of ``agentturn dev``.

moto keeps everything in memory. On shutdown (and every ``interval`` seconds while running, in case the
process is killed) the tables' items and the bucket's objects are read back through the AWS API and
written to ``DIR/state.json`` (atomically: a temporary file, then a rename); on start they are written
into the fresh tables and bucket before the first request is served.

Queue messages are not kept, on purpose: a resume message only says "this turn can move", and the
sweeper re-enqueues every runnable turn nobody is working on — exactly how the deployed system recovers
from a lost message. So a turn that was queued or running when the server stopped continues after the
restart, once its lease (if it had one) has expired.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from agentturn.local.emulator import Clients, Resources

STATE_FILE: Final = "state.json"
FORMAT: Final = "agentturn-dev-state/1"
_BATCH: Final = 25  # BatchWriteItem's limit
_MAX_UNPROCESSED_ROUNDS: Final = 20


class StateFileError(RuntimeError):
    """The persisted state cannot be read (corrupt, or written by an incompatible version)."""


def _encode(value: Any) -> Any:
    # Low-level DynamoDB values hold bytes (B, BS); JSON cannot. {"$b64": ...} cannot be a real attribute
    # value (those are {"S": ...}-shaped), so the marker is unambiguous.
    if isinstance(value, bytes | bytearray):
        return {"$b64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$b64"} and isinstance(value["$b64"], str):
            return base64.b64decode(value["$b64"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _table_names(resources: Resources) -> dict[str, str]:
    names = resources.names
    return {
        "turns": names.turns_table,
        "conversations": names.conversations_table,
        "idempotency": names.idempotency_table,
    }


def _scan(clients: Clients, table: str) -> Iterator[dict[str, Any]]:
    paginator = clients.dynamodb.get_paginator("scan")
    for page in paginator.paginate(TableName=table, ConsistentRead=True):
        yield from page.get("Items", [])


def _objects(clients: Clients, bucket: str) -> Iterator[dict[str, Any]]:
    paginator = clients.s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket):
        for entry in page.get("Contents", []):
            found = clients.s3.get_object(Bucket=bucket, Key=entry["Key"])
            yield {
                "key": entry["Key"],
                "body": base64.b64encode(found["Body"].read()).decode("ascii"),
                "contentType": found.get("ContentType", "application/octet-stream"),
                "metadata": found.get("Metadata", {}),
            }


@dataclass(frozen=True)
class Summary:
    items: dict[str, int]
    objects: int

    def describe(self) -> str:
        counts = ", ".join(f"{n} {table}" for table, n in self.items.items())
        return f"{counts} item(s), {self.objects} object(s)"


def snapshot(clients: Clients, resources: Resources, directory: Path) -> Summary:
    directory.mkdir(parents=True, exist_ok=True)
    tables = {key: [_encode(item) for item in _scan(clients, name)] for key, name in _table_names(resources).items()}
    bucket = resources.names.snapshot_bucket
    objects = list(_objects(clients, bucket)) if bucket else []
    state = {"format": FORMAT, "tables": tables, "objects": objects}
    handle, temporary = tempfile.mkstemp(prefix=".state-", suffix=".json", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(state, out, ensure_ascii=False, separators=(",", ":"))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, directory / STATE_FILE)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return Summary({key: len(items) for key, items in tables.items()}, len(objects))


def _put_items(clients: Clients, table: str, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), _BATCH):
        pending: dict[str, Any] = {table: [{"PutRequest": {"Item": item}} for item in items[start : start + _BATCH]]}
        for _ in range(_MAX_UNPROCESSED_ROUNDS):
            result = clients.dynamodb.batch_write_item(RequestItems=pending)
            pending = dict(result.get("UnprocessedItems") or {})
            if not pending:
                break
        else:
            raise StateFileError(f"could not restore every item of {table!r} (the emulator kept refusing some)")


def restore(clients: Clients, resources: Resources, directory: Path) -> Summary | None:
    """Load ``directory/state.json`` into the (fresh, empty) emulator; ``None`` when there is none yet."""
    path = directory / STATE_FILE
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise StateFileError(f"cannot read {path}: {exc}") from exc
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise StateFileError(f"{path} is not an agentturn dev state file of format {FORMAT!r}")
    counts: dict[str, int] = {}
    for key, name in _table_names(resources).items():
        items = [_decode(item) for item in state.get("tables", {}).get(key, [])]
        _put_items(clients, name, items)
        counts[key] = len(items)
    objects = state.get("objects", [])
    bucket = resources.names.snapshot_bucket
    if bucket:
        for entry in objects:
            clients.s3.put_object(
                Bucket=bucket,
                Key=entry["key"],
                Body=base64.b64decode(entry["body"]),
                ContentType=entry.get("contentType", "application/octet-stream"),
                Metadata=dict(entry.get("metadata", {})),
            )
    return Summary(counts, len(objects) if bucket else 0)
