"""The Runner: moves a turn through model and tool calls, stops it durably for a person, resumes it.

A facade: the steps (:mod:`model_step`, :mod:`tool_step`), the writes (:mod:`turn_writer`), the lease
(:mod:`lease_keeper`), the conversation (:mod:`conversation_lock`), event numbers (:mod:`sequencer`) and the
agents (:mod:`registry`) each live in their own module; this one wires them and holds the public API.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentturn._clock import Clock, Waiter, iso, real_wait
from agentturn.agent import Agent
from agentturn.call_ids import unique_call_ids
from agentturn.commands import ResumeCommand
from agentturn.conflicts import TryAgain, retry_on_conflict
from agentturn.conversation_lock import ConversationLock, holds
from agentturn.errors import (
    IdempotencyConflictError,
    SnapshotUnreadableError,
    TurnNotFoundError,
    UnknownAgentError,
    VersionConflictError,
)
from agentturn.events import EventType, Listener
from agentturn.lease_keeper import LeaseKeeper
from agentturn.memory import ChatMemory, ChatMemoryProvider
from agentturn.messages import TimelineMessage, UserMessage, form_message_id
from agentturn.model_step import ModelStep
from agentturn.projection import mark_projected, project, stamp
from agentturn.registry import AgentRegistry, AgentResolver
from agentturn.resume import apply_resume, expire_wait
from agentturn.retry import RetryPolicy
from agentturn.sequencer import EventSequencer
from agentturn.state import (
    MAX_ACCEPTED_REQUESTS,
    AcceptedRequest,
    Suspension,
    SuspensionType,
    Turn,
    TurnPhase,
    TurnStatus,
)
from agentturn.store import InMemoryTurnStore, Lease, TurnStore, new_lease_id
from agentturn.suspend import suspend_for_text
from agentturn.tool_step import ToolStep
from agentturn.turn_run import LeaseGone, Run, YieldProbe
from agentturn.turn_writer import TurnWriter, redact_card
from agentturn.unreadable import UnreadableAttempt, record_unreadable

__all__ = ["AgentResolver", "Runner", "UnreadableAttempt", "YieldProbe"]

#: Kept importable from here under its old name (tests of the id rules import it so).
_unique_call_ids = unique_call_ids


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
        self._leases = LeaseKeeper(self.store, clock, lease_seconds, wait)
        self._conversations = ConversationLock(self.store)
        self._model_step = ModelStep(self._agents, self._writer, self._events, self._leases, self.retry, self._memory)
        self._tool_step = ToolStep(self.store, clock, self._agents, self._writer, self._events, self._leases)

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
        turn, _ = self._create(agent, conversation_id, input, metadata, hold=False)
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
        turn, lease = self._create(agent, conversation_id, input, metadata, hold=True)
        if on_started is not None:
            on_started(turn)
        return self._continue(turn.id, lease=lease, should_yield=should_yield, turn=turn, created_here=True)

    def run_turn(
        self,
        turn_id: str,
        *,
        lease: Lease | None = None,
        should_yield: YieldProbe | None = None,
        turn: Turn | None = None,
        projected_version: int | None = None,
    ) -> Turn:
        """Continue a runnable turn until blocked, terminal, or ``should_yield()`` says stop.

        With ``lease`` (a worker's claim) the run writes under it; without, the runner claims one itself.
        A turn that is not runnable, or whose lease another holder has, is returned as stored. ``turn`` is
        the caller's fresh copy, to save a read (a stale one only costs a refused write, never a wrong one).
        ``projected_version`` is a receipt (from the resume message) that the timeline held that version.
        """
        return self._continue(
            turn_id,
            lease=lease,
            should_yield=should_yield,
            turn=turn,
            created_here=False,
            projected_version=projected_version,
        )

    def _continue(
        self,
        turn_id: str,
        *,
        lease: Lease | None,
        should_yield: YieldProbe | None,
        turn: Turn | None,
        created_here: bool,
        projected_version: int | None = None,
    ) -> Turn:
        if lease is None:
            lease = self.store.claim(turn_id, self.worker_id, self.lease_seconds)
            if lease is None:
                return self.store.load(turn_id)
            turn = turn or lease.turn
        try:
            current = turn if turn is not None and turn.id == turn_id else self.store.load(turn_id)
            if not current.status.is_runnable or not current.is_due(self.clock()):
                self.store.release(lease)
                return current
            if projected_version is not None and projected_version == current.version:
                mark_projected(current)
            agent = self.agent_for(current)
        except UnknownAgentError as exc:
            # Not deployed here (yet, during a rollout; or any more): try again later, a bounded number of
            # times, then end the turn FAILED so that its conversation is free again.
            return self._writer.retry_later_now(Run(turn=current, agent=None, lease=lease), "agent_unavailable", exc)
        except Exception:
            self.store.release(lease)
            raise
        run = Run(turn=current, agent=agent, lease=lease, should_yield=should_yield)
        if (
            current.status is TurnStatus.READY
            and not created_here
            and not holds(self._memory(current.conversation_id), current)
        ):
            message = "the turn does not hold its conversation (another turn does, or its start failed)"
            self._writer.finish(run, TurnStatus.FAILED, "conversation_busy", message)
            return run.turn
        return self._drive(run)

    def _drive(self, run: Run) -> Turn:
        """Step the turn while it is runnable and due, and this process still holds it."""
        try:
            while run.turn.status.is_runnable:
                if run.turn.cancel_requested:
                    self._writer.finish(run, TurnStatus.CANCELLED)
                    break
                if not run.turn.is_due(self.clock()):
                    # In the backoff of a failed attempt: the caller hands it on with the remaining delay.
                    break
                if run.should_yield is not None and run.should_yield():
                    break
                self._leases.renew(run)
                if run.turn.phase is TurnPhase.TOOLS and run.turn.pending_tool_calls:
                    self._tool_step(run)
                else:
                    run.turn.phase = TurnPhase.MODEL
                    self._model_step(run)
        except (LeaseGone, VersionConflictError):
            # Someone else wrote the turn since this process read it: keep nothing computed since.
            return self.store.load(run.turn.id)
        finally:
            if run.heartbeat is not None:
                run.heartbeat.close()
            if run.lease is not None:
                self.store.release(run.lease)
                run.lease = None
        return run.turn

    def record_failure(self, turn_id: str, error: BaseException) -> Turn:
        """Count a run of ``turn_id`` that raised ``error`` unexpectedly (a worker calls this for what it cannot
        classify as transient): the turn is tried again after a backoff, and after the last attempt it ends
        FAILED with error ``cannot_run``. A turn someone else holds, or that is not runnable, is returned as
        stored."""
        lease = self.store.claim(turn_id, self.worker_id, self.lease_seconds)
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

        def attempt() -> Turn:
            turn = self.store.load(turn_id)
            if _is_replay(turn, command):
                return turn
            resumed = apply_resume(turn, command, self.clock())
            waited = turn.suspension
            if waited is not None and waited.input_target == "MODEL" and waited.metadata.get("redactValues"):
                # A model-requested form is complete once submitted: its data lives on only in the tool result.
                redact_card(resumed, form_message_id(turn.id, waited.correlation_id))
            _remember_request(resumed, command, iso(self.clock()))
            # A lost write is decided again on what is stored now, so the loser of two submits (or of a
            # submit and a cancel) gets "not pending" rather than a bare conflict.
            saved = self._writer.write(resumed, lease=None)
            self._events.emit(saved, EventType.TURN_RESUMED, actionId=command.action_id, kind=command.kind.value)
            self._writer.project(saved)
            return saved

        return retry_on_conflict(turn_id, attempt)

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

        def attempt() -> Turn:
            turn = self.store.load(turn_id)
            if turn.status.is_terminal:
                return turn
            lease: Lease | None = None
            if turn.status.is_runnable:
                if not turn.cancel_requested:
                    self.store.request_cancel(turn_id)
                lease = self.store.claim(turn_id, self.worker_id, self.lease_seconds)
                if lease is None:
                    # A worker holds it and stops at its next step, unless it blocked the turn meanwhile:
                    # then the turn is ours to finish (next round).
                    current = self.store.load(turn_id)
                    if current.status.is_blocked:
                        raise TryAgain
                    return current
                turn = lease.turn if lease.turn is not None else self.store.load(turn_id)
            turn.cancel_requested = True
            run = Run(turn=turn, agent=None, lease=lease)
            try:
                self._writer.finish(run, TurnStatus.CANCELLED)
            finally:
                if run.lease is not None:
                    self.store.release(run.lease)
            return run.turn

        return retry_on_conflict(turn_id, attempt)

    def expire(self, turn_id: str) -> Turn:
        """Act on a blocked turn that is due (what the sweeper calls; harmless if it is not due).

        A turn carrying the cancel flag ends CANCELLED (a cancel whose process died before it finished). A
        wait whose input timeout has passed is closed: the pending call gets an "expired" result and the
        turn is saved runnable for a worker, or — when the wait was set to cancel on expiry, or is a
        plain-text wait with no call to answer — it ends CANCELLED.
        """
        return self._settle(turn_id, expire_waits=True)

    def _settle(self, turn_id: str, *, expire_waits: bool) -> Turn:
        def attempt() -> Turn:
            turn = self.store.load(turn_id)
            suspension = turn.suspension
            if not turn.status.is_blocked or suspension is None:
                return turn
            run = Run(turn=turn, agent=None, lease=None)
            if turn.cancel_requested:
                self._writer.finish(run, TurnStatus.CANCELLED)
                return run.turn
            if not expire_waits or not suspension.is_expired(self.clock()):
                return turn
            answerable = suspension.is_form or suspension.type is SuspensionType.TOOL_APPROVAL
            if suspension.on_expiry == "cancel" or not answerable:
                self._writer.finish(run, TurnStatus.CANCELLED, "input_expired", "nobody answered in time")
                return run.turn
            run.turn = expire_wait(turn, self.clock())
            self._writer.save(run)
            self._events.emit(run.turn, EventType.TURN_RESUMED, actionId=suspension.correlation_id, kind="EXPIRED")
            return run.turn

        return retry_on_conflict(turn_id, attempt)

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

    def repair_timeline(self, conversation_id: str, visible: Iterable[TimelineMessage] = ()) -> bool:
        """Make the conversation's timeline whole again if the projection of its active turn was lost.

        ``visible`` is what the caller just read of the timeline. Only a turn whose pending card is missing
        from it, or a finished turn still holding the conversation (its last projection failed), is
        re-projected — so a healthy timeline costs one read of the snapshot, no write. Returns whether it
        wrote anything.
        """
        memory = self._memory(conversation_id)
        active = memory.get_active_turn() if memory is not None else None
        if memory is None or active is None:
            return False
        try:
            turn = self.store.load(active)
        except (TurnNotFoundError, SnapshotUnreadableError):
            # Nothing to re-project from a snapshot that cannot be read (its attempts end it, freeing this).
            return False
        shown = {message.message_id for message in visible}
        missing_card = any(card.message_id not in shown for card in turn.pending_cards())
        if not (missing_card or turn.status.is_terminal):
            return False
        project(turn, memory)
        if turn.status.is_terminal:
            memory.set_active_turn(None, expected=turn.id)
        return True

    def restore(self, turn_id: str) -> Turn:
        """The stored turn, read-only."""
        return self.store.load(turn_id)

    # ------------------------------------------------------------------ creation

    def _memory(self, conversation_id: str) -> ChatMemory | None:
        return self.chat_memory(conversation_id) if self.chat_memory is not None else None

    def _create(
        self, agent: Agent, conversation_id: str, input: str, metadata: Mapping[str, Any] | None, *, hold: bool
    ) -> tuple[Turn, Lease | None]:
        """The stored turn, holding its conversation; with ``hold`` also leased to this runner.

        A held turn runs on at once, so its timeline is written by its first save, not here.
        """
        if not conversation_id:
            raise ValueError("conversation_id must be non-empty")
        memory = self._memory(conversation_id)
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
        if memory is not None:
            self._conversations.take(memory, turn)
        self._events.emit(turn, EventType.SNAPSHOT_SAVED, version=turn.version)
        self._events.emit(turn, EventType.TURN_STARTED, agentId=agent.id, conversationId=conversation_id)
        if not hold:
            self._writer.project(turn)
        return turn, lease


def _is_replay(turn: Turn, command: ResumeCommand) -> bool:
    """Same request id and same request: already applied, answer as the first time. Different: refuse."""
    request_id = command.request_id
    accepted = turn.accepted_requests.get(request_id) if request_id else None
    if accepted is None or request_id is None:
        return False
    if accepted.fingerprint != command.fingerprint():
        raise IdempotencyConflictError(turn.id, request_id)
    return True


def _remember_request(turn: Turn, command: ResumeCommand, now_iso: str) -> None:
    request_id = command.request_id
    if request_id is None:
        return
    turn.accepted_requests[request_id] = AcceptedRequest(
        fingerprint=command.fingerprint(), action_id=command.action_id, version=turn.version + 1, accepted_at=now_iso
    )
    while len(turn.accepted_requests) > MAX_ACCEPTED_REQUESTS:
        turn.accepted_requests.pop(next(iter(turn.accepted_requests)))
