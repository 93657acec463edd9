"""Packing the snapshot a resume message carries: the store's serializer, and a worker that falls back to its
claim whenever what it was sent cannot be used."""

from __future__ import annotations

import base64
import os
import zlib

import pytest
from tests.support.sealing import SealingSerializer

from agentturn.engine.handoff import MAX_SNAPSHOT_CHARS, pack_snapshot, serializer_of, unpack_snapshot
from agentturn.ports.serializer import JSON
from agentturn.ports.store import InMemoryTurnStore
from agentturn.state.turn import Turn

SECRET = "4111-1111-1111-1111"


def _turn(**metadata: str) -> Turn:
    return Turn(id="t-1", conversation_id="c-1", agent_id="a", agent_version="1", version=3, metadata=metadata)


def test_a_packed_snapshot_comes_back_equal_at_the_messages_version() -> None:
    # GIVEN a turn saved at version 3
    turn = _turn(card=SECRET)

    # WHEN it is packed and unpacked for a message of version 3
    packed = pack_snapshot(turn, JSON)
    assert packed is not None
    back = unpack_snapshot(packed, "t-1", 3, JSON)

    # THEN it is the same turn
    assert back == turn


def test_the_snapshot_in_a_message_is_sealed_by_the_stores_serializer() -> None:
    # GIVEN a store whose serializer seals what it writes (a stand-in for encryption at rest)
    sealing = SealingSerializer(JSON)
    store = InMemoryTurnStore(serializer=sealing)

    # WHEN a turn holding a secret is packed with that store's serializer
    serializer = serializer_of(store)
    packed = pack_snapshot(_turn(card=SECRET), serializer)
    assert packed is not None

    # THEN the message text does not hold the secret in the clear, and it unpacks with the same serializer
    clear = zlib.decompress(base64.b64decode(packed)).decode()
    assert SECRET not in clear
    assert serializer is sealing
    back = unpack_snapshot(packed, "t-1", 3, serializer)
    assert back is not None and back.metadata == {"card": SECRET}


def test_a_store_that_names_no_serializer_packs_with_json() -> None:
    assert serializer_of(object()) is JSON


def test_a_snapshot_too_large_to_carry_is_left_out() -> None:
    # GIVEN a turn whose text compresses to more than a message may carry (random bytes do not compress)
    noise = base64.b64encode(os.urandom(MAX_SNAPSHOT_CHARS)).decode()

    # WHEN it is packed
    # THEN nothing is packed: the message goes without it, and the worker claims and reads the turn
    assert pack_snapshot(_turn(noise=noise), JSON) is None


@pytest.mark.parametrize(
    "packed",
    [
        "not base64!",
        base64.b64encode(b"not zlib").decode(),
        base64.b64encode(zlib.compress(b"{not json")).decode(),
        base64.b64encode(zlib.compress(b'{"id": "t-1"}')).decode(),
    ],
)
def test_a_snapshot_that_does_not_decode_is_ignored(packed: str) -> None:
    # GIVEN a message whose snapshot is broken
    # WHEN the worker unpacks it
    # THEN it gets nothing (and claims the turn, as for a message without one)
    assert unpack_snapshot(packed, "t-1", 3, JSON) is None


def test_a_snapshot_of_another_turn_is_ignored() -> None:
    packed = pack_snapshot(_turn(), JSON)
    assert packed is not None
    assert unpack_snapshot(packed, "t-2", 3, JSON) is None
