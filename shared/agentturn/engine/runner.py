"""The Runner: moves a turn through model and tool calls, stops it durably for a person, resumes it.

A facade that wires the parts and holds the public API: the loop (:mod:`driver`) and its two steps
(:mod:`model_step`, :mod:`tool_step`), every write of a running turn (:mod:`turn_writer`), the lease
(:mod:`lease_keeper`), cancels and expiries (:mod:`settle`), the conversation's active turn
(:mod:`conversation_lock`), event numbers (:mod:`sequencer`), the agents (:mod:`registry`), and the pure
rules for stopping and resuming (:mod:`suspend`, :mod:`resume`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentturn.agents.agent import Agent
from agentturn.agents.registry import AgentRegistry, AgentResolver
from agentturn.engine.call_ids import unique_call_ids
from agentturn.engine.clock import Clock, Waiter, iso, real_wait
from agentturn.engine.conflicts import retry_on_conflict
from agentturn.engine.conversation_lock import ConversationLock
from agentturn.engine.driver import TurnDriver
from agentturn.engine.events import EventType, Listener
from agentturn.engine.idempotency import is_replay
from agentturn.engine.lease_keeper import LeaseKeeper
from agentturn.engine.model_step import ModelStep, context_history
from agentturn.engine.queued_answers import answered, can_queue, pending_card, preview, queued_replay
from agentturn.engine.retry import RetryPolicy
from agentturn.engine.sequencer import EventSequencer
from agentturn.engine.settle import Settler
from agentturn.engine.suspend import suspend_for_text
from agentturn.engine.tool_step import ToolStep
from agentturn.engine.turn_run import Run, YieldProbe
from agentturn.engine.turn_writer import TurnWriter
from agentturn.engine.unreadable import UnreadableAttempt, record_unreadable
from agentturn.errors import SnapshotUnreadableError, TurnNotFoundError
from agentturn.ports.audit import (
    AuditLog,
    AuditRecord,
    OutcomeLog,
    OutcomeRecord,
    ToolOutcome,
    audit_record,
    outcome_record,
)
from agentturn.ports.memory import ChatMemory, ChatMemoryProvider
from agentturn.ports.store import InMemoryTurnStore, Lease, TurnStore, new_lease_id
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import ModelMessage, TimelineMessage, UserMessage
from agentturn.state.turn import ProjectionMark, QueuedAnswer, Suspension, Turn
from agentturn.timeline.cards import write_card
from agentturn.timeline.identity import stamp
from agentturn.timeline.repair import reconcile, repair_timeline

__all__ = ["AgentResolver", "Runner", "UnreadableAttempt", "YieldProbe"]

#: Rounds an answer retries when other answers to the same turn are saved first (see ``submit_resume``).
ANSWER_ROUNDS = 20

#: Kept importable from here under its old name (tests of the id rules import it so).
_unique_call_ids = unique_call_ids


@dataclass(frozen=True)
class AcceptedAnswer:
    """What :meth:`Runner.accept_answer` did: the turn as stored after it, and whether the answer was a replay of
    one applied before (then nothing was written)."""

    turn: Turn
    replayed: bool
    #: The answer was queued beside a running turn (``resume_after="each"``): the run that holds it applies it,
    #: so nothing is to be handed to a worker with a snapshot.
    queued: bool = False


class Runner:
    def __init__(
        self,
        store: TurnStore | None = None,
        chat_memory: ChatMemoryProvider | None = None,
        agents: Iterable[Agent] | AgentResolver | None = None,
        listeners: Iterable[Listener] = (),
        *,
        clock: Clock = time.time,
        worker_id: str | None = None,
        lease_seconds: float = 60.0,
        retry: RetryPolicy | None = None,
        wait: Waiter = real_wait,
    ) -> None:
        self.store: TurnStore = store if store is not None else InMemoryTurnStore(clock=clock)
        self.chat_memory = chat_memory
        self.listeners = list(listeners)
        self.clock = clock
        self.worker_id = worker_id or f"runner-{uuid.uuid4().hex[:8]}"
        self.lease_seconds = lease_seconds
        self.retry = retry if retry is not None else RetryPolicy()
        #: How the lease heartbeat waits between beats (in the clock's time: tests pass their fake clock's).
        self.wait = wait
        # The parts read the listeners and the chat memory through the runner: callers may replace them.
        self._agents = AgentRegistry(agents)
        self._events = EventSequencer(lambda: self.listeners)
        self._writer = TurnWriter(self.store, clock, self._events, self._memory, self._agents, self.retry)
        self._leases = LeaseKeeper(self.store, clock, lease_seconds, wait, self._claim)
        self._conversations = ConversationLock(self.store)
        tool_step = ToolStep(
            self.store, clock, self._agents, self._writer, self._events, self._leases, on_outcome=self._tool_outcome
        )
        model_step = ModelStep(self._agents, self._writer, self._events, self._leases, self.retry, self._memory)
        self._driver = TurnDriver(
            self.store,
            clock,
            self._claim,
            self._agents,
            self._writer,
            self._leases,
            (model_step, tool_step),
            self._memory,
        )
        self._settler = Settler(self.store, clock, self._claim, self._writer, self._events, self.submit_resume)

    def register(self, agent: Agent) -> None:
        """Make ``agent`` the one that continues turns of its id and version (same id + version = same agent)."""
        self._agents.register(agent)

    def agent_for(self, turn: Turn) -> Agent:
        """The exact agent version that started the turn; never a silent fallback to another version."""
        return self._agents.agent_for(turn)

    # ------------------------------------------------------------------ running

    def start(
        self, agent: Agent, conversation_id: str, input: str, *, metadata: Mapping[str, Any] | None = None
    ) -> Turn:
        """Create the turn READY (and take the conversation); run nothing."""
        self.register(agent)
        turn, _, _ = self._create(agent, conversation_id, input, metadata, hold=False)
        return turn

    def run(
        self,
        agent: Agent,
        conversation_id: str,
        input: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        should_yield: YieldProbe | None = None,
        on_started: Callable[[Turn], None] | None = None,
    ) -> Turn:
        """Create a turn and run it in this thread until it is blocked, terminal, or ``should_yield()``.

        The turn is created already leased to this runner (one write, and no worker can take it meanwhile);
        ``on_started(turn)`` is told once it exists and holds its conversation.
        """
        self.register(agent)
        turn, lease, history = self._create(agent, conversation_id, input, metadata, hold=True)
        if on_started is not None:
            on_started(turn)
        return self._driver.continue_turn(
            turn.id, lease=lease, should_yield=should_yield, turn=turn, created_here=True, history=history
        )

    def run_turn(
        self,
        turn_id: str,
        *,
        lease: Lease | None = None,
        should_yield: YieldProbe | None = None,
        turn: Turn | None = None,
        defer_claim: bool = False,
    ) -> Turn:
        """Continue a runnable turn until blocked, terminal, or ``should_yield()`` says stop.

        With ``lease`` (a worker's claim) the run writes under it; without, the runner claims one itself.
        A turn that is not runnable, or whose lease another holder has, is returned as stored. ``turn`` is
        the caller's fresh copy, to save a read (a stale one only costs a refused write, never a wrong one).
        ``defer_claim`` (with ``turn``, the snapshot a resume message carried): run unclaimed until a tool is
        about to run (:mod:`agentturn.engine.handoff`).
        """
        if defer_claim and (turn is None or lease is not None):
            raise ValueError("defer_claim runs from the caller's snapshot (turn=...) and without a lease")
        return self._driver.continue_turn(
            turn_id,
            lease=lease,
            should_yield=should_yield,
            turn=turn,
            created_here=False,
            defer_claim=defer_claim,
        )

    def record_failure(self, turn_id: str, error: BaseException) -> Turn:
        """Count a run of ``turn_id`` that raised ``error`` unexpectedly (a worker calls this for what it cannot
        classify as transient): the turn is tried again after a backoff, and after the last attempt it ends
        FAILED with error ``cannot_run``. A turn someone else holds, or that is not runnable, is returned as
        stored."""
        lease = self._claim(turn_id)
        if lease is None:
            return self.store.load(turn_id)
        turn = lease.turn if lease.turn is not None else self.store.load(turn_id)
        return self._writer.retry_later_now(Run(turn=turn, agent=None, lease=lease), "cannot_run", error)

    def record_unreadable(self, error: SnapshotUnreadableError, *, at_once: bool = False) -> UnreadableAttempt:
        """Count an attempt on a turn whose stored snapshot cannot be read (``error`` says what the store knows
        of it besides the body): like any turn that cannot run, it is tried again after a backoff, and after
        the last attempt it ends FAILED with error ``snapshot_unreadable`` and its conversation is free again.
        ``at_once`` ends it with this attempt (a person asked to cancel it: there is nothing to wait for).
        """
        return record_unreadable(
            error,
            at_once=at_once,
            store=self.store,
            retry=self.retry,
            clock=self.clock,
            events=self._events,
            memory=self._memory,
        )

    # ------------------------------------------------------------------ a person's side

    def submit_resume(self, turn_id: str, command: ResumeCommand) -> Turn:
        """Validate and apply ``command``, save the turn as runnable RUNNING; run nothing (a worker will).

        With metadata ``requestId`` the call is idempotent: a retry with the same request returns the turn
        without applying anything again (``turn.accepted_requests[request_id]`` holds the first answer); the
        same id with a different request raises ``IdempotencyConflictError``.
        """
        return self.accept_answer(turn_id, command).turn

    def accept_answer(self, turn_id: str, command: ResumeCommand) -> AcceptedAnswer:
        """:meth:`submit_resume`, telling also whether this call applied the answer or replayed an earlier one.

        Only the call that applied it hands a worker the snapshot it saved (:mod:`agentturn.engine.handoff`): the worker
        then runs without a claim, so a flood of replays must not start a run each.
        """
        replayed = False
        queued = False

        def attempt() -> Turn:
            nonlocal replayed, queued
            turn = self.store.load(turn_id)
            replayed = is_replay(turn, command)
            if replayed:
                # The first attempt may have died between its save and its card write: the card shows it now.
                memory = self._memory(turn.conversation_id)
                if memory is not None:
                    reconcile(turn, memory)
                # ... and so does its audit record (a conditional put: one already there stays as it is).
                self._audit(turn, command)
                return turn
            if can_queue(turn, command):
                queued = True
                return self._queue_answer(turn, command)
            queued = False
            resumed = answered(turn, command, self.clock())
            # A lost write is decided again on what is stored now, so the loser of two submits (or of a
            # submit and a cancel) gets "not pending" rather than a bare conflict. The seed's rule: the card
            # shows the answer before this returns (a failure of that write raises; the caller's retry, a
            # replay, writes it).
            saved = self._writer.write_and_project(resumed, lease=None, strict=True)
            # The decision's audit record before this returns, as its card (a failure raises; the retry writes it).
            self._audit(saved, command)
            pending = [s.correlation_id for s in saved.suspensions]
            self._events.emit(
                saved, EventType.INPUT_SUBMITTED, actionId=command.action_id, kind=command.kind.value, pending=pending
            )
            if saved.status.is_runnable:
                # Once per wait: the answer that left nothing to wait for (or, by policy, something to run).
                self._events.emit(saved, EventType.TURN_RESUMED, actionId=command.action_id, kind=command.kind.value)
            return saved

        # Answers to different cards of one turn race: each round re-reads and applies its answer to what is
        # stored now, and every round at least one of them is saved, so k answers at once need k rounds.
        turn = retry_on_conflict(turn_id, attempt, rounds=ANSWER_ROUNDS)
        return AcceptedAnswer(turn=turn, replayed=replayed, queued=queued)

    def _queue_answer(self, turn: Turn, command: ResumeCommand) -> Turn:
        """Keep ``command`` beside the running ``turn`` (:mod:`agentturn.engine.queued_answers`) and show it on its
        card (the seed's rule) before returning: the stored turn with the answer queued."""
        kept = queued_replay(turn, command)
        answer = kept or QueuedAnswer(command=command, accepted_at=self.clock(), nonce=uuid.uuid4().hex[:16])
        # A retry of the queued request is shown again as it was; any other answer to that card is refused.
        previewed = preview(
            turn.model_copy(update={"queued_answers": []}) if kept else turn, command, answer.accepted_at
        )
        if kept is None:
            self.store.queue_answer(turn.id, answer)
        card = pending_card(turn, command.action_id)
        shown = previewed.card(card.message_id) if card is not None else None
        memory = self._memory(turn.conversation_id)
        if memory is not None and card is not None and shown is not None:
            # By compare-and-set from the version the card is pending at; a failure raises (the retry, a
            # replay of the same request, writes it).
            write_card(memory, shown, card.version)
        if kept is None:
            pending = [s.correlation_id for s in turn.suspensions if s.correlation_id != command.action_id]
            self._events.emit(
                turn,
                EventType.INPUT_SUBMITTED,
                actionId=command.action_id,
                kind=command.kind.value,
                pending=pending,
                queued=True,
            )
        result = turn.model_copy(update={"accepted_requests": previewed.accepted_requests})
        result.cards = [shown if shown is not None and c.message_id == shown.message_id else c for c in turn.cards]
        result.queued_answers = [*turn.queued_answers, *([] if kept is not None else [answer])]
        return result

    def _audit(self, turn: Turn, command: ResumeCommand) -> None:
        log = self.chat_memory
        if not isinstance(log, AuditLog):
            return
        record = audit_record(turn, command)
        if record is not None:
            log.record_decision(turn.conversation_id, turn.created_at, record)

    def _tool_outcome(self, turn: Turn, call_id: str, failed: bool, result: Any) -> None:
        log = self.chat_memory
        if not isinstance(log, OutcomeLog):
            return
        outcome = ToolOutcome.FAILED if failed else ToolOutcome.SUCCEEDED
        record = outcome_record(turn, call_id, outcome, result, iso(self.clock()))
        if record is not None:
            log.record_outcome(turn.conversation_id, turn.created_at, record)

    def outcomes(self, turn_id: str) -> list[OutcomeRecord]:
        """What the tools of ``turn_id``'s approved cards did (empty when the chat memory keeps no audit)."""
        turn = self.store.load(turn_id)
        log = self.chat_memory
        if not isinstance(log, OutcomeLog):
            return []
        return log.outcomes(turn.conversation_id, turn.created_at, turn.id)

    def audit(self, turn_id: str) -> list[AuditRecord]:
        """The audit records of ``turn_id``'s decisions, in the order they were made (empty when the chat memory
        keeps none)."""
        turn = self.store.load(turn_id)
        log = self.chat_memory
        if not isinstance(log, AuditLog):
            return []
        return log.decisions(turn.conversation_id, turn.created_at, turn.id)

    def resume(self, turn_id: str, command: ResumeCommand) -> Turn:
        """Apply ``command`` and continue the turn in this thread."""
        self.submit_resume(turn_id, command)
        return self.run_turn(turn_id)

    def suspend(self, turn: Turn, suspension: Suspension) -> Turn:
        """Put a plain-text wait point on a turn that is not running elsewhere."""
        current = self.store.load(turn.id)
        suspend_for_text(current, suspension)
        saved = self._writer.write(current, lease=None)
        self._events.emit(
            saved, EventType.TURN_SUSPENDED, type=suspension.type.value, actionId=suspension.correlation_id
        )
        return saved

    def cancel(self, turn_id: str) -> Turn:
        """Cancel a turn: one not running elsewhere ends CANCELLED now, a running one at its next step.

        Safe to call again after any failure: each call finishes what an earlier one started. A blocked turn
        ends in one write that carries the flag and the status together (a failed write changed nothing); a
        runnable one gets the flag first (its worker stops on it), then is finished here if nobody holds it.
        """
        return self._settler.cancel(turn_id)

    def expire(self, turn_id: str) -> Turn:
        """Act on a blocked turn that is due (what the sweeper calls; harmless if it is not due).

        A turn carrying the cancel flag ends CANCELLED (a cancel whose process died before it finished). A
        wait whose input timeout has passed is closed: the pending call gets an "expired" result and the
        turn is saved runnable for a worker, or — when the wait was set to cancel on expiry, or is a
        plain-text wait with no call to answer — it ends CANCELLED.
        """
        return self._settle(turn_id, expire_waits=True)

    def _settle(self, turn_id: str, *, expire_waits: bool) -> Turn:
        return self._settler.settle(turn_id, expire_waits=expire_waits)

    def expire_overdue(self, *, limit: int = 100, expire_waits: bool = True) -> list[Turn]:
        """Settle every due blocked turn the store knows of (see :meth:`expire`); returns the turns now
        runnable (to enqueue). Unfinished cancels are always finished; expired waits only with
        ``expire_waits``."""
        runnable: list[Turn] = []
        for overdue in self.store.find_overdue(limit=limit):
            try:
                turn = self._settle(overdue.turn_id, expire_waits=expire_waits)
            except TurnNotFoundError:
                continue
            except SnapshotUnreadableError as exc:
                # Counted like a worker counts one, so that it leaves the overdue index after its attempts
                # instead of being found (and failing the sweep) on every tick.
                self.record_unreadable(exc)
                continue
            if turn.status.is_runnable:
                runnable.append(turn)
        return runnable

    def repair_timeline(
        self, conversation_id: str, visible: Iterable[TimelineMessage] | None = None, *, whole: bool = False
    ) -> bool:
        """Make the conversation's timeline whole again if the projection of its active turn was lost.

        ``visible`` is what the caller just read of the timeline: its latest entries, oldest first (all of them
        when ``whole``; nothing given: the timeline is read here). What the active turn's snapshot holds and
        ``visible`` would show but does not is written; a healthy timeline costs one read of the snapshot, no
        write. Returns whether it wrote anything.
        """
        memory = self._memory(conversation_id)
        if memory is None:
            return False
        shown = list(visible) if visible is not None else memory.get_messages()
        return repair_timeline(self.store, memory, shown, whole=whole or visible is None)

    def restore(self, turn_id: str) -> Turn:
        """The stored turn, read-only."""
        return self.store.load(turn_id)

    # ------------------------------------------------------------------ creation

    def _claim(self, turn_id: str) -> Lease | None:
        return self.store.claim(turn_id, self.worker_id, self.lease_seconds)

    def _memory(self, conversation_id: str) -> ChatMemory | None:
        return self.chat_memory(conversation_id) if self.chat_memory is not None else None

    def _create(
        self, agent: Agent, conversation_id: str, input: str, metadata: Mapping[str, Any] | None, *, hold: bool
    ) -> tuple[Turn, Lease | None, list[ModelMessage] | None]:
        """The stored turn, holding its conversation; with ``hold`` also leased to this runner; and the model's
        view of the conversation before it (``None`` without a chat memory).

        A held turn runs on at once, so its timeline is written by its first save, not here.
        """
        if not conversation_id:
            raise ValueError("conversation_id must be non-empty")
        memory = self._memory(conversation_id)
        window = agent.policy.context_window
        # The model's first call needs the conversation's history (a start handed to a worker does not: the
        # worker reads it). Read before anything is written: a start that fails on it leaves nothing behind.
        fetched = memory.get_model_messages(window) if memory is not None and hold and window > 0 else []
        now = self.clock()
        turn = Turn(
            id=uuid.uuid4().hex,
            conversation_id=conversation_id,
            agent_id=agent.id,
            agent_version=agent.version,
            input=input,
            metadata=dict(metadata or {}),
            created_at=iso(now),
            updated_at=iso(now),
        )
        turn.messages.append(stamp(turn, UserMessage(content=input)))
        self._events.reserve(turn)
        lease = Lease(turn.id, self.worker_id, new_lease_id(), now + self.lease_seconds) if hold else None
        turn = self.store.create(turn, lease=lease)
        history: list[ModelMessage] | None = None
        if memory is not None:
            if not self._conversations.take(memory, turn) and hold and window > 0:
                # Taken over from an ended turn whose timeline the take made whole: read what it wrote.
                fetched = memory.get_model_messages(window)
            # Only a held turn runs on here; a worker reads the history for one handed to it.
            history = context_history(fetched, turn.id, window) if hold else None
        # Announced after its projection (a page reading the timeline on the notice finds the person's message).
        projected = not hold and self._writer.project(turn, since=ProjectionMark())
        self._writer.announce(turn, projected=projected)
        self._events.emit(turn, EventType.TURN_STARTED, agentId=agent.id, conversationId=conversation_id)
        return turn, lease, history
