"""The TurnStore conformance suite for large snapshots: a turn with 2 MB of messages saves, loads and
resumes. A kit that declares ``spills_to_blob_store`` has its ``inspector`` check where the body went."""

from __future__ import annotations

import os

from agentturn import ResumeCommand, Runner, Worker
from agentturn.demo import demo_agents
from agentturn.state.messages import FormMessage, FormStatus, UserMessage
from agentturn.state.turn import TurnStatus
from agentturn.testing.builders import advanced, new_conversation_id, new_turn
from agentturn.testing.kits import StoreKit
from agentturn.timeline.identity import stamp

__all__ = ["TWO_MB", "LargeSnapshotSuite", "incompressible"]

TWO_MB = 2 * 1024 * 1024


def incompressible(size: int) -> str:
    """Text that zlib cannot shrink much (random hex: about 2:1), so the body really is large."""
    return os.urandom((size + 1) // 2).hex()[:size]


def _check_spilled(kit: StoreKit, turn_id: str, version: int) -> None:
    if kit.capabilities.spills_to_blob_store:
        if kit.inspector is None:
            raise TypeError(f"kit {kit.name!r} declares spills_to_blob_store but has no inspector")
        kit.inspector.check_spilled(turn_id, version)


class LargeSnapshotSuite:
    """Large snapshots; subclass it as ``Test...`` and provide the ``store_kit`` fixture."""

    def test_a_two_megabyte_turn_saves_and_loads(self, store_kit: StoreKit) -> None:
        # GIVEN a turn whose messages hold 2 MB (20 messages of ~100 KB)
        turn = new_turn()
        for _ in range(20):
            turn.messages.append(stamp(turn, UserMessage(content=incompressible(-(-TWO_MB // 20)))))

        # WHEN it is created, saved and loaded by another store instance
        created = store_kit.store.create(turn)
        saved = store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)
        loaded = store_kit.new_store().load(turn.id)

        # THEN nothing is lost
        assert loaded == saved
        assert sum(len(m.content) for m in loaded.messages if isinstance(m, UserMessage)) >= TWO_MB
        # AND where the store keeps large bodies elsewhere, it went there, and the body the save replaced is gone
        _check_spilled(store_kit, turn.id, saved.version)

    def test_a_two_megabyte_turn_suspends_and_a_worker_in_another_process_resumes_it(self, store_kit: StoreKit) -> None:
        # GIVEN the support agent asked for a ticket together with 2 MB of pasted logs
        agents = demo_agents()
        support = next(a for a in agents if a.id == "support-agent")
        logs = incompressible(TWO_MB)
        runner = Runner(store=store_kit.store, chat_memory=store_kit.memory, agents=agents, clock=store_kit.clock)
        conversation_id = new_conversation_id()

        # WHEN it runs until the ticket tool needs the form, the form is submitted, and a worker with its own
        # store instance (another process) continues the turn
        waiting = runner.run(support, conversation_id, f"create a high priority login incident ticket\n{logs}")
        assert waiting.status is TurnStatus.WAITING_FOR_USER
        assert waiting.suspension is not None
        runner.submit_resume(
            waiting.id,
            ResumeCommand.user_input(
                waiting.suspension.correlation_id, {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}
            ),
        )
        worker_runner = Runner(
            store=store_kit.new_store(), chat_memory=store_kit.memory, agents=demo_agents(), clock=store_kit.clock
        )
        result = Worker(worker_runner).process(waiting.id)

        # THEN the turn completed with the ticket, its 2 MB input intact, and the timeline shows the submitted
        # card and the answer
        assert result.turn is not None
        done = result.turn
        assert done.status is TurnStatus.COMPLETED
        assert done.final_output is not None
        assert "Ticket TICKET-" in done.final_output
        first = done.messages[0]
        assert isinstance(first, UserMessage)
        assert logs in first.content
        timeline = store_kit.memory(conversation_id).get_messages()
        cards = [m for m in timeline if isinstance(m, FormMessage)]
        assert [c.status for c in cards] == [FormStatus.SUBMITTED]
        opening, last = timeline[0], timeline[-1]
        assert isinstance(opening, UserMessage)
        assert logs in opening.content
        assert getattr(last, "content", None) == done.final_output
        _check_spilled(store_kit, done.id, done.version)
