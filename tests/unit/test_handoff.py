"""Packing the snapshot a resume message carries: the store's serializer, the deployment's seal, and a worker
that falls back to its claim whenever what it was sent cannot be used (or was not sealed by this deployment)."""

from __future__ import annotations

import base64
import os
import zlib

import pytest
from tests.support.sealing import SealingSerializer

from agentturn.engine.handoff import MAX_SNAPSHOT_CHARS, pack_snapshot, seal, serializer_of, unpack_snapshot
from agentturn.ports.serializer import JSON
from agentturn.ports.store import InMemoryTurnStore
from agentturn.state.turn import Turn

SECRET = "4111-1111-1111-1111"
KEY = b"k" * 32


def _turn(**metadata: str) -> Turn:
    return Turn(id="t-1", conversation_id="c-1", agent_id="a", agent_version="1", version=3, metadata=metadata)


def test_a_packed_snapshot_comes_back_equal_at_the_messages_version() -> None:
    # GIVEN a turn saved at version 3
    turn = _turn(card=SECRET)

    # WHEN it is packed and unpacked for a message of version 3
    sealed = pack_snapshot(turn, JSON, KEY)
    assert sealed is not None
    back = unpack_snapshot(*sealed, "t-1", 3, JSON, KEY)

    # THEN it is the same turn
    assert back == turn


def test_the_snapshot_in_a_message_is_sealed_by_the_stores_serializer() -> None:
    # GIVEN a store whose serializer seals what it writes (a stand-in for encryption at rest)
    sealing = SealingSerializer(JSON)
    store = InMemoryTurnStore(serializer=sealing)

    # WHEN a turn holding a secret is packed with that store's serializer
    serializer = serializer_of(store)
    sealed = pack_snapshot(_turn(card=SECRET), serializer, KEY)
    assert sealed is not None
    packed = sealed[0]

    # THEN the message text does not hold the secret in the clear, and it unpacks with the same serializer
    clear = zlib.decompress(base64.b64decode(packed)).decode()
    assert SECRET not in clear
    assert serializer is sealing
    back = unpack_snapshot(*sealed, "t-1", 3, serializer, KEY)
    assert back is not None and back.metadata == {"card": SECRET}


def test_a_store_that_names_no_serializer_packs_with_json() -> None:
    assert serializer_of(object()) is JSON


def test_a_snapshot_too_large_to_carry_is_left_out() -> None:
    # GIVEN a turn whose text compresses to more than a message may carry (random bytes do not compress)
    noise = base64.b64encode(os.urandom(MAX_SNAPSHOT_CHARS)).decode()

    # WHEN it is packed
    # THEN nothing is packed: the message goes without it, and the worker claims and reads the turn
    assert pack_snapshot(_turn(noise=noise), JSON, KEY) is None


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
    # THEN it gets nothing (and claims the turn, as for a message without one), even with a seal that checks
    assert unpack_snapshot(packed, seal(packed, "t-1", 3, KEY), "t-1", 3, JSON, KEY) is None


def test_a_snapshot_of_another_turn_is_ignored() -> None:
    packed = pack_snapshot(_turn(), JSON, KEY)
    assert packed is not None
    assert unpack_snapshot(*packed, "t-2", 3, JSON, KEY) is None


def _approved(turn: Turn) -> Turn:
    return turn.model_copy(update={"metadata": {"approved": "yes"}})


def test_a_snapshot_edited_on_the_queue_is_never_run() -> None:
    # GIVEN a sealed snapshot, and the same message with its snapshot edited (someone who may send to the queue
    # wrote "approved" into it and packed it again)
    packed, sealed = pack_snapshot(_turn(), JSON, KEY) or ("", "")
    forged, _ = pack_snapshot(_approved(_turn()), JSON, b"x" * 32) or ("", "")

    # WHEN the worker unpacks the forged snapshot with the original seal, with a seal of the forger's own key,
    # or with the seal of another version or turn
    # THEN it gets nothing from any of them (a wake-up: it claims and reads the stored turn)
    assert unpack_snapshot(forged, sealed, "t-1", 3, JSON, KEY) is None
    assert unpack_snapshot(forged, seal(forged, "t-1", 3, b"x" * 32), "t-1", 3, JSON, KEY) is None
    assert unpack_snapshot(packed, seal(packed, "t-1", 4, KEY), "t-1", 3, JSON, KEY) is None
    assert unpack_snapshot(packed, sealed, "t-1", 3, JSON, KEY) == _turn()


def test_without_a_key_nothing_is_unpacked() -> None:
    # GIVEN a message sealed by a deployment, read by a worker that has no key (misconfigured)
    packed, sealed = pack_snapshot(_turn(), JSON, KEY) or ("", "")

    # WHEN it unpacks it, or a message without a seal
    # THEN it gets nothing: it claims
    assert unpack_snapshot(packed, sealed, "t-1", 3, JSON, None) is None
    assert unpack_snapshot(packed, None, "t-1", 3, JSON, KEY) is None


def test_the_key_comes_from_the_environment_and_a_short_one_is_refused() -> None:
    from agentturn.api.settings import SettingsError
    from agentturn.api.wiring import handoff_key_from_env

    # GIVEN environments with a key, with a key too short to seal with, and with none
    # WHEN the handlers read where their key comes from
    # THEN a good key is used as it is, a short one stops the handler at start-up, and none carries nothing
    assert handoff_key_from_env({"AGENTTURN_HANDOFF_KEY": "k" * 32})() == b"k" * 32
    with pytest.raises(SettingsError, match="AGENTTURN_HANDOFF_KEY"):
        handoff_key_from_env({"AGENTTURN_HANDOFF_KEY": "short"})
    assert handoff_key_from_env({})() is None
