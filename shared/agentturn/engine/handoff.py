"""A resume message may carry the snapshot its sender has just saved, so that the worker starts without a claim.

Why: a worker's claim is a conditional write whose only other use is to hand the snapshot back; when the message
brings that snapshot, the worker runs its model step unclaimed and its first write is the save after it (one
request per cycle fewer). The snapshot in a message is the stored one at the message's version (its projection
marks perhaps further on: the sender projected after saving): only the write that made that version can send it,
and versions are never reused. A stale copy (a duplicate delivery after the turn moved on) costs a model call and
a refused save, never a wrong write: every save of an unclaimed run is conditional on the version and on nobody
holding a lease, and the run claims the turn before any tool not declared idempotent runs
(:meth:`agentturn.engine.lease_keeper.LeaseKeeper.claim_deferred`).

A carried snapshot is sealed (:func:`seal`, HMAC-SHA256 with a key only the functions read: the deployment's
``AGENTTURN_HANDOFF_KEY`` or the Secrets Manager secret ``AGENTTURN_HANDOFF_SECRET_ARN`` names): the worker runs
from it only when the seal checks, so a message written by anyone else who may send to the queue is at worst a
wake-up. Without a key nothing is carried.

The text is the store's own serializer's (an encrypting serializer seals it here too), zlib-compressed and
base64-encoded; a snapshot whose text would exceed :data:`MAX_SNAPSHOT_CHARS` is not carried (the worker
claims and reads it, as before).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import zlib
from typing import Final, cast

from pydantic import TypeAdapter, ValidationError

from agentturn.ports.serializer import JSON, Serializer
from agentturn.ports.store import check_schema_version
from agentturn.state.turn import Turn

_log = logging.getLogger("agentturn.engine.handoff")

#: One SQS billing unit is 64 KiB: the rest of a message is ~100 bytes.
MAX_SNAPSHOT_CHARS: Final = 60 * 1024
_TURN: Final[TypeAdapter[Turn]] = TypeAdapter(Turn)


def serializer_of(store: object) -> Serializer:
    """The serializer ``store`` keeps snapshots with (JSON for a store that does not say)."""
    serializer = getattr(store, "serializer", None)
    if callable(getattr(serializer, "dumps", None)) and callable(getattr(serializer, "loads", None)):
        return cast("Serializer", serializer)
    return JSON


#: The fewest bytes of a sealing key (HMAC-SHA256's block of security).
MIN_KEY_BYTES: Final = 32


def seal(packed: str, turn_id: str, version: int, key: bytes) -> str:
    """The seal a carried snapshot travels with: HMAC-SHA256 over the turn, the version and the packed text,
    with a key only the functions read. A message anyone with ``sqs:SendMessage`` wrote has none that checks."""
    return hmac.new(key, f"{turn_id}\n{version}\n{packed}".encode(), hashlib.sha256).hexdigest()


def pack_snapshot(turn: Turn, serializer: Serializer, key: bytes) -> tuple[str, str] | None:
    """``turn`` as a message carries it, and its seal; ``None`` when it is too large to carry."""
    compressed = zlib.compress(serializer.dumps(turn).encode(), 6)
    packed = base64.b64encode(compressed).decode("ascii")
    if len(packed) > MAX_SNAPSHOT_CHARS:
        return None
    return packed, seal(packed, turn.id, turn.version, key)


def unpack_snapshot(
    packed: str, sealed: str | None, turn_id: str, version: int, serializer: Serializer, key: bytes | None
) -> Turn | None:
    """The turn a message carries, at the message's ``version``; ``None`` (the worker then claims and reads the
    turn, as for a message without one) when its seal does not check (no key, no seal, or another text: a
    message someone else wrote is a wake-up, never a snapshot to act on), or it does not decode or is not
    ``turn_id``'s."""
    if key is None or sealed is None or not hmac.compare_digest(seal(packed, turn_id, version, key), sealed):
        _log.warning("the snapshot in the message for turn %r is not sealed by this deployment; claiming", turn_id)
        return None
    try:
        text = zlib.decompress(base64.b64decode(packed, validate=True)).decode()
        turn = check_schema_version(serializer.loads(text, _TURN))
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValidationError, ValueError) as exc:
        _log.warning("the snapshot in the message for turn %r does not decode (%s); claiming instead", turn_id, exc)
        return None
    if turn.id != turn_id:
        _log.warning("the message for turn %r carries turn %r; claiming instead", turn_id, turn.id)
        return None
    return turn.model_copy(update={"version": version})
