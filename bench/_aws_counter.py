"""Counting AWS traffic with botocore event hooks, identically for both systems.

``AwsCounter.attach(client)`` (or ``attach_session`` for clients a handler makes itself) registers:

* ``before-send``: one count per HTTP request actually sent (retries included), by service and operation;
  for write calls the size of the request body (``bytes written``).
* in *accounting* mode only, ``before-parameter-build`` / ``after-call`` on DynamoDB write calls: the item
  before and after the write is read with a separate, uncounted client, and the write units DynamoDB would
  bill are computed from the item sizes (see :class:`WriteUnits`). Those extra reads cost time, so wall
  time is never measured in accounting mode.

Why not ``ReturnConsumedCapacity=TOTAL``: moto 5.2.5 answers it with constants, not item sizes (a 3 KB
PutItem reports 1.0, any UpdateItem 0.5, a BatchWriteItem of three 1.5 KB items 1.0, TransactWriteItems
nothing); :func:`probe_moto_consumed_capacity` shows it on every run.
"""

from __future__ import annotations

import math
import sys
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

DYNAMODB_WRITES: Final = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
S3_WRITES: Final = frozenset({"PutObject", "DeleteObject", "DeleteObjects"})
SQS_WRITES: Final = frozenset({"SendMessage", "SendMessageBatch"})
WRITE_OPERATIONS: Final = {"dynamodb": DYNAMODB_WRITES, "s3": S3_WRITES, "sqs": SQS_WRITES}
DYNAMODB_READS: Final = frozenset({"GetItem", "Query", "BatchGetItem"})
KB: Final = 1024


# ------------------------------------------------------------------------------------------ item sizes


def value_size(value: Any) -> int:
    """Size of one attribute value as DynamoDB bills it (boto3 low-level shape: ``{"S": ...}``)."""
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "B":
        return len(data)
    if kind == "N":
        digits = str(Decimal(str(data))).lstrip("-").replace(".", "").lstrip("0") or "0"
        return 1 + math.ceil(len(digits) / 2)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(v.encode()) for v in data)
    if kind == "BS":
        return sum(len(v) for v in data)
    if kind == "NS":
        return sum(value_size({"N": v}) for v in data)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in data)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in data.items())
    raise ValueError(f"unknown attribute type {kind!r}")


def item_size(item: dict[str, Any] | None, names: frozenset[str] | None = None) -> int:
    """Bytes of an item (attribute names + values), optionally of the named attributes only."""
    if not item:
        return 0
    return sum(len(k.encode()) + value_size(v) for k, v in item.items() if names is None or k in names)


def units(size: int) -> int:
    """Write units for ``size`` bytes: 1 per started KB, at least 1."""
    return max(1, math.ceil(size / KB))


@dataclass(frozen=True)
class IndexShape:
    name: str
    key_names: frozenset[str]
    #: ``None`` = ALL attributes
    projected: frozenset[str] | None


@dataclass(frozen=True)
class TableShape:
    key_names: tuple[str, ...]
    indexes: tuple[IndexShape, ...]

    @classmethod
    def describe(cls, client: Any, table_name: str) -> TableShape:
        table = client.describe_table(TableName=table_name)["Table"]
        keys = tuple(k["AttributeName"] for k in table["KeySchema"])
        indexes = []
        for index in [*table.get("LocalSecondaryIndexes", []), *table.get("GlobalSecondaryIndexes", [])]:
            index_keys = frozenset(k["AttributeName"] for k in index["KeySchema"])
            projection = index.get("Projection", {})
            kind = projection.get("ProjectionType", "ALL")
            projected: frozenset[str] | None
            if kind == "ALL":
                projected = None
            else:
                projected = frozenset(keys) | index_keys | frozenset(projection.get("NonKeyAttributes", ()))
            indexes.append(IndexShape(index["IndexName"], index_keys, projected))
        return cls(keys, tuple(indexes))

    def key_of(self, item: dict[str, Any]) -> dict[str, Any]:
        return {name: item[name] for name in self.key_names}


def index_write_units(shape: IndexShape, old: dict[str, Any] | None, new: dict[str, Any] | None) -> int:
    """Index maintenance for one item write, by the rules of the DynamoDB developer guide:
    entry appears or disappears → 1 write; index key changes → 2 (delete + put); only projected
    attributes change → 1; nothing projected changes → 0. Each write is billed per started KB of the entry."""

    def present(item: dict[str, Any] | None) -> bool:
        return item is not None and all(name in item for name in shape.key_names)

    def entry(item: dict[str, Any]) -> dict[str, Any]:
        return item if shape.projected is None else {k: v for k, v in item.items() if k in shape.projected}

    was, now = present(old), present(new)
    if not was and not now:
        return 0
    if was and not now:
        return units(item_size(entry(old or {})))
    if now and not was:
        return units(item_size(entry(new or {})))
    old_entry, new_entry = entry(old or {}), entry(new or {})
    if any(old_entry.get(k) != new_entry.get(k) for k in shape.key_names):
        return units(item_size(old_entry)) + units(item_size(new_entry))
    if old_entry == new_entry:
        return 0
    return units(max(item_size(old_entry), item_size(new_entry)))


# ------------------------------------------------------------------------------------------ counting


@dataclass
class Tally:
    """What one measured stretch (a cycle, a submit) cost."""

    requests: Counter[str] = field(default_factory=Counter)  # "dynamodb.PutItem" -> n
    write_bytes: Counter[str] = field(default_factory=Counter)  # "dynamodb" -> request body bytes of writes
    write_units: Counter[str] = field(default_factory=Counter)  # "table" / "index" / "failed" -> WCU
    item_bytes_written: int = 0  # sizes of the items as written (after the write)
    read_units: float = 0.0  # accounting mode: read units from the sizes of the items read
    #: accounting mode only: one entry per request, in order (operation, table, caller, outcome, units)
    trace: list[dict[str, Any]] = field(default_factory=list)

    def count(self, service: str) -> int:
        return sum(n for key, n in self.requests.items() if key.startswith(f"{service}."))

    def by_operation(self, service: str) -> dict[str, int]:
        prefix = f"{service}."
        return {key[len(prefix) :]: n for key, n in sorted(self.requests.items()) if key.startswith(prefix)}

    @property
    def total_write_units(self) -> int:
        return sum(self.write_units.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "dynamodb_requests": self.count("dynamodb"),
            "s3_requests": self.count("s3"),
            "sqs_requests": self.count("sqs"),
            "dynamodb_by_operation": self.by_operation("dynamodb"),
            "s3_by_operation": self.by_operation("s3"),
            "sqs_by_operation": self.by_operation("sqs"),
            "dynamodb_write_bytes": self.write_bytes["dynamodb"],
            "s3_write_bytes": self.write_bytes["s3"],
            "sqs_write_bytes": self.write_bytes["sqs"],
            "write_units": self.total_write_units,
            "write_units_table": self.write_units["table"],
            "write_units_index": self.write_units["index"],
            "write_units_failed_condition": self.write_units["failed"],
            "item_bytes_written": self.item_bytes_written,
            "read_units": self.read_units,
            "trace": self.trace,
        }


def _body_length(body: Any) -> int:
    if body is None:
        return 0
    if isinstance(body, bytes | bytearray | str):
        return len(body)
    if hasattr(body, "seek") and hasattr(body, "tell"):
        position = body.tell()
        body.seek(0, 2)
        end = body.tell()
        body.seek(position)
        return int(end - position)
    return len(body)


class AwsCounter:
    """Counts what every attached client sends into the current :class:`Tally` (thread-safe)."""

    def __init__(self, accounting_client: Any | None = None) -> None:
        self._lock = threading.Lock()
        self.tally = Tally()
        self.accounting = False
        self._plain = accounting_client  # uncounted: reads items before/after writes
        self._shapes: dict[str, TableShape] = {}

    def reset(self) -> Tally:
        """Start a new tally; return the one that ends."""
        with self._lock:
            ended, self.tally = self.tally, Tally()
            return ended

    # ------------------------------------------------------------------ attaching

    def attach(self, client: Any) -> Any:
        self._register(client.meta.events)
        return client

    def attach_session(self, botocore_session: Any) -> None:
        """Clients created from this session afterwards copy its hooks (botocore copies the emitter)."""
        self._register(botocore_session.get_component("event_emitter"))

    def _register(self, events: Any) -> None:
        unique = uuid.uuid4().hex
        events.register("before-send", self._before_send, unique_id=f"bench-send-{unique}")
        events.register("before-parameter-build", self._before_call, unique_id=f"bench-before-{unique}")
        events.register("after-call", self._after_call, unique_id=f"bench-after-{unique}")

    # ------------------------------------------------------------------ hooks

    def _before_send(self, request: Any, event_name: str, **_: Any) -> None:
        _prefix, service, operation = event_name.split(".", 2)
        size = _body_length(request.body) if operation in WRITE_OPERATIONS.get(service, ()) else 0
        with self._lock:
            self.tally.requests[f"{service}.{operation}"] += 1
            if size:
                self.tally.write_bytes[service] += size

    def _shape(self, table_name: str) -> TableShape:
        shape = self._shapes.get(table_name)
        if shape is None:
            shape = self._shapes[table_name] = TableShape.describe(self._plain, table_name)
        return shape

    def _get(self, table_name: str, key: dict[str, Any]) -> dict[str, Any] | None:
        assert self._plain is not None
        response = self._plain.get_item(TableName=table_name, Key=key, ConsistentRead=True)
        item = response.get("Item")
        return dict(item) if item else None

    def _targets(self, operation: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any], Any, int]]:
        """``(table, key, put_item_or_None, multiplier)`` for every item the write touches."""
        found: list[tuple[str, dict[str, Any], Any, int]] = []
        if operation == "PutItem":
            table = params["TableName"]
            found.append((table, self._shape(table).key_of(params["Item"]), params["Item"], 1))
        elif operation in ("UpdateItem", "DeleteItem"):
            found.append((params["TableName"], params["Key"], None, 1))
        elif operation == "BatchWriteItem":
            for table, requests in params["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        item = request["PutRequest"]["Item"]
                        found.append((table, self._shape(table).key_of(item), item, 1))
                    else:
                        found.append((table, request["DeleteRequest"]["Key"], None, 1))
        elif operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                ((kind, body),) = entry.items()
                table = body["TableName"]
                if kind == "Put":
                    found.append((table, self._shape(table).key_of(body["Item"]), body["Item"], 2))
                else:
                    found.append((table, body["Key"], None, 2))
        return found

    def _before_call(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if not self.accounting:
            return
        service = model.service_model.endpoint_prefix
        entry: dict[str, Any] = {
            "operation": f"{service}.{model.name}",
            "table": params.get("TableName") or ",".join(params.get("RequestItems", {})) or None,
            "caller": _caller(),
        }
        context["bench_trace"] = entry
        if service == "dynamodb" and model.name in DYNAMODB_READS:
            context["bench_read"] = {
                "consistent": bool(params.get("ConsistentRead")),
                "partial": "ProjectionExpression" in params or "IndexName" in params,
                "tables": [params["TableName"]] if "TableName" in params else list(params.get("RequestItems", {})),
            }
        if service == "dynamodb" and model.name in DYNAMODB_WRITES:
            targets = self._targets(model.name, params)
            context["bench_targets"] = [(table, key, self._get(table, key), m) for table, key, _, m in targets]

    def _after_call(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        entry = context.pop("bench_trace", None)
        targets = context.pop("bench_targets", None)
        read = context.pop("bench_read", None)
        if entry is None:
            return
        ok = 200 <= http_response.status_code < 300
        entry["ok"] = ok
        if not ok:
            entry["error"] = parsed.get("Error", {}).get("Code")
        if read is not None and ok:
            read_units = self._read_units(model.name, parsed, read)
            entry["read_units"] = read_units
            with self._lock:
                self.tally.read_units += read_units
        table_units = index_units = failed_units = written = 0
        for table, key, old, multiplier in targets or ():
            if not ok:
                # A failed condition still costs the write (at least one unit, by the size of the old item).
                failed_units += multiplier * units(item_size(old))
                continue
            new = self._get(table, key)
            shape = self._shape(table)
            table_units += multiplier * units(max(item_size(old), item_size(new)))
            index_units += multiplier * sum(index_write_units(index, old, new) for index in shape.indexes)
            written += item_size(new)
        if targets is not None:
            entry.update(
                units_table=table_units, units_index=index_units, units_failed=failed_units, item_bytes=written
            )
        with self._lock:
            self.tally.write_units["table"] += table_units
            self.tally.write_units["index"] += index_units
            self.tally.write_units["failed"] += failed_units
            self.tally.item_bytes_written += written
            self.tally.trace.append(entry)

    def _read_units(self, operation: str, parsed: dict[str, Any], read: dict[str, Any]) -> float:
        """Billed on the whole items read (a projection does not lower it): 4 KB per unit, eventually
        consistent reads half; GetItem/BatchGetItem per item, Query on the sum of its items."""
        factor = 1.0 if read["consistent"] else 0.5

        def full(table: str, item: dict[str, Any]) -> int:
            shape = self._shape(table)
            if not read["partial"] or any(name not in item for name in shape.key_names):
                # Without its key a projected item cannot be fetched whole: its returned size stands in.
                return item_size(item)
            return item_size(self._get(table, shape.key_of(item)) or item)

        if operation == "GetItem":
            item = parsed.get("Item")
            size = full(read["tables"][0], item) if item else 0
            return factor * math.ceil(max(size, 1) / (4 * KB))
        if operation == "Query":
            total = sum(full(read["tables"][0], item) for item in parsed.get("Items", []))
            return factor * math.ceil(max(total, 1) / (4 * KB))
        if operation == "BatchGetItem":
            units_read = 0.0
            for items in parsed.get("Responses", {}).values():
                units_read += sum(factor * math.ceil(max(item_size(i), 1) / (4 * KB)) for i in items)
            return units_read
        return 0.0


_SKIPPED_FRAMES: Final = (
    "/botocore/",
    "/boto3/",
    "/bench/_aws_counter.py",
    "/bench/_ours_side.py",
    "/bench/_handler_side.py",
    # the wrapper that turns botocore's errors into the core's: every adapter call goes through it
    "/aws/translate.py",
)


def _caller() -> str:
    """``outer → inner`` for the two innermost frames of the runtime that made the request."""
    frame = sys._getframe(2)
    names: list[str] = []
    while frame is not None and len(names) < 3:
        path = frame.f_code.co_filename
        if not any(part in path for part in _SKIPPED_FRAMES) and ("agentturn" in path or "langgraph" in path):
            module = path.rsplit("/", 1)[-1].removesuffix(".py")
            names.append(f"{module}.{frame.f_code.co_name}")
        frame = frame.f_back
    return " ← ".join(names)


def probe_moto_consumed_capacity(client: Any) -> dict[str, Any]:
    """What moto reports as ConsumedCapacity for writes of known sizes (to show why we compute units)."""
    table = f"bench-probe-{uuid.uuid4().hex[:8]}"
    client.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        big = {"pk": {"S": "a"}, "body": {"S": "x" * 3000}}
        put = client.put_item(TableName=table, Item=big, ReturnConsumedCapacity="TOTAL")
        update = client.update_item(
            TableName=table,
            Key={"pk": {"S": "a"}},
            UpdateExpression="SET extra = :e",
            ExpressionAttributeValues={":e": {"S": "y" * 3000}},
            ReturnConsumedCapacity="TOTAL",
        )
        return {
            "put_item_3kb_reported": put.get("ConsumedCapacity", {}).get("CapacityUnits"),
            "put_item_3kb_expected": units(item_size(big)),
            "update_item_to_6kb_reported": update.get("ConsumedCapacity", {}).get("CapacityUnits"),
            "update_item_to_6kb_expected": 6,
        }
    finally:
        client.delete_table(TableName=table)
