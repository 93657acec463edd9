"""One AG-UI run: from a verified caller's ``RunAgentInput`` to its last event.

What the run does depends on the thread (the caller's conversation) and the input, never on the client's
copy of the history:

============================  ==========================================================================
the thread                    the input → what happens
============================  ==========================================================================
open interrupts               ``resume`` answering all → decisions applied, the turn continues here
open interrupts               no ``resume``, no new message → the same interrupts again (a reload)
open interrupts               a new message → ``RUN_ERROR`` (``interrupts_pending``); with the agent's
                              ``ExecutionPolicy(steer_away=True)`` the cards are declined/rejected with a
                              recorded reason and a new turn starts with the message
a turn running elsewhere      no input → followed until it stops (bounded), then its outcome
free                          a new message → a new turn, run here while the client listens
free                          nothing new → ``MESSAGES_SNAPSHOT`` and ``RUN_FINISHED`` (the last answer)
============================  ==========================================================================

The turn runs in this request under its lease, as ``POST /conversations/{id}/turns`` runs it; the events are
produced by a thread and handed to the response as they come. If the client goes away the thread carries
on; if the request runs out of time the turn is saved runnable and handed to the worker queue, exactly as
the HTTP route does. Every ending sends ``STATE_SNAPSHOT`` and ``MESSAGES_SNAPSHOT`` (from the timeline)
before ``RUN_FINISHED``, so an interrupt's boundary carries the state the spec asks for.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

from agentturn.agui.encoder import encode
from agentturn.agui.events import (
    AgUiEvent,
    InterruptOutcome,
    MessagesSnapshot,
    RunError,
    RunErrorCode,
    RunFinished,
    RunStarted,
    StateSnapshot,
    SuccessOutcome,
)
from agentturn.agui.input import RunAgentInput, new_user_text
from agentturn.agui.interrupts import interrupts_of, open_interrupts
from agentturn.agui.mapping import TurnEvents, snapshot_messages
from agentturn.agui.resume import (
    ResumeRefused,
    card_suspension,
    decide,
    replayed,
)
from agentturn.api.ownership import OWNER_KEY, conversation_key
from agentturn.api.services import OwnerScopedStore, Services
from agentturn.api.telemetry import Telemetry, metrics_listener
from agentturn.engine.retry import handoff_delay
from agentturn.engine.runner import Runner
from agentturn.errors import (
    AgentTurnError,
    ConversationBusyError,
    FormValidationError,
    IdempotencyConflictError,
    InvalidResumeError,
    SnapshotUnreadableError,
    StorageError,
    TurnNotFoundError,
)
from agentturn.ports.memory import ChatMemory
from agentturn.ports.store import Lease
from agentturn.state.approvers import Principal
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import TimelineMessage
from agentturn.state.turn import Suspension, Turn
from agentturn.timeline.identity import message_identity
from agentturn.timeline.repair import read_repaired

_log = logging.getLogger("agentturn.agui")

#: Timeline entries a ``MESSAGES_SNAPSHOT`` carries (the latest ones).
SNAPSHOT_LIMIT: Final = 200
#: How often a run with no input reads a turn running elsewhere while it follows it (``ag_ui_follow_seconds``).
FOLLOW_POLL_SECONDS: Final = 0.25
STEERED_AWAY: Final = "superseded: the person sent a new message instead of answering"

YieldProbe = Callable[[], bool]
Sleep = Callable[[float], None]


class _ObservedStore(OwnerScopedStore):
    """The caller's store view, telling ``observer`` of every turn it creates or saves (what the run's events are
    made of: no read of its own)."""

    def __init__(self, inner: Any, owner: str, observer: Callable[[Turn], None]) -> None:
        super().__init__(inner, owner)
        self._observer = observer

    def create(self, turn: Turn, *, lease: Lease | None = None) -> Turn:
        created = super().create(turn, lease=lease)
        self._observer(created)
        return created

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        saved = super().save(turn, expected_version=expected_version, lease_id=lease_id)
        self._observer(saved)
        return saved


class AgUiSession:
    def __init__(
        self,
        services: Services,
        telemetry: Telemetry,
        caller: str,
        agent_id: str | None,
        run_input: RunAgentInput,
        should_yield: YieldProbe,
        *,
        sleep: Sleep = time.sleep,
        groups: frozenset[str] = frozenset(),
    ) -> None:
        self.services = services
        self.telemetry = telemetry
        self.caller = caller
        #: who answers this run's resume[]: the caller with the groups of their verified token (Approvers)
        self.principal = Principal(caller, groups)
        self.agent_id = agent_id
        self.input = run_input
        self.should_yield = should_yield
        self.sleep = sleep
        self.key = conversation_key(caller, run_input.thread_id)
        self._emit: Callable[[AgUiEvent], None] = lambda event: None
        #: the thread's timeline as this run read it (before its own turn wrote anything)
        self._timeline: list[TimelineMessage] | None = None
        self._events = TurnEvents(self._send)
        self._store = _ObservedStore(services.store, caller, self._events.saved)

    # ------------------------------------------------------------------ the stream

    def stream(self) -> Iterator[bytes]:
        """The run's events as SSE frames, as they come. The run goes on in its thread if the reader stops."""
        frames: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._emit = lambda event: frames.put(encode(event))

        def produce() -> None:
            try:
                self.run()
            finally:
                frames.put(None)

        threading.Thread(target=produce, name=f"ag-ui-{self.input.run_id[:16]}", daemon=True).start()
        while (frame := frames.get()) is not None:
            yield frame

    def events(self) -> list[AgUiEvent]:
        """The whole run in this thread (tests, and the buffered answer of a non-streaming integration)."""
        collected: list[AgUiEvent] = []
        self._emit = collected.append
        self.run()
        return collected

    def _send(self, event: AgUiEvent) -> None:
        self._emit(event)

    def run(self) -> None:
        ids = self.input
        self._send(RunStarted(thread_id=ids.thread_id, run_id=ids.run_id, parent_run_id=ids.parent_run_id))
        try:
            self._drive()
        except ResumeRefused as refused:
            self._events.close_open_text()
            self._error(refused.code, refused.message)
        except StorageError as exc:
            self._events.close_open_text()
            if exc.retryable:
                _log.warning("storage unavailable during an AG-UI run (%s): %s", exc.code, exc)
                self._error(RunErrorCode.UNAVAILABLE, "the service is busy; retry shortly")
            else:
                _log.exception("storage request failed during an AG-UI run")
                self._error(RunErrorCode.INTERNAL, "internal error")
        except Exception:
            # The one broad handler: a server bug, logged with its traceback; the client gets a RUN_ERROR
            # rather than a stream that stops mid-run.
            _log.exception("AG-UI run %r failed", self.input.run_id)
            self.telemetry.count("ServerErrors")
            self._events.close_open_text()
            self._error(RunErrorCode.INTERNAL, "internal error")

    def _error(self, code: RunErrorCode, message: str) -> None:
        self._send(RunError(message=message, code=code.value))

    # ------------------------------------------------------------------ deciding what the run is

    def _drive(self) -> None:
        self.telemetry.bind(conversationId=self.input.thread_id, agUiRunId=self.input.run_id)
        memory = self.services.chat_memory(self.key)
        timeline, repaired = read_repaired(self._store, memory, SNAPSHOT_LIMIT)
        self._timeline = timeline
        turn = self._load(repaired.holder)
        text = new_user_text(self.input, {m.message_id for m in timeline})
        if self.input.resume is not None:
            if text is not None:
                raise ResumeRefused(RunErrorCode.INTERRUPTS_PENDING, "send either a resume or a new message, not both")
            self._resume(turn, memory)
            return
        if turn is not None and open_interrupts(turn):
            if text is None:
                self._finish(turn)  # a reload: the same cards again
                return
            if not self._steers_away(turn):
                raise ResumeRefused(
                    RunErrorCode.INTERRUPTS_PENDING,
                    f"the thread waits for {len(open_interrupts(turn))} interrupt(s): answer them with resume",
                )
            self._steer_away(turn)
            self._timeline = memory.get_messages(SNAPSHOT_LIMIT)
            self._start(text, self._timeline)
            return
        if text is not None:
            if turn is not None and turn.status.is_runnable:
                raise ResumeRefused(RunErrorCode.THREAD_BUSY, "a turn of this thread is still running")
            self._start(text, timeline)
            return
        if turn is not None and turn.status.is_runnable:
            turn = self._follow(turn)
        self._finish(turn if turn is not None else self._latest(timeline))

    def _load(self, turn_id: str | None) -> Turn | None:
        if turn_id is None:
            return None
        try:
            return self._store.load(turn_id)
        except TurnNotFoundError:
            return None
        except SnapshotUnreadableError:
            raise ResumeRefused(RunErrorCode.TURN_ENDED, "the thread's turn cannot be read; it ends failed") from None

    def _runner(self) -> Runner:
        return self.services.runner(store=self._store, listeners=[metrics_listener(self.telemetry), self._events])

    # ------------------------------------------------------------------ the cases

    def _latest(self, timeline: list[TimelineMessage]) -> Turn | None:
        """The thread's last turn, which ended (its answer is the run's ``result``); none for an empty thread."""
        last = next((m.turn_id for m in reversed(timeline) if m.turn_id is not None), None)
        return self._load(last)

    def _start(self, text: str, timeline: list[TimelineMessage]) -> None:
        agent = self.services.agents.for_new_turn(self.agent_id)
        metadata = {OWNER_KEY: self.caller, "channel": "ag-ui", "agUiRunId": self.input.run_id}

        def on_started(started: Turn) -> None:
            self.telemetry.bind(turnId=started.id)
            # The client's copy of the new message becomes the timeline's (its id), before anything streams: the
            # client keeps the order of the messages it has, so the reply must come after this one.
            first = [m.model_copy(update=message_identity(started, 0)) for m in started.messages[:1]]
            self._send(MessagesSnapshot(messages=snapshot_messages([*timeline, *first])))

        try:
            turn = self._runner().run(
                agent,
                self.key,
                text,
                metadata=metadata,
                should_yield=self.should_yield,
                on_started=on_started,
            )
        except ConversationBusyError:
            raise ResumeRefused(RunErrorCode.THREAD_BUSY, "a turn of this thread is still running") from None
        self._after_run(turn)

    def _resume(self, turn: Turn | None, memory: ChatMemory) -> None:
        entries = self.input.resume or []
        open_ = open_interrupts(turn)
        replayed_in = (
            self._replayed_turn(memory) if entries and any(e.interrupt_id not in open_ for e in entries) else None
        )
        if replayed_in is not None:
            # The same resume again (its first attempt was applied): the turn's outcome as it stands now.
            current = replayed_in
            if current.status.is_runnable:
                current = self._follow(current)
            self._finish(current)
            return
        commands = decide(turn, entries, self.input.run_id, self.services.clock(), self.principal)
        assert turn is not None  # decide refuses a resume on a thread with nothing open
        self._events.follow(turn, seen=len(turn.messages))
        runner = self._runner()
        self.telemetry.bind(turnId=turn.id)
        current = turn
        for number, command in enumerate(commands):
            current = self._accept(runner, turn.id, command)
            if current.status.is_runnable and number < len(commands) - 1:
                # An agent that resumes after each answer ("each") runs the answered call before the next answer
                # applies (as the HTTP routes would, one answer at a time); the others still wait meanwhile.
                current = runner.run_turn(turn.id, should_yield=self.should_yield)
                if not current.status.is_blocked:
                    break
        if current.status.is_runnable:
            current = runner.run_turn(turn.id, should_yield=self.should_yield)
        self._after_run(current)

    def _accept(self, runner: Runner, turn_id: str, command: ResumeCommand) -> Turn:
        try:
            return runner.accept_answer(turn_id, command.by(self.principal)).turn
        except IdempotencyConflictError:
            raise ResumeRefused(
                RunErrorCode.RESUME_CONFLICT, f"action {command.action_id!r} was answered before with another answer"
            ) from None
        except FormValidationError as error:
            raise ResumeRefused(RunErrorCode.RESUME_INVALID_PAYLOAD, str(error)) from None
        except InvalidResumeError as error:
            # Lost a race with another answer between the check and the write.
            raise ResumeRefused(RunErrorCode.RESUME_UNKNOWN_INTERRUPT, str(error)) from None

    def _replayed_turn(self, memory: ChatMemory) -> Turn | None:
        """The turn whose cards every resume entry names, if it already accepted exactly these answers; else None."""
        entries = self.input.resume or []
        turns: dict[str, Turn] = {}
        suspensions: dict[str, Suspension] = {}
        loaded: dict[str, Turn] = {}
        for entry in entries:
            card = memory.get_message(entry.interrupt_id)
            suspension = card_suspension(card)
            if card is None or suspension is None or card.turn_id is None:
                return None
            if card.turn_id not in loaded:
                found = self._load(card.turn_id)
                if found is None:
                    return None
                loaded[card.turn_id] = found
            turns[entry.interrupt_id] = loaded[card.turn_id]
            suspensions[entry.interrupt_id] = suspension
        if len(loaded) != 1 or not replayed(turns, entries, suspensions, self.input.run_id, self.principal):
            return None
        return next(iter(loaded.values()))

    def _steers_away(self, turn: Turn) -> bool:
        try:
            agent = self._runner().agent_for(turn)
        except AgentTurnError:  # an agent version that cannot be resolved does not steer away
            return False
        return agent.policy.steer_away

    def _steer_away(self, turn: Turn) -> None:
        """Close every open card with a recorded reason, end the turn, and let the new message start the next."""
        runner = self._runner()
        for interrupt_id, suspension in open_interrupts(turn).items():
            if suspension.is_form:
                command = ResumeCommand.decline_input(suspension.correlation_id, STEERED_AWAY)
            else:
                command = ResumeCommand.reject_tool(suspension.correlation_id, STEERED_AWAY)
            self._accept(runner, turn.id, command.with_metadata("requestId", f"ag-ui-steer:{interrupt_id}"))
        runner.cancel(turn.id)

    def _follow(self, turn: Turn) -> Turn:
        """Wait (bounded) for a turn running elsewhere (the worker) to stop: blocked, ended, or still running."""
        deadline = time.monotonic() + self.services.settings.ag_ui_follow_seconds
        self._events.follow(turn, seen=len(turn.messages))
        current = turn
        while current.status.is_runnable and time.monotonic() < deadline and not self.should_yield():
            self.sleep(FOLLOW_POLL_SECONDS)
            loaded = self._load(turn.id)
            if loaded is None:
                return current
            current = loaded
        return current

    def _after_run(self, turn: Turn) -> None:
        self._events.close_open_text()
        if turn.status.is_runnable:
            # Out of time (or another holder has it): saved runnable, so a worker continues it from here.
            delay = handoff_delay(turn, self.services.clock())
            self.services.queue.enqueue(turn.id, turn.version, delay_seconds=delay)
        self._finish(turn)

    # ------------------------------------------------------------------ the ending

    def _snapshot(self, turn: Turn | None) -> list[dict[str, Any]]:
        """The thread's messages: what the timeline held when the run began, with the turn's messages as the turn
        now holds them (its snapshot, which its projection copies into the timeline): no second read of the
        timeline for what this run itself saved."""
        if turn is not None and self._timeline is not None:
            earlier = [m for m in self._timeline if m.turn_id != turn.id]
            own = [m.model_copy(update=message_identity(turn, i)) for i, m in enumerate(turn.messages)]
            return snapshot_messages([*earlier, *own])
        messages, _ = read_repaired(self._store, self.services.chat_memory(self.key), SNAPSHOT_LIMIT)
        return snapshot_messages(messages)

    def _state(self, turn: Turn | None) -> dict[str, Any]:
        if turn is None:
            return {"agentturn": {"turnId": None, "status": None, "pending": []}}
        return {
            "agentturn": {
                "turnId": turn.id,
                "status": turn.status.value,
                "pending": [s.correlation_id for s in turn.suspensions] if turn.status.is_blocked else [],
            }
        }

    def _finish(self, turn: Turn | None) -> None:
        ids = self.input
        self._send(StateSnapshot(snapshot=self._state(turn)))
        self._send(MessagesSnapshot(messages=self._snapshot(turn)))
        if turn is not None and open_interrupts(turn):
            outcome = InterruptOutcome(interrupts=interrupts_of(turn))
            self._send(RunFinished(thread_id=ids.thread_id, run_id=ids.run_id, outcome=outcome))
            return
        if turn is not None and turn.status.is_runnable:
            self._error(
                RunErrorCode.CONTINUING,
                "the turn continues on the server; run again without input to receive its outcome",
            )
            return
        if turn is not None and turn.status.is_terminal and turn.status.value != "COMPLETED":
            detail = f" ({turn.error.type}: {turn.error.message})" if turn.error is not None else ""
            self._error(RunErrorCode.TURN_ENDED, f"the turn ended {turn.status.value}{detail}")
            return
        result = turn.final_output if turn is not None else None
        self._send(RunFinished(thread_id=ids.thread_id, run_id=ids.run_id, result=result, outcome=SuccessOutcome()))
