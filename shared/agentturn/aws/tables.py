"""The DynamoDB tables of agentturn, described once: the adapters, the local emulator and the CDK stack read
these definitions, so the key schema, the indexes and the TTL attribute cannot drift apart.

Everything here is plain data (frozen dataclasses, a pydantic model) and imports no AWS SDK at module
import: the CDK app and the Lambda configuration import it without paying for boto3.
``create_tables`` takes a client that the caller made.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import CreateTableInputTypeDef

AttributeType = Literal["S", "N", "B"]
ProjectionType = Literal["ALL", "KEYS_ONLY", "INCLUDE"]


@dataclass(frozen=True)
class KeyAttribute:
    name: str
    type: AttributeType


@dataclass(frozen=True)
class IndexDefinition:
    """A GSI (own partition key) or an LSI (the table's partition key, another sort key)."""

    name: str
    partition_key: KeyAttribute
    sort_key: KeyAttribute | None
    projection: ProjectionType
    non_key_attributes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableDefinition:
    """One table: keys, indexes, TTL attribute; billed on demand."""

    #: Stable logical name (CDK construct id, the key of :data:`TABLES`).
    logical_name: str
    partition_key: KeyAttribute
    sort_key: KeyAttribute | None = None
    global_indexes: tuple[IndexDefinition, ...] = ()
    local_indexes: tuple[IndexDefinition, ...] = ()
    #: Epoch-seconds attribute that DynamoDB's TTL deletes items by (``None``: no TTL).
    ttl_attribute: str | None = None
    billing_mode: Literal["PAY_PER_REQUEST"] = "PAY_PER_REQUEST"
    point_in_time_recovery: bool = True

    @property
    def key_attributes(self) -> tuple[KeyAttribute, ...]:
        """Every attribute used as a key by the table or an index (each once): the AttributeDefinitions."""
        seen: dict[str, KeyAttribute] = {}
        candidates = [self.partition_key, self.sort_key]
        for index in (*self.global_indexes, *self.local_indexes):
            candidates += [index.partition_key, index.sort_key]
        for attribute in candidates:
            if attribute is None:
                continue
            known = seen.setdefault(attribute.name, attribute)
            if known.type != attribute.type:
                raise ValueError(f"attribute {attribute.name!r} is declared as {known.type!r} and {attribute.type!r}")
        return tuple(seen.values())

    def create_table_request(self, table_name: str) -> CreateTableInputTypeDef:
        """The ``CreateTable`` request for this definition under ``table_name`` (boto3 low-level shape)."""
        request: dict[str, Any] = {
            "TableName": table_name,
            "BillingMode": self.billing_mode,
            "AttributeDefinitions": [{"AttributeName": a.name, "AttributeType": a.type} for a in self.key_attributes],
            "KeySchema": _key_schema(self.partition_key, self.sort_key),
        }
        if self.global_indexes:
            request["GlobalSecondaryIndexes"] = [_index(i) for i in self.global_indexes]
        if self.local_indexes:
            request["LocalSecondaryIndexes"] = [_index(i) for i in self.local_indexes]
        return request  # type: ignore[return-value]  # built as a plain dict; the shape is the TypedDict's


def _key_schema(partition_key: KeyAttribute, sort_key: KeyAttribute | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": partition_key.name, "KeyType": "HASH"}]
    if sort_key is not None:
        schema.append({"AttributeName": sort_key.name, "KeyType": "RANGE"})
    return schema


def _index(index: IndexDefinition) -> dict[str, Any]:
    projection: dict[str, Any] = {"ProjectionType": index.projection}
    if index.projection == "INCLUDE":
        projection["NonKeyAttributes"] = list(index.non_key_attributes)
    return {
        "IndexName": index.name,
        "KeySchema": _key_schema(index.partition_key, index.sort_key),
        "Projection": projection,
    }


# ------------------------------------------------------------------------------------------ turns table

#: Partition key of the turns table: one item per turn.
TURN_ID: Final = "turnId"
#: Present only while the turn is runnable (READY/RUNNING): the sparse index's partition key. Its value is
#: one of ``RUNNABLE_SHARDS`` shards, so sweeping never funnels every runnable turn through one partition.
RUNNABLE_SHARD: Final = "runnableShard"
#: Store-clock time (epoch seconds) of the last snapshot write (what the sweeper's idle test reads).
UPDATED_AT: Final = "updatedAt"
#: Store-clock time (epoch seconds) the turn last became runnable: the sparse runnable index's sort key. It
#: is set when the turn enters READY/RUNNING and kept, unchanged, by every write while it stays runnable, so
#: saves, claims and renewals of a runnable turn write nothing to the index (an index write is billed only
#: when the item enters or leaves it, or when a key or projected attribute changes).
RUNNABLE_SINCE: Final = "runnableSince"
TURN_VERSION: Final = "version"
LEASE_EXPIRES_AT: Final = "leaseExpiresAt"
RUNNABLE_INDEX: Final = "runnable"
#: How many shards the sparse indexes are spread over. Changing it strands turns in shards the sweeper no
#: longer reads until their next write: change it only with the runtime stopped.
RUNNABLE_SHARDS: Final = 8
#: Present only while the turn is blocked on a wait with a deadline: the sparse "overdue" index's keys
#: (a shard, as for the runnable index, and the deadline in epoch seconds).
OVERDUE_SHARD: Final = "overdueShard"
WAIT_EXPIRES_AT: Final = "waitExpiresAt"
OVERDUE_INDEX: Final = "overdue"
#: TTL: epoch seconds after which DynamoDB may delete the item (a terminal turn past its retention).
EXPIRES_AT: Final = "expiresAt"

TURNS_TABLE = TableDefinition(
    logical_name="Turns",
    partition_key=KeyAttribute(TURN_ID, "S"),
    global_indexes=(
        IndexDefinition(
            name=RUNNABLE_INDEX,
            partition_key=KeyAttribute(RUNNABLE_SHARD, "S"),
            sort_key=KeyAttribute(RUNNABLE_SINCE, "N"),
            # Keys only: a projected version, lease or update time would change on every save and claim of a
            # runnable turn and bill an index write each time. The sweeper reads what it decides on (version,
            # lease, update time) from the candidates' items, with one BatchGetItem per 100.
            projection="KEYS_ONLY",
        ),
        IndexDefinition(
            name=OVERDUE_INDEX,
            partition_key=KeyAttribute(OVERDUE_SHARD, "S"),
            sort_key=KeyAttribute(WAIT_EXPIRES_AT, "N"),
            # A blocked turn is not written until it is answered: projecting what the sweeper needs is free.
            projection="INCLUDE",
            non_key_attributes=(TURN_VERSION, UPDATED_AT),
        ),
    ),
    ttl_attribute=EXPIRES_AT,
)

# ---------------------------------------------------------------------------- conversations (timeline)

CONVERSATION_ID: Final = "conversationId"
#: ``MODEL_ENTRY_PREFIX`` or ``CARD_ENTRY_PREFIX`` + ``entry.sort_key + "\x1f" + entry.message_id`` for
#: timeline entries; ``"head"`` for the conversation's head item (its active turn).
ENTRY_KEY: Final = "sk"
#: Model-visible entries (user, ai, tool messages): the model's context is one Query of this range.
MODEL_ENTRY_PREFIX: Final = "t#"
#: Cards (forms, approvals): the timeline merges them with the model's range; the model never reads them.
CARD_ENTRY_PREFIX: Final = "c#"
#: Audit records (``agentturn.ports.audit``): ``a#<turn.createdAt>#<turnId>#<actionId>\x1f<subject>``, one per
#: decision, written once; retention removes them with their turn's entries.
AUDIT_ENTRY_PREFIX: Final = "a#"
#: A pending card's further inbox entries (one per assignee after the first, whom the card item itself carries):
#: ``i#<sort_key>\x1f<message_id>\x1f<assignee>``; deleted when the card settles, or with their turn.
INBOX_ENTRY_PREFIX: Final = "i#"
MESSAGE_ID: Final = "messageId"
#: On pending cards (and their inbox entries) only: who may answer (``u#<subject>`` or ``g#<group>``) and the
#: order of the inbox (``<deadline or "~">#<asked at>#<message id>``). The sparse ``byAssignee`` GSI is the inbox.
ASSIGNEE: Final = "assignee"
INBOX_DUE: Final = "inboxDue"
INBOX_INDEX: Final = "byAssignee"
#: On the head item only, once a turn of an owned conversation started: the owner, the start of its latest
#: turn, the title (from its first turn). The sparse ``byOwner`` GSI lists an owner's conversations.
LIST_OWNER: Final = "listOwner"
LAST_ACTIVITY: Final = "lastActivity"
TITLE: Final = "title"
OWNER_INDEX: Final = "byOwner"

CONVERSATIONS_TABLE = TableDefinition(
    logical_name="Conversations",
    partition_key=KeyAttribute(CONVERSATION_ID, "S"),
    sort_key=KeyAttribute(ENTRY_KEY, "S"),
    # No local index: the key says which range an entry is in (every index write would be a write unit more).
    global_indexes=(
        # The conversations list: one Query per page. Sparse (head items of owned conversations only), and
        # the active turn is not projected, so letting go of a conversation writes nothing here; only a
        # turn start moves the entry (one index write the first time, a delete and a put after).
        IndexDefinition(
            OWNER_INDEX, KeyAttribute(LIST_OWNER, "S"), KeyAttribute(LAST_ACTIVITY, "S"), "INCLUDE", (TITLE,)
        ),
        # The inbox: one Query per principal (the caller, each of their groups). Sparse: only pending cards
        # carry an assignee, and a card's write that settles it drops it from the index in the same request.
        IndexDefinition(
            INBOX_INDEX,
            KeyAttribute(ASSIGNEE, "S"),
            KeyAttribute(INBOX_DUE, "S"),
            "INCLUDE",
            (MESSAGE_ID, "body", "bodyRef"),
        ),
    ),
    ttl_attribute=EXPIRES_AT,
)

# ----------------------------------------------------------------------------------- idempotency table

#: The key and TTL attribute names of Powertools' DynamoDBPersistenceLayer (its defaults).
IDEMPOTENCY_KEY: Final = "id"
IDEMPOTENCY_EXPIRATION: Final = "expiration"

IDEMPOTENCY_TABLE = TableDefinition(
    logical_name="Idempotency",
    partition_key=KeyAttribute(IDEMPOTENCY_KEY, "S"),
    ttl_attribute=IDEMPOTENCY_EXPIRATION,
    # Replays are only kept for hours: nothing to restore after a disaster.
    point_in_time_recovery=False,
)

TABLES: Final[Mapping[str, TableDefinition]] = {
    t.logical_name: t for t in (TURNS_TABLE, CONVERSATIONS_TABLE, IDEMPOTENCY_TABLE)
}

# ----------------------------------------------------------------------------------------------- names

ENV_TURNS_TABLE: Final = "TURNS_TABLE"
ENV_CONVERSATIONS_TABLE: Final = "CONVERSATIONS_TABLE"
ENV_IDEMPOTENCY_TABLE: Final = "IDEMPOTENCY_TABLE"
ENV_SNAPSHOT_BUCKET: Final = "SNAPSHOT_BUCKET"
ENV_RESUME_QUEUE_URL: Final = "RESUME_QUEUE_URL"
#: The key that seals the snapshot a resume message carries (:mod:`agentturn.engine.handoff`), as text (local
#: development, tests), or the Secrets Manager secret that holds it (the construct makes one).
ENV_HANDOFF_KEY: Final = "AGENTTURN_HANDOFF_KEY"
ENV_HANDOFF_SECRET_ARN: Final = "AGENTTURN_HANDOFF_SECRET_ARN"

# What real DynamoDB accepts (moto accepts more, e.g. one-character names): refuse early and clearly.
_TABLE_NAME = r"^[A-Za-z0-9_.-]{3,255}$"
_BUCKET_NAME = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"


class TableNames(BaseModel):
    """Where the runtime's resources are, as the Lambdas get it from their environment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turns_table: str = Field(pattern=_TABLE_NAME)
    conversations_table: str = Field(pattern=_TABLE_NAME)
    idempotency_table: str = Field(pattern=_TABLE_NAME)
    #: Large snapshots spill here; without a bucket a snapshot must fit in a DynamoDB item.
    snapshot_bucket: str | None = Field(default=None, pattern=_BUCKET_NAME)
    resume_queue_url: str | None = Field(default=None, min_length=1)

    def table_name(self, definition: TableDefinition) -> str:
        return {
            TURNS_TABLE.logical_name: self.turns_table,
            CONVERSATIONS_TABLE.logical_name: self.conversations_table,
            IDEMPOTENCY_TABLE.logical_name: self.idempotency_table,
        }[definition.logical_name]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TableNames:
        """Read ``TURNS_TABLE``, ``CONVERSATIONS_TABLE``, ``IDEMPOTENCY_TABLE`` (required) and
        ``SNAPSHOT_BUCKET``, ``RESUME_QUEUE_URL`` (optional; empty counts as unset)."""
        env = os.environ if environ is None else environ
        required = (ENV_TURNS_TABLE, ENV_CONVERSATIONS_TABLE, ENV_IDEMPOTENCY_TABLE)
        missing = [name for name in required if not env.get(name)]
        if missing:
            raise ValueError(f"environment variables {missing!r} must name the agentturn tables")
        try:
            return cls(
                turns_table=env[ENV_TURNS_TABLE],
                conversations_table=env[ENV_CONVERSATIONS_TABLE],
                idempotency_table=env[ENV_IDEMPOTENCY_TABLE],
                snapshot_bucket=env.get(ENV_SNAPSHOT_BUCKET) or None,
                resume_queue_url=env.get(ENV_RESUME_QUEUE_URL) or None,
            )
        except ValidationError as exc:
            raise ValueError(f"invalid agentturn resource names in the environment: {exc}") from exc

    def to_env(self) -> dict[str, str]:
        """The inverse of :meth:`from_env` (what the CDK stack puts in a Lambda's environment)."""
        env = {
            ENV_TURNS_TABLE: self.turns_table,
            ENV_CONVERSATIONS_TABLE: self.conversations_table,
            ENV_IDEMPOTENCY_TABLE: self.idempotency_table,
        }
        if self.snapshot_bucket is not None:
            env[ENV_SNAPSHOT_BUCKET] = self.snapshot_bucket
        if self.resume_queue_url is not None:
            env[ENV_RESUME_QUEUE_URL] = self.resume_queue_url
        return env


# -------------------------------------------------------------------------------------------- creation


class TableSchemaMismatchError(RuntimeError):
    """A table of that name exists with keys or indexes other than the definition's."""


def create_tables(
    dynamodb_client: DynamoDBClient,
    names: TableNames,
    *,
    timeout: float = 60.0,
    definitions: tuple[TableDefinition, ...] = (TURNS_TABLE, CONVERSATIONS_TABLE, IDEMPOTENCY_TABLE),
) -> None:
    """Create the tables (and enable TTL) if they do not exist; wait until they and their indexes are ACTIVE.

    Idempotent: an existing table is checked against its definition (keys and index names) and left as it
    is; a mismatch raises :class:`TableSchemaMismatchError` rather than running on a table the adapters
    would misuse. Waiting is a bounded poll: ``TimeoutError`` after ``timeout`` seconds.
    """
    from botocore.exceptions import ClientError

    deadline = time.monotonic() + timeout
    for definition in definitions:
        table_name = names.table_name(definition)
        try:
            dynamodb_client.create_table(**definition.create_table_request(table_name))
        except ClientError as exc:
            # Already there (made by an earlier run, or concurrently): check it below instead.
            if exc.response.get("Error", {}).get("Code") != "ResourceInUseException":
                raise
    for definition in definitions:
        table_name = names.table_name(definition)
        description = _wait_active(dynamodb_client, table_name, deadline)
        _check_schema(definition, table_name, description)
        if definition.ttl_attribute is not None:
            _enable_ttl(dynamodb_client, table_name, definition.ttl_attribute)


def _wait_active(client: DynamoDBClient, table_name: str, deadline: float) -> Mapping[str, Any]:
    delay = 0.02
    while True:
        table = client.describe_table(TableName=table_name)["Table"]
        indexes = table.get("GlobalSecondaryIndexes", [])
        if table.get("TableStatus") == "ACTIVE" and all(i.get("IndexStatus") == "ACTIVE" for i in indexes):
            return table
        if time.monotonic() + delay > deadline:
            raise TimeoutError(f"table {table_name!r} is not ACTIVE in time (status {table.get('TableStatus')!r})")
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def _check_schema(definition: TableDefinition, table_name: str, table: Mapping[str, Any]) -> None:
    def keys(schema: Sequence[Mapping[str, str]]) -> list[tuple[str, str]]:
        return sorted((k["AttributeName"], k["KeyType"]) for k in schema)

    expected = keys(_key_schema(definition.partition_key, definition.sort_key))
    problems: list[str] = []
    if keys(table.get("KeySchema", [])) != expected:
        problems.append(f"key schema {table.get('KeySchema')!r}")
    for kind, wanted in (
        ("GlobalSecondaryIndexes", definition.global_indexes),
        ("LocalSecondaryIndexes", definition.local_indexes),
    ):
        actual = {i["IndexName"]: keys(i["KeySchema"]) for i in table.get(kind, [])}
        for index in wanted:
            if actual.get(index.name) != keys(_key_schema(index.partition_key, index.sort_key)):
                problems.append(f"index {index.name!r} missing or keyed differently")
    if problems:
        raise TableSchemaMismatchError(
            f"table {table_name!r} does not match definition {definition.logical_name!r}: {'; '.join(problems)}"
        )


def _enable_ttl(client: DynamoDBClient, table_name: str, attribute: str) -> None:
    current = client.describe_time_to_live(TableName=table_name).get("TimeToLiveDescription", {})
    if current.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
        if current.get("AttributeName") != attribute:
            raise TableSchemaMismatchError(
                f"table {table_name!r} expires items by {current.get('AttributeName')!r}, not {attribute!r}"
            )
        return
    client.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute}
    )


__all__ = [
    "CONVERSATIONS_TABLE",
    "IDEMPOTENCY_TABLE",
    "RUNNABLE_SHARDS",
    "TABLES",
    "TURNS_TABLE",
    "IndexDefinition",
    "KeyAttribute",
    "TableDefinition",
    "TableNames",
    "TableSchemaMismatchError",
    "create_tables",
]
