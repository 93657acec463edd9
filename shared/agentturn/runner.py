"""The Runner: moves a turn through model and tool calls, stops it durably for a person, resumes it."""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from pydantic_core import to_jsonable_python

from agentturn import tool_results
from agentturn._clock import Clock, Waiter, iso, real_wait
from agentturn.agent import Agent, ApprovalVerdict, ExecutionPolicy, ToolApprovalDecision
from agentturn.chat import ChatRequest
from agentturn.commands import ResumeCommand
from agentturn.errors import (
    ConversationBusyError,
    IdempotencyConflictError,
    InvalidResumeError,
    LeaseLostError,
    ModelError,
    SnapshotUnreadableError,
    ToolProtocolError,
    TurnNotFoundError,
    UnknownAgentError,
    VersionConflictError,
)
from agentturn.events import Event, EventType, Listener, dispatch
from agentturn.forms import REQUEST_USER_INPUT, FormDefinition, FormRequired
from agentturn.heartbeat import Heartbeat
from agentturn.memory import ChatMemory, ChatMemoryProvider
from agentturn.messages import (
    AiMessage,
    ApprovalMessage,
    FormMessage,
    ModelMessage,
    TimelineMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    approval_message_id,
    form_message_id,
)
from agentturn.projection import card_sort_key, is_projected, mark_projected, project, stamp
from agentturn.resume import apply_resume, cancel_cards, expire_wait
from agentturn.retry import RetryPolicy
from agentturn.state import (
    MAX_ACCEPTED_REQUESTS,
    AcceptedRequest,
    RetryState,
    Suspension,
    SuspensionType,
    Turn,
    TurnErrorInfo,
    TurnPhase,
    TurnStatus,
)
from agentturn.store import SNAPSHOT_UNREADABLE, InMemoryTurnStore, Lease, TurnStore, new_lease_id
from agentturn.tools import Tool, ToolContext, tool_context

_log = logging.getLogger("agentturn.runner")

AgentResolver = Callable[[str, str], Agent]
YieldProbe = Callable[[], bool]

_TERMINAL_EVENTS = {
    TurnStatus.COMPLETED: EventType.TURN_COMPLETED,
    TurnStatus.CANCELLED: EventType.TURN_CANCELLED,
}
_CONFLICT_RETRIES = 5
_SEQUENCE_RESERVE = 32
_SEQUENCE_CACHE = 1024


@dataclass(frozen=True)
class UnreadableAttempt:
    """What :meth:`Runner.record_unreadable` did with a turn whose snapshot cannot be read."""

    turn_id: str
    #: this attempt was written (``False``: not due yet, already ended, or someone else counted it first)
    counted: bool
    #: the turn ended FAILED with this attempt
    failed: bool
    #: seconds until the next attempt is due (hand the turn on with this delay); 0 when there is none
    retry_in: float = 0.0


class _LeaseGone(Exception):
    """Another holder owns the turn now: stop without keeping anything computed since the last save."""


@dataclass
class _Run:
    """One stretch of work on a turn in this process."""

    turn: Turn
    agent: Agent | None
    lease: Lease | None
    should_yield: YieldProbe | None = None
    #: renews the lease during steps; one per run, ended with it
    heartbeat: Heartbeat | None = None


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
        self._agents: dict[tuple[str, str], Agent] = {}
        self._sequences: dict[str, int] = {}
        self._sequence_lock = threading.Lock()
        self._resolver: AgentResolver | None = None
        if callable(agents):
            self._resolver = agents
        else:
            for agent in agents or ():
                self.register(agent)

    # ------------------------------------------------------------------ agents

    def register(self, agent: Agent) -> None:
        """Make ``agent`` the one that continues turns of its id and version (same id + version = same agent)."""
        self._agents[(agent.id, agent.version)] = agent

    def agent_for(self, turn: Turn) -> Agent:
        """The exact agent version that started the turn; never a silent fallback to another version."""
        agent = self._agents.get((turn.agent_id, turn.agent_version))
        if agent is None and self._resolver is not None:
            agent = self._resolver(turn.agent_id, turn.agent_version)
        if agent is None or agent.id != turn.agent_id or agent.version != turn.agent_version:
            raise UnknownAgentError(turn.agent_id, turn.agent_version)
        return agent

    # ------------------------------------------------------------------ public API

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
            return self._retry_later_now(_Run(turn=current, agent=None, lease=lease), "agent_unavailable", exc)
        except Exception:
            self.store.release(lease)
            raise
        run = _Run(turn=current, agent=agent, lease=lease, should_yield=should_yield)
        if current.status is TurnStatus.READY and not created_here and not self._holds_conversation(run):
            message = "the turn does not hold its conversation (another turn does, or its start failed)"
            self._finish(run, TurnStatus.FAILED, "conversation_busy", message)
            return run.turn
        return self._drive(run)

    def record_failure(self, turn_id: str, error: BaseException) -> Turn:
        """Count a run of ``turn_id`` that raised ``error`` unexpectedly (a worker calls this for what it cannot
        classify as transient): the turn is tried again after a backoff, and after the last attempt it ends
        FAILED with error ``cannot_run``. A turn someone else holds, or that is not runnable, is returned as
        stored."""
        lease = self.store.claim(turn_id, self.worker_id, self.lease_seconds)
        if lease is None:
            return self.store.load(turn_id)
        turn = lease.turn if lease.turn is not None else self.store.load(turn_id)
        return self._retry_later_now(_Run(turn=turn, agent=None, lease=lease), "cannot_run", error)

    def record_unreadable(self, error: SnapshotUnreadableError, *, at_once: bool = False) -> UnreadableAttempt:
        """Count an attempt on a turn whose stored snapshot cannot be read (``error`` says what the store knows
        of it besides the body): like any turn that cannot run, it is tried again after a backoff, and after
        the last attempt it ends FAILED with error ``snapshot_unreadable`` and its conversation is free again.
        ``at_once`` ends it with this attempt (a person asked to cancel it: there is nothing to wait for).

        Nothing here reads the body: the store counts and ends the turn on the item's own attributes.
        """
        turn_id, now = error.turn_id, self.clock()
        status = _stored_status(error)
        if status is None or status.is_terminal:
            return UnreadableAttempt(turn_id, counted=False, failed=status is TurnStatus.FAILED)
        if not at_once and error.not_before is not None and error.not_before > now:
            # A duplicate message or an early sweep: the attempt that set this backoff handed the turn on.
            return UnreadableAttempt(turn_id, counted=False, failed=False, retry_in=error.not_before - now)
        attempt = error.attempts + 1
        _log.error("turn %r cannot be read (attempt %d of %d): %s", turn_id, attempt, self.retry.max_attempts, error)
        if attempt < self.retry.max_attempts and not at_once:
            delay = self.retry.delay(turn_id, attempt)
            counted = self.store.mark_unreadable(
                turn_id, version=error.version, attempts=attempt, fail=False, not_before=now + delay
            )
            if counted:
                self._emit_for(
                    turn_id,
                    0,
                    EventType.RETRY_SCHEDULED,
                    reason=SNAPSHOT_UNREADABLE,
                    attempt=attempt,
                    maxAttempts=self.retry.max_attempts,
                    delaySeconds=round(delay, 3),
                    error=error.detail,
                )
            return UnreadableAttempt(turn_id, counted=counted, failed=False, retry_in=delay if counted else 0.0)
        # The agent's own retention is in the body that cannot be read: the default policy's applies.
        retention = ExecutionPolicy().retention
        ended = self.store.mark_unreadable(
            turn_id,
            version=error.version,
            attempts=attempt,
            fail=True,
            message=f"{error} (gave up after {attempt} attempts)",
            retain_until=now + retention if retention is not None else None,
        )
        if not ended:
            return UnreadableAttempt(turn_id, counted=False, failed=False)
        # Told first: should letting go of the conversation fail, the next start in it still takes over (it
        # finds this turn ended), but nothing would tell the alarm about this one again.
        self._emit_for(turn_id, 0, EventType.TURN_FAILED, status=TurnStatus.FAILED.value, error=SNAPSHOT_UNREADABLE)
        memory = self._memory(error.conversation_id) if error.conversation_id else None
        if memory is not None:
            # Its timeline cannot be made whole from a body nobody can read: the conversation is let go as is.
            memory.set_active_turn(None, expected=turn_id)
        return UnreadableAttempt(turn_id, counted=True, failed=True)

    def _retry_later_now(self, run: _Run, reason: str, error: BaseException) -> Turn:
        """:meth:`_retry_later` outside the loop: under the run's lease, released after."""
        try:
            self._retry_later(run, reason, f"{type(error).__name__}: {error}")
        except (_LeaseGone, VersionConflictError):
            return self.store.load(run.turn.id)
        finally:
            if run.lease is not None:
                self.store.release(run.lease)
                run.lease = None
        return run.turn

    def submit_resume(self, turn_id: str, command: ResumeCommand) -> Turn:
        """Validate and apply ``command``, save the turn as runnable RUNNING; run nothing (a worker will).

        With metadata ``requestId`` the call is idempotent: a retry with the same request returns the turn
        without applying anything again (``turn.accepted_requests[request_id]`` holds the first answer); the
        same id with a different request raises ``IdempotencyConflictError``.
        """
        for _ in range(_CONFLICT_RETRIES):
            turn = self.store.load(turn_id)
            if _is_replay(turn, command):
                return turn
            resumed = apply_resume(turn, command, self.clock())
            waited = turn.suspension
            if waited is not None and waited.input_target == "MODEL" and waited.metadata.get("redactValues"):
                # A model-requested form is complete once submitted: its data lives on only in the tool result.
                _redact_card(resumed, form_message_id(turn.id, waited.correlation_id))
            _remember_request(resumed, command, iso(self.clock()))
            try:
                saved = self._write(resumed, lease=None)
            except VersionConflictError:
                # Somebody else wrote first (a concurrent submit or a cancel): decide again on what is
                # stored now, so the loser gets "not pending" rather than a bare conflict.
                continue
            self._emit(saved, EventType.TURN_RESUMED, actionId=command.action_id, kind=command.kind.value)
            self._project(saved)
            return saved
        raise VersionConflictError(turn_id, None)

    def resume(self, turn_id: str, command: ResumeCommand) -> Turn:
        """Apply ``command`` and continue the turn in this thread."""
        self.submit_resume(turn_id, command)
        return self.run_turn(turn_id)

    def suspend(self, turn: Turn, suspension: Suspension) -> Turn:
        """Put a plain-text wait point on a turn that is not running elsewhere."""
        current = self.store.load(turn.id)
        if current.status.is_terminal or current.status.is_blocked:
            raise InvalidResumeError(f"turn {turn.id!r} is {current.status.value}", reason="not_suspendable")
        if suspension.type is not SuspensionType.USER_INPUT or suspension.is_form:
            raise ValueError("Runner.suspend takes a plain-text Suspension.user_input(message)")
        current.status = TurnStatus.WAITING_FOR_USER
        current.suspension = suspension
        saved = self._write(current, lease=None)
        self._emit(saved, EventType.TURN_SUSPENDED, type=suspension.type.value, actionId=suspension.correlation_id)
        return saved

    def cancel(self, turn_id: str) -> Turn:
        """Cancel a turn: one not running elsewhere ends CANCELLED now, a running one at its next step.

        Safe to call again after any failure: each call finishes what an earlier one started. A blocked turn
        ends in one write that carries the flag and the status together (a failed write changed nothing); a
        runnable one gets the flag first (its worker stops on it), then is finished here if nobody holds it.
        """
        for _ in range(_CONFLICT_RETRIES):
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
                        continue
                    return current
                turn = lease.turn if lease.turn is not None else self.store.load(turn_id)
            turn.cancel_requested = True
            run = _Run(turn=turn, agent=None, lease=lease)
            try:
                self._finish(run, TurnStatus.CANCELLED)
            except VersionConflictError:
                continue
            finally:
                if run.lease is not None:
                    self.store.release(run.lease)
            return run.turn
        raise VersionConflictError(turn_id, None)

    def expire(self, turn_id: str) -> Turn:
        """Act on a blocked turn that is due (what the sweeper calls; harmless if it is not due).

        A turn carrying the cancel flag ends CANCELLED (a cancel whose process died before it finished). A
        wait whose input timeout has passed is closed: the pending call gets an "expired" result and the
        turn is saved runnable for a worker, or — when the wait was set to cancel on expiry, or is a
        plain-text wait with no call to answer — it ends CANCELLED.
        """
        return self._settle(turn_id, expire_waits=True)

    def _settle(self, turn_id: str, *, expire_waits: bool) -> Turn:
        for _ in range(_CONFLICT_RETRIES):
            turn = self.store.load(turn_id)
            suspension = turn.suspension
            if not turn.status.is_blocked or suspension is None:
                return turn
            run = _Run(turn=turn, agent=None, lease=None)
            if turn.cancel_requested:
                try:
                    self._finish(run, TurnStatus.CANCELLED)
                except VersionConflictError:
                    continue
                return run.turn
            if not expire_waits or not suspension.is_expired(self.clock()):
                return turn
            answerable = suspension.is_form or suspension.type is SuspensionType.TOOL_APPROVAL
            try:
                if suspension.on_expiry == "cancel" or not answerable:
                    self._finish(run, TurnStatus.CANCELLED, "input_expired", "nobody answered in time")
                    return run.turn
                run.turn = expire_wait(turn, self.clock())
                self._save(run)
            except VersionConflictError:
                continue
            self._emit(run.turn, EventType.TURN_RESUMED, actionId=suspension.correlation_id, kind="EXPIRED")
            return run.turn
        raise VersionConflictError(turn_id, None)

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
        self._reserve_sequences(turn)
        lease = Lease(turn.id, self.worker_id, new_lease_id(), now + self.lease_seconds) if hold else None
        turn = self.store.create(turn, lease=lease)
        if memory is not None:
            self._take_conversation(memory, turn)
        self._emit(turn, EventType.SNAPSHOT_SAVED, version=turn.version)
        self._emit(turn, EventType.TURN_STARTED, agentId=agent.id, conversationId=conversation_id)
        if not hold:
            self._project(turn)
        return turn, lease

    def _holds_conversation(self, run: _Run) -> bool:
        """A READY turn that a worker picked up may only start if it took its conversation when it was made.

        One that never did (its start crashed between the two writes) is never started later, not even in a
        conversation that has become free: its caller was answered with an error and may well have retried,
        and the retry's turn has then already done what this one would do again (a second ticket, refund...).
        """
        memory = self._memory(run.turn.conversation_id)
        if memory is None:
            return True
        return memory.get_active_turn() == run.turn.id

    def _take_conversation(self, memory: ChatMemory, turn: Turn) -> None:
        """Make ``turn`` the conversation's active turn, or remove it and raise ConversationBusyError.

        Optimistic: a free conversation (the common case: the previous turn ended and let go) costs one
        conditional write. The turn exists before it takes the conversation, so whoever finds it named
        there can load it; one that crashes in between is refused by the worker (``_holds_conversation``).
        """
        if memory.set_active_turn(turn.id, expected=None):
            return
        previous = memory.get_active_turn()
        if previous is None:
            taken = memory.set_active_turn(turn.id, expected=None)
        else:
            taken = self._previous_finished(memory, previous) and memory.set_active_turn(turn.id, expected=previous)
        if not taken:
            # Lost the conversation: leave no trace of this turn.
            self.store.delete(turn.id, expected_version=turn.version)
            raise ConversationBusyError(memory.conversation_id, previous)

    def _previous_finished(self, memory: ChatMemory, previous_id: str) -> bool:
        """Whether the turn named in the conversation has ended (then its timeline is made whole first)."""
        try:
            previous = self.store.load(previous_id)
        except TurnNotFoundError:
            return True
        except SnapshotUnreadableError as exc:
            # Ended (FAILED after its attempts) or not; either way there is no timeline to make whole from it.
            status = _stored_status(exc)
            return status is not None and status.is_terminal
        if not previous.status.is_terminal:
            return False
        project(previous, memory)
        return True

    # ------------------------------------------------------------------ the loop

    def _drive(self, run: _Run) -> Turn:
        try:
            while run.turn.status.is_runnable:
                if run.turn.cancel_requested:
                    self._finish(run, TurnStatus.CANCELLED)
                    break
                if not run.turn.is_due(self.clock()):
                    # In the backoff of a failed attempt: the caller hands it on with the remaining delay.
                    break
                if run.should_yield is not None and run.should_yield():
                    break
                self._renew(run)
                if run.turn.phase is TurnPhase.TOOLS and run.turn.pending_tool_calls:
                    self._tool_step(run)
                else:
                    run.turn.phase = TurnPhase.MODEL
                    self._model_step(run)
        except (_LeaseGone, VersionConflictError):
            # Someone else wrote the turn since this process read it: keep nothing computed since.
            return self.store.load(run.turn.id)
        finally:
            if run.heartbeat is not None:
                run.heartbeat.close()
            if run.lease is not None:
                self.store.release(run.lease)
                run.lease = None
        return run.turn

    def _renew(self, run: _Run) -> None:
        lease = run.lease
        if lease is None:
            return
        if lease.expires_at - self.clock() < self.lease_seconds / 2:
            try:
                run.lease = self.store.renew(lease, self.lease_seconds)
            except LeaseLostError as exc:
                run.lease = None
                raise _LeaseGone from exc

    @contextmanager
    def _heartbeat(self, run: _Run) -> Iterator[None]:
        """Keep the run's lease alive while the body (a model call, a tool) runs; raise ``_LeaseGone`` after
        it if the lease was taken over meanwhile, so that nothing the step produced is kept or acted on."""
        lease = run.lease
        if lease is None:
            yield
            return
        if run.heartbeat is None:
            run.heartbeat = Heartbeat(
                lambda held: self.store.renew(held, self.lease_seconds),
                self.lease_seconds / 3,
                wait=self.wait,
                name=lease.turn_id[:12],
            )
        beat = run.heartbeat
        try:
            with beat.step(lease):
                yield
        finally:
            run.lease = None if beat.lost else beat.lease
        if beat.lost:
            raise _LeaseGone

    def _policy(self, run: _Run) -> ExecutionPolicy:
        """The agent's policy; the defaults for a turn whose agent this process does not know (a cancel)."""
        try:
            return self._agent(run).policy
        except UnknownAgentError:
            return ExecutionPolicy()

    def _agent(self, run: _Run) -> Agent:
        if run.agent is None:
            run.agent = self.agent_for(run.turn)
        return run.agent

    def _context(self, run: _Run) -> list[ModelMessage]:
        turn = run.turn
        window = self._agent(run).policy.context_window
        memory = self._memory(turn.conversation_id)
        history: list[ModelMessage] = []
        if memory is not None and window > 0:
            fetched = memory.get_model_messages(window + turn.projection.messages)
            history = [m for m in fetched if m.turn_id != turn.id][-window:]
            # A window must not open on a tool result or a dangling tool call: start at a user message.
            while history and not isinstance(history[0], UserMessage):
                history.pop(0)
        return [*history, *turn.messages]

    def _model_step(self, run: _Run) -> None:
        agent = self._agent(run)
        turn = run.turn
        if turn.iteration_count >= agent.policy.max_iterations:
            self._finish(run, TurnStatus.MAX_ITERATIONS_REACHED, "max_iterations", "model call limit reached")
            return
        if turn.step_count >= agent.policy.max_steps:
            self._finish(run, TurnStatus.MAX_STEPS_REACHED, "max_steps", "step limit reached")
            return
        self._emit(turn, EventType.STEP_STARTED, kind="MODEL", step=turn.step_count + 1)
        request = ChatRequest(system=agent.instructions, messages=self._context(run), tools=agent.tool_specs())
        self._emit(turn, EventType.MODEL_STARTED, messages=len(request.messages))
        try:
            with self._heartbeat(run):
                reply = agent.chat_model.chat(request)
        except _LeaseGone:
            raise
        except Exception as exc:
            self._model_failed(run, exc)
            return
        turn.retry = None
        reply = _unique_call_ids(turn, reply)
        self._emit(turn, EventType.MODEL_COMPLETED, toolCalls=[c.name for c in reply.tool_calls])
        turn.iteration_count += 1
        turn.step_count += 1
        turn.status = TurnStatus.RUNNING
        turn.messages.append(stamp(turn, reply))
        if reply.tool_calls:
            turn.pending_tool_calls = list(reply.tool_calls)
            turn.phase = TurnPhase.TOOLS
            self._save(run)
            self._emit(run.turn, EventType.STEP_COMPLETED, kind="MODEL", ok=True)
            return
        turn.final_output = reply.content
        self._emit(turn, EventType.STEP_COMPLETED, kind="MODEL", ok=True)
        self._finish(run, TurnStatus.COMPLETED)

    def _model_failed(self, run: _Run, exc: Exception) -> None:
        """A retryable model error (throttled, 5xx, timeout, connection) keeps the turn runnable with a
        backoff, for a bounded number of attempts; anything else fails the turn at once."""
        turn = run.turn
        retryable = isinstance(exc, ModelError) and exc.retryable
        kind = exc.kind.value if isinstance(exc, ModelError) else "unexpected"
        message = f"{type(exc).__name__}: {exc}"
        attempt = (turn.retry.attempts if turn.retry is not None else 0) + 1
        if retryable:
            _log.warning("model of turn %r failed (%s, attempt %d): %s", turn.id, kind, attempt, message)
        else:
            _log.exception("model of agent %r failed on turn %r", turn.agent_id, turn.id)
        self._emit(
            turn,
            EventType.MODEL_FAILED,
            kind=kind,
            retryable=retryable,
            attempt=attempt,
            maxAttempts=self.retry.max_attempts,
            error=message,
        )
        self._emit(turn, EventType.STEP_COMPLETED, kind="MODEL", ok=False)
        if not retryable:
            self._finish(run, TurnStatus.FAILED, "model_error", message)
            return
        at_least = exc.retry_after if isinstance(exc, ModelError) else None
        self._retry_later(run, "model_error", message, at_least=at_least, exhausted="model_retries_exhausted")

    def _retry_later(
        self, run: _Run, reason: str, message: str, *, at_least: float | None = None, exhausted: str | None = None
    ) -> None:
        """Save the turn runnable, due after a backoff; after the last allowed attempt, end it FAILED."""
        turn = run.turn
        attempt = (turn.retry.attempts if turn.retry is not None else 0) + 1
        if attempt >= self.retry.max_attempts:
            self._finish(run, TurnStatus.FAILED, exhausted or reason, f"{message} (gave up after {attempt} attempts)")
            return
        delay = self.retry.delay(turn.id, attempt, at_least)
        turn.retry = RetryState(attempts=attempt, reason=reason, error=message, not_before=self.clock() + delay)
        turn.status = TurnStatus.RUNNING
        self._save(run)
        self._emit(
            run.turn,
            EventType.RETRY_SCHEDULED,
            reason=reason,
            attempt=attempt,
            maxAttempts=self.retry.max_attempts,
            delaySeconds=round(delay, 3),
            error=message,
        )

    def _tool_step(self, run: _Run) -> None:
        agent = self._agent(run)
        turn = run.turn
        call = turn.pending_tool_calls[0]
        if turn.step_count >= agent.policy.max_steps:
            self._finish(run, TurnStatus.MAX_STEPS_REACHED, "max_steps", "step limit reached")
            return
        tool = agent.tools.get(call.name)
        user_input_tool = agent.user_input_tool
        if call.name == REQUEST_USER_INPUT and user_input_tool is not None:
            self._begin_tool_step(turn, call)
            form_key = call.arguments.get("formKey")
            form = user_input_tool.form(form_key) if isinstance(form_key, str) else None
            if form is None:
                self._complete_call(run, call, tool_results.unknown_form_key(form_key, sorted(user_input_tool.forms)))
                return
            self._emit(
                turn,
                EventType.TOOL_INPUT_REQUESTED,
                toolCallId=call.id,
                formKey=form.form_key,
                target="MODEL",
            )
            self._suspend_for_form(run, call, form, "MODEL")
            return
        if tool is None:
            self._begin_tool_step(turn, call)
            self._complete_call(run, call, tool_results.unknown_tool(call.name, sorted(agent.tools)))
            return
        state = turn.tool_state(call.id)
        if not state.approved and agent.approval_policy is not None:
            decision = self._decide(run, call, tool)
            if decision is None:
                return
            if decision.verdict is ApprovalVerdict.DENY:
                self._begin_tool_step(turn, call)
                self._emit(turn, EventType.TOOL_REJECTED, toolCallId=call.id, toolName=call.name, by="policy")
                self._complete_call(run, call, tool_results.denied(call.name, decision.message))
                return
            if decision.verdict is ApprovalVerdict.REQUIRE_APPROVAL:
                self._begin_tool_step(turn, call)
                self._suspend_for_approval(run, call, decision)
                return
        if not state.counted:
            if turn.tool_call_count >= agent.policy.max_tool_calls:
                self._finish(run, TurnStatus.BUDGET_EXCEEDED, "max_tool_calls", "tool call budget exhausted")
                return
            state.counted = True
            turn.tool_call_count += 1
        self._begin_tool_step(turn, call)
        self._execute(run, call, tool)

    def _begin_tool_step(self, turn: Turn, call: ToolCall) -> None:
        turn.step_count += 1
        turn.status = TurnStatus.RUNNING
        self._emit(turn, EventType.STEP_STARTED, kind="TOOL", step=turn.step_count, toolName=call.name)

    def _decide(self, run: _Run, call: ToolCall, tool: Tool) -> ToolApprovalDecision | None:
        policy = self._agent(run).approval_policy
        assert policy is not None
        try:
            decision = policy(run.turn, call, tool)
        except Exception as exc:
            _log.exception("approval policy failed for %r on turn %r", call.name, run.turn.id)
            self._finish(run, TurnStatus.FAILED, "approval_policy_error", f"{type(exc).__name__}: {exc}")
            return None
        if not isinstance(decision, ToolApprovalDecision):
            self._finish(run, TurnStatus.FAILED, "approval_policy_error", "policy must return ToolApprovalDecision")
            return None
        return decision

    def _execute(self, run: _Run, call: ToolCall, tool: Tool) -> None:
        turn = run.turn
        state = turn.tool_state(call.id)
        replay = state.submitted_form_data is not None
        self._emit(turn, EventType.TOOL_STARTED, toolCallId=call.id, toolName=call.name, replay=replay)
        context = ToolContext(
            turn_id=turn.id,
            tool_call_id=call.id,
            tool_call=call.model_copy(deep=True),
            submitted_form_data=dict(state.submitted_form_data or {}),
            form_submitted=replay,
            _progress=lambda stage, data: self._emit(
                turn, EventType.TOOL_PROGRESS, toolCallId=call.id, stage=stage, data=dict(data or {})
            ),
            _cancel_probe=lambda: self._cancel_requested(turn.id),
        )
        try:
            with tool_context(context), self._heartbeat(run):
                result = tool.function(dict(call.arguments))
        except _LeaseGone:
            raise
        except FormRequired as signal:
            if replay or state.form_requested:
                error = ToolProtocolError(
                    f"tool {call.name!r} raised FormRequired again after the form was submitted",
                    tool=call.name,
                    form_key=signal.form.form_key,
                )
                self._emit(turn, EventType.TOOL_FAILED, toolCallId=call.id, toolName=call.name, error=str(error))
                self._emit(turn, EventType.STEP_COMPLETED, kind="TOOL", ok=False)
                self._finish(run, TurnStatus.FAILED, "form_required_again", str(error))
                return
            state.form_requested = True
            self._emit(
                turn,
                EventType.TOOL_INPUT_REQUESTED,
                toolCallId=call.id,
                formKey=signal.form.form_key,
                target="TOOL",
            )
            self._suspend_for_form(run, call, signal.form, "TOOL")
            return
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
            self._emit(turn, EventType.TOOL_FAILED, toolCallId=call.id, toolName=call.name, error=message)
            if self._agent(run).policy.on_tool_error == "fail_turn":
                self._emit(turn, EventType.STEP_COMPLETED, kind="TOOL", ok=False)
                self._finish(run, TurnStatus.FAILED, "tool_error", message)
                return
            self._complete_call(run, call, tool_results.tool_failed(message))
            return
        content = _jsonable(result)
        self._emit(turn, EventType.TOOL_COMPLETED, toolCallId=call.id, toolName=call.name)
        self._complete_call(run, call, content)

    def _complete_call(self, run: _Run, call: ToolCall, content: Any) -> None:
        """The call's ToolMessage, then a snapshot: one boundary per tool result."""
        turn = run.turn
        turn.pending_tool_calls = [c for c in turn.pending_tool_calls if c.id != call.id]
        state = turn.tool_states.get(call.id)
        if state is not None and state.submitted_form_data is not None:
            # Invariant 8: the submitted form data lived only for the tool that needed it.
            state.submitted_form_data = None
            if self._policy(run).redact_submitted_values:
                _redact_card(turn, form_message_id(turn.id, call.id))
        turn.messages.append(stamp(turn, ToolMessage(tool_call_id=call.id, content=content, tool_name=call.name)))
        if not turn.pending_tool_calls:
            turn.phase = TurnPhase.MODEL
        self._save(run)
        self._emit(run.turn, EventType.STEP_COMPLETED, kind="TOOL", ok=True, toolName=call.name)

    # ------------------------------------------------------------------ suspension

    def _wait_terms(self, run: _Run) -> tuple[str | None, dict[str, Any]]:
        """(deadline as ISO, terms frozen in the suspension) of a new wait, from the turn or the agent's policy."""
        policy = self._agent(run).policy
        timeout = run.turn.input_timeout if run.turn.input_timeout is not None else policy.input_timeout
        deadline = self.clock() + timeout if timeout is not None else None
        terms: dict[str, Any] = {"on_expiry": policy.on_input_timeout, "expires_at": deadline}
        return (iso(deadline) if deadline is not None else None), terms

    def _suspend_for_form(self, run: _Run, call: ToolCall, form: FormDefinition, target: str) -> None:
        turn = run.turn
        schema = form.schema
        deadline_iso, terms = self._wait_terms(run)
        turn.status = TurnStatus.WAITING_FOR_USER
        turn.phase = TurnPhase.TOOLS
        turn.suspension = Suspension(
            type=SuspensionType.USER_INPUT,
            correlation_id=call.id,
            message=form.description,
            resume_phase=TurnPhase.MODEL if target == "MODEL" else TurnPhase.TOOLS,
            metadata={
                "formKey": form.form_key,
                "schema": schema,
                "toolName": call.name,
                "inputTarget": target,
                "redactValues": self._agent(run).policy.redact_submitted_values,
            },
            **terms,
        )
        turn.cards.append(
            FormMessage(
                message_id=form_message_id(turn.id, call.id),
                turn_id=turn.id,
                sort_key=card_sort_key(turn, call.id),
                action_id=call.id,
                form_key=form.form_key,
                description=form.description,
                schema=schema,
                input_target="MODEL" if target == "MODEL" else "TOOL",
                tool_name=call.name,
                expires_at=deadline_iso,
            )
        )
        self._suspended(run, call)

    def _suspend_for_approval(self, run: _Run, call: ToolCall, decision: ToolApprovalDecision) -> None:
        turn = run.turn
        _, terms = self._wait_terms(run)
        turn.status = TurnStatus.WAITING_FOR_APPROVAL
        turn.phase = TurnPhase.TOOLS
        turn.suspension = Suspension(
            type=SuspensionType.TOOL_APPROVAL,
            correlation_id=call.id,
            message=decision.message,
            resume_phase=TurnPhase.TOOLS,
            metadata={"toolName": call.name, "arguments": dict(call.arguments)},
            **terms,
        )
        turn.cards.append(
            ApprovalMessage(
                message_id=approval_message_id(turn.id, call.id),
                turn_id=turn.id,
                sort_key=card_sort_key(turn, call.id),
                action_id=call.id,
                tool_name=call.name,
                arguments=dict(call.arguments),
                message=decision.message,
            )
        )
        self._emit(turn, EventType.TOOL_APPROVAL_REQUESTED, toolCallId=call.id, toolName=call.name)
        self._suspended(run, call)

    def _suspended(self, run: _Run, call: ToolCall) -> None:
        self._save(run)
        turn = run.turn
        assert turn.suspension is not None
        if turn.cancel_requested:
            # Cancelled while this step ran (the save came back carrying the flag): nobody may answer a
            # turn that is being cancelled, so it ends now rather than waiting with a live card.
            self._emit(turn, EventType.STEP_COMPLETED, kind="TOOL", ok=True, toolName=call.name, suspended=True)
            self._finish(run, TurnStatus.CANCELLED)
            return
        self._emit(turn, EventType.STEP_COMPLETED, kind="TOOL", ok=True, toolName=call.name, suspended=True)
        self._emit(
            turn,
            EventType.TURN_SUSPENDED,
            type=turn.suspension.type.value,
            actionId=turn.suspension.correlation_id,
            formKey=turn.suspension.metadata.get("formKey"),
        )

    # ------------------------------------------------------------------ endings and writes

    def _finish(self, run: _Run, status: TurnStatus, error_type: str | None = None, message: str = "") -> None:
        turn = run.turn
        turn.status = status
        turn.phase = TurnPhase.FINISHED
        turn.suspension = None
        if error_type is not None:
            turn.error = TurnErrorInfo(type=error_type, message=message)
        cancel_cards(turn)
        for state in turn.tool_states.values():
            state.submitted_form_data = None
        retention = self._policy(run).retention
        turn.retain_until = self.clock() + retention if retention is not None else None
        self._save(run)
        memory = self._memory(turn.conversation_id)
        if memory is not None and is_projected(run.turn):
            # Let go of the conversation only once its timeline is whole: a turn still named there is
            # repaired by whoever comes next (the next turn's start, or a read of the timeline).
            memory.set_active_turn(None, expected=turn.id)
        event = _TERMINAL_EVENTS.get(status, EventType.TURN_FAILED)
        self._emit(run.turn, event, status=status.value, error=error_type)

    def _save(self, run: _Run) -> None:
        try:
            run.turn = self._write(run.turn, lease=run.lease)
        except LeaseLostError as exc:
            run.lease = None
            raise _LeaseGone from exc
        if not run.turn.status.is_runnable:
            run.lease = None  # the store ended the lease with this write
        self._project(run.turn)

    def _write(self, turn: Turn, *, lease: Lease | None) -> Turn:
        turn.updated_at = iso(self.clock())
        _forget_projected_values(turn)
        self._reserve_sequences(turn)
        saved = self.store.save(
            turn, expected_version=turn.version, lease_id=lease.lease_id if lease is not None else None
        )
        self._emit(saved, EventType.SNAPSHOT_SAVED, version=saved.version, status=saved.status.value)
        return saved

    def _project(self, turn: Turn) -> None:
        memory = self._memory(turn.conversation_id)
        if memory is None:
            return
        try:
            project(turn, memory)
        except Exception as exc:
            # The snapshot is already safe; the next save re-projects what this one could not.
            _log.warning("projection of turn %r failed: %s", turn.id, exc)
            self._emit(turn, EventType.PROJECTION_FAILED, error=f"{type(exc).__name__}: {exc}")

    def _cancel_requested(self, turn_id: str) -> bool:
        try:
            return self.store.load(turn_id).cancel_requested
        except TurnNotFoundError:
            return True

    def _emit(self, turn: Turn, event_type: EventType, **data: Any) -> None:
        self._emit_for(turn.id, turn.event_sequence, event_type, **data)

    def _emit_for(self, turn_id: str, floor: int, event_type: EventType, **data: Any) -> None:
        """Emit above ``floor`` (the turn's reserved sequence; 0 when its snapshot cannot be read)."""
        with self._sequence_lock:
            sequence = max(self._sequences.get(turn_id, 0), floor) + 1
            self._sequences[turn_id] = sequence
            if len(self._sequences) > _SEQUENCE_CACHE:
                self._sequences.pop(next(iter(self._sequences)))
        dispatch(self.listeners, Event(event_type, turn_id, sequence, data))

    def _reserve_sequences(self, turn: Turn) -> None:
        """Persist a floor above every sequence this process may use before the next save.

        Events are emitted after the snapshot they follow is written, so their numbers cannot be stored
        with it. Storing ``last used + reserve`` instead means a process that reloads the turn continues
        above anything emitted here (unless more than the reserve is emitted between two saves).
        """
        with self._sequence_lock:
            used = max(self._sequences.get(turn.id, 0), turn.event_sequence)
            self._sequences[turn.id] = used
        turn.event_sequence = used + _SEQUENCE_RESERVE


def _stored_status(error: SnapshotUnreadableError) -> TurnStatus | None:
    """The status the store holds for a turn it cannot read; ``None`` if that is not a known one either."""
    try:
        return TurnStatus(error.status) if error.status is not None else None
    except ValueError:
        return None


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


def _redact_card(turn: Turn, message_id: str) -> None:
    """The card keeps that it was answered, not what: its values leave the snapshot and the timeline."""
    card = turn.card(message_id)
    if isinstance(card, FormMessage) and card.submitted_values is not None:
        update = {"submitted_values": None, "values_redacted": True, "version": card.version + 1}
        turn.cards = [card.model_copy(update=update) if c.message_id == message_id else c for c in turn.cards]


def _forget_projected_values(turn: Turn) -> None:
    """Invariant 8 for the snapshot's copy of answered cards: once the timeline is known to hold a final
    card at its version, the snapshot keeps no copy of the values (a repair never rewrites that version)."""
    kept: list[FormMessage | ApprovalMessage] = []
    for card in turn.cards:
        confirmed = turn.projection.cards.get(card.message_id) == card.version
        if isinstance(card, FormMessage) and card.status != "PENDING" and confirmed and card.submitted_values:
            kept.append(card.model_copy(update={"submitted_values": None}))
        else:
            kept.append(card)
    turn.cards = kept


def _jsonable(value: Any) -> Any:
    try:
        return to_jsonable_python(value)
    except (TypeError, ValueError):
        return str(value)


#: A call id kept as the model gave it: what every provider accepts back (Bedrock's ``toolUseId`` is the
#: strictest) and what travels in a URL path segment as it is (action ids are call ids).
_KEPT_CALL_ID: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _ids_in_use(turn: Turn) -> set[str]:
    """Every id a call of this turn has had: calls, results, per-call state, cards."""
    used = {c.id for m in turn.messages if isinstance(m, AiMessage) for c in m.tool_calls}
    used |= {m.tool_call_id for m in turn.messages if isinstance(m, ToolMessage)}
    used |= set(turn.tool_states) | {card.action_id for card in turn.cards}
    used |= {c.id for c in turn.pending_tool_calls}
    return used


def _unique_call_ids(turn: Turn, reply: AiMessage) -> AiMessage:
    """Tool calls are addressed by id (action ids, idempotency keys, results): make each unique in the turn.

    The model's id is kept when it is well-formed, new to the turn and the first of its kind in the reply;
    every other call gets ``call-<iteration>-<position>``, suffixed until it collides with nothing — neither
    an earlier call nor an id kept in this same reply (so a model cannot make a call vanish by naming it
    like the id another call would get).
    """
    used = _ids_in_use(turn)
    kept: list[bool] = []
    for call in reply.tool_calls:
        keep = bool(_KEPT_CALL_ID.match(call.id)) and call.id not in used
        kept.append(keep)
        if keep:
            used.add(call.id)
    calls: list[ToolCall] = []
    for index, (call, keep) in enumerate(zip(reply.tool_calls, kept, strict=True)):
        if keep:
            calls.append(call)
            continue
        base = f"call-{turn.iteration_count + 1}-{index + 1}"
        call_id, suffix = base, 1
        while call_id in used:
            suffix += 1
            call_id = f"{base}-{suffix}"
        used.add(call_id)
        calls.append(call.model_copy(update={"id": call_id}))
    return reply.model_copy(update={"tool_calls": calls})
