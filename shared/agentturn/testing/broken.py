"""Break a stored snapshot underneath the in-memory TurnStore, as production breaks one.

Each breakage rewrites what the store holds for one turn and nothing else (status, version, lease, indexes
stay as they were), as a bad deploy, a bit flip or a hand edit would leave it:

* ``garbage``: the body is not a snapshot any more (truncated JSON);
* ``newer_schema``: the body is a snapshot of a ``schemaVersion`` newer than this code reads.

The DynamoDB adapter can break in two more ways (a compressed body that does not inflate, an S3 body object
that is gone): :func:`agentturn.testing.aws.break_dynamodb_snapshot`.
"""

from __future__ import annotations

import json
from typing import Final

from agentturn.ports.store import InMemoryTurnStore, TurnStore
from agentturn.state.turn import SCHEMA_VERSION
from agentturn.testing.capabilities import Breakage

#: What a torn write leaves: the start of a snapshot.
TRUNCATED: Final = '{"id": "trunc'


def newer_schema(text: str) -> str:
    """The snapshot ``text`` as code of the next schema version would have written it."""
    body = json.loads(text)
    body["schemaVersion"] = SCHEMA_VERSION + 1
    return json.dumps(body)


def break_in_memory_snapshot(store: TurnStore, turn_id: str, how: Breakage) -> None:
    if not isinstance(store, InMemoryTurnStore):
        raise TypeError(f"cannot break snapshots in {type(store).__name__}")
    record = store._records[turn_id]
    if how == "garbage":
        record.body = TRUNCATED
    elif how == "newer_schema":
        record.body = newer_schema(record.body)
    else:
        raise ValueError(f"the in-memory store cannot hold a body broken as {how!r}")
