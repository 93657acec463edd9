"""The ResumeQueue conformance suite: what is enqueued reaches a worker as the same ResumeMessage.

Subclass :class:`ResumeQueueSuite` and provide a ``queue_kit`` fixture (a :class:`~agentturn.testing.QueueKit`
whose ``receive`` is how a worker takes messages off the queue). Whether a repeated enqueue of one version is
delivered again, and whether one turn's messages keep their order, are declared by the kit. A queue that says it
carries snapshots (``carries_snapshots``) must deliver them unchanged.
"""

from __future__ import annotations

import pytest

from agentturn.engine.handoff import pack_snapshot, unpack_snapshot
from agentturn.ports.queue import ResumeMessage, ResumeQueue, carries_snapshots
from agentturn.ports.serializer import JSON
from agentturn.testing.builders import new_turn
from agentturn.testing.kits import QueueKit

__all__ = ["ResumeQueueSuite"]


def _key(message: ResumeMessage) -> tuple[str, int]:
    return (message.turn_id, message.version)


class ResumeQueueSuite:
    """The ResumeQueue contract; subclass it as ``Test...`` and provide the ``queue_kit`` fixture."""

    def test_enqueued_turns_are_received_as_sent(self, queue_kit: QueueKit) -> None:
        # GIVEN the queue under test (it is a ResumeQueue)
        assert isinstance(queue_kit.queue, ResumeQueue)

        # WHEN two turns are enqueued, one with the projection receipt
        queue_kit.queue.enqueue("turn-1", 3)
        queue_kit.queue.enqueue("turn-2", 1)

        # THEN a worker receives both, each exactly as enqueued
        received = sorted(queue_kit.receive(2), key=_key)
        assert received == [
            ResumeMessage(turn_id="turn-1", version=3),
            ResumeMessage(turn_id="turn-2", version=1),
        ]

    def test_a_repeated_enqueue_of_one_version_is_delivered_as_declared(self, queue_kit: QueueKit) -> None:
        # GIVEN the queue under test
        queue = queue_kit.queue

        # WHEN the same turn version is enqueued twice (a retried submit), then the next version
        queue.enqueue("turn-1", 2)
        queue.enqueue("turn-1", 2)
        queue.enqueue("turn-1", 3)

        # THEN the duplicate arrives again or not as the kit declares (a worker makes a duplicate harmless),
        # and the versions keep their order where the kit declares ordered delivery
        duplicates = queue_kit.capabilities.delivers_duplicates
        expected = [2, 2, 3] if duplicates else [2, 3]
        received = [m.version for m in queue_kit.receive(3)]
        assert sorted(received) == expected
        if queue_kit.capabilities.ordered_delivery:
            assert received == expected

    def test_a_snapshot_sent_with_a_message_arrives_unchanged(self, queue_kit: QueueKit) -> None:
        # GIVEN a queue that says its messages carry snapshots, and a turn's packed snapshot
        queue = queue_kit.queue
        if not carries_snapshots(queue):
            pytest.skip("this queue does not carry snapshots (its workers claim and read every turn)")
        turn = new_turn().model_copy(update={"version": 4})
        key = b"conformance-suite-key-" + b"0" * 32
        sealed = pack_snapshot(turn, JSON, key)
        assert sealed is not None
        packed, seal = sealed

        # WHEN the turn is enqueued with it and its seal
        queue.enqueue(turn.id, 4, snapshot=packed, seal=seal)

        # THEN the worker receives both as sent, and the snapshot unpacks to the turn at the message's version
        [received] = queue_kit.receive(1)
        assert received == ResumeMessage(turn_id=turn.id, version=4, snapshot=packed, seal=seal)
        assert unpack_snapshot(packed, seal, turn.id, 4, JSON, key) == turn
