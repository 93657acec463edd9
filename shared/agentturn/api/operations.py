"""What each route does, free of HTTP: a caller (verified subject), validated inputs, a result or a typed error.

Every operation reads through an :class:`OwnerScopedStore`, so a caller can neither see nor change a turn
it does not own; refusals are raised before anything is written (the core's resume is pure until its one
conditional write).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentturn.api import problems
from agentturn.api.models import (
    ActionAccepted,
    AuditView,
    CancelAccepted,
    ConversationSummaryView,
    ConversationsView,
    InboxItemView,
    InboxView,
    MessagesView,
    StartTurnRequest,
)
from agentturn.api.ownership import OWNER_KEY, conversation_key, owns
from agentturn.api.services import OwnerScopedStore, Services
from agentturn.api.telemetry import Telemetry, metrics_listener
from agentturn.engine.handoff import pack_snapshot, serializer_of
from agentturn.engine.retry import handoff_delay
from agentturn.engine.runner import Runner
from agentturn.errors import (
    ConversationBusyError,
    IdempotencyConflictError,
    InvalidResumeError,
    RefusalReason,
    SnapshotUnreadableError,
    StorageError,
    TurnNotFoundError,
    UnknownAgentError,
)
from agentturn.ports.queue import carries_snapshots
from agentturn.state.approvers import Principal
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import ApprovalMessage
from agentturn.state.turn import Turn
from agentturn.timeline.conversation_list import ConversationDirectory, InvalidCursorError
from agentturn.timeline.repair import read_repaired

if TYPE_CHECKING:
    from agentturn.agents.agent import Agent
    from agentturn.agui.session import AgUiSession

_log = logging.getLogger("agentturn.api.operations")

YieldProbe = Callable[[], bool]


@dataclass(frozen=True)
class StartedTurn:
    turn: Turn
    #: The run stopped for time before the turn blocked or ended: a worker continues it.
    handed_off: bool


class Operations:
    def __init__(self, services: Services, telemetry: Telemetry) -> None:
        self.services = services
        self.telemetry = telemetry

    def _runner_for(self, caller: str, store: OwnerScopedStore | None = None) -> Runner:
        scoped = store if store is not None else self.services.scoped_store(caller)
        return self.services.runner(store=scoped, listeners=[metrics_listener(self.telemetry)])

    # ------------------------------------------------------------------ run

    def start_turn(
        self, caller: str, conversation_id: str, request: StartTurnRequest, should_yield: YieldProbe
    ) -> StartedTurn:
        try:
            agent = self.services.agents.for_new_turn(request.agent_id)
        except UnknownAgentError:
            known = self.services.agents.ids()
            raise problems.request_validation(
                [
                    {
                        "path": "/agentId",
                        "in": "body",
                        "message": f"unknown agent {request.agent_id!r}; use one of {known!r}",
                    }
                ]
            ) from None
        metadata: dict[str, Any] = {**(request.metadata or {}), OWNER_KEY: caller}
        runner = self._runner_for(caller)
        self.telemetry.bind(conversationId=conversation_id)
        started: list[Turn] = []

        def on_started(turn: Turn) -> None:
            started.append(turn)
            self.telemetry.bind(turnId=turn.id)

        try:
            # Created already leased to this run, so the run needs neither a claim nor a read.
            turn = runner.run(
                agent,
                conversation_key(caller, conversation_id),
                request.input,
                metadata=metadata,
                should_yield=should_yield,
                on_started=on_started,
            )
        except ConversationBusyError as exc:
            # Said with the caller's conversation id, not the namespaced one the core knows.
            raise problems.conversation_busy(conversation_id, exc.active_turn_id) from None
        except StorageError:
            if started:
                # The turn is saved runnable at its last step (its lease released or soon expired): hand it to
                # a worker now rather than at the next sweep, then answer 5xx for what failed here.
                self._hand_off_after_failure(started[0].id, started[0].version)
            raise
        if turn.status.is_runnable:
            # Out of time (or another holder has it): saved runnable, so a worker picks it up from here.
            delay = handoff_delay(turn, self.services.clock())
            self.services.queue.enqueue(turn.id, turn.version, delay_seconds=delay)
            _log.info("turn %r handed to the worker at version %d (delay %d s)", turn.id, turn.version, delay)
            return StartedTurn(turn, handed_off=True)
        return StartedTurn(turn, handed_off=False)

    # ------------------------------------------------------------------ AG-UI

    def _agent_for_ag_ui(self, agent_id: str | None) -> Agent:
        try:
            return self.services.agents.for_new_turn(agent_id)
        except UnknownAgentError:
            raise problems.agent_not_found(agent_id or "", self.services.agents.ids()) from None

    def ag_ui_session(
        self,
        caller: str,
        agent_id: str | None,
        document: object,
        should_yield: YieldProbe,
        groups: frozenset[str] = frozenset(),
    ) -> AgUiSession:
        """An AG-UI run, checked before any event is sent: the input (422 naming each field) and the agent (404).

        Nothing is read from storage yet; what the thread holds decides the run once it streams.
        """
        from agentturn.agui.input import InputError, parse_input
        from agentturn.agui.session import AgUiSession

        try:
            run_input = parse_input(document)
        except InputError as exc:
            raise problems.request_validation(exc.errors) from None
        self._agent_for_ag_ui(agent_id)
        return AgUiSession(self.services, self.telemetry, caller, agent_id, run_input, should_yield, groups=groups)

    def ag_ui_capabilities(self, agent_id: str | None) -> dict[str, Any]:
        from agentturn.agui.capabilities import capabilities

        return capabilities(self._agent_for_ag_ui(agent_id))

    def _hand_off_after_failure(self, turn_id: str, version: int) -> None:
        try:
            self.services.queue.enqueue(turn_id, version)
        except StorageError:
            _log.warning("could not hand turn %r to the worker either; the sweeper will", turn_id)

    # ------------------------------------------------------------------ reads

    def get_turn(self, caller: str, turn_id: str) -> Turn:
        self.telemetry.bind(turnId=turn_id)
        return self.services.scoped_store(caller).load(turn_id)

    def list_conversations(self, caller: str, limit: int, cursor: str | None) -> ConversationsView:
        directory = self.services.chat_memory
        if not isinstance(directory, ConversationDirectory):
            # A chat memory without a listing (a custom adapter): an empty list, not an error page.
            return ConversationsView(conversations=[])
        try:
            page = directory.list_conversations(caller, limit, cursor)
        except InvalidCursorError as exc:
            raise problems.request_validation([{"path": "/cursor", "in": "query", "message": str(exc)}]) from None
        prefix = conversation_key(caller, "")
        return ConversationsView(
            conversations=[
                ConversationSummaryView(
                    conversation_id=item.conversation_id.removeprefix(prefix),
                    title=item.title,
                    last_activity_at=item.last_activity_at,
                )
                # Listed under the caller, so always in the caller's namespace; the check keeps it so.
                for item in page.conversations
                if item.conversation_id.startswith(prefix)
            ],
            next_cursor=page.cursor,
        )

    def inbox(self, caller: str, groups: frozenset[str], limit: int, cursor: str | None) -> InboxView:
        """What waits for the caller: one read per principal (theirs, each group's), never a scan."""
        from agentturn.timeline.inbox import Inbox, inbox_page

        memory = self.services.chat_memory
        if not isinstance(memory, Inbox):
            return InboxView(items=[])
        principal = Principal(caller, groups)
        try:
            page = inbox_page(memory, principal, limit, cursor)
        except InvalidCursorError as exc:
            raise problems.request_validation([{"path": "/cursor", "in": "query", "message": str(exc)}]) from None
        own = conversation_key(caller, "")
        items: list[InboxItemView] = []
        for entry in page.entries:
            card, people = entry.card, entry.card.people
            mine = entry.conversation_id.startswith(own)
            items.append(
                InboxItemView(
                    turn_id=card.turn_id or "",
                    action_id=card.action_id,
                    type=card.type,
                    conversation_id=entry.conversation_id.removeprefix(own) if mine else None,
                    title=people.title if people is not None else "",
                    card_title=card.tool_name
                    if isinstance(card, ApprovalMessage)
                    else card.description or card.form_key,
                    requested_by=people.requested_by if people is not None else caller,
                    # A card without approvers: its turn's start (the first part of every entry's sort key).
                    since=people.asked_at if people is not None else (card.sort_key.split("#", 1)[0] or None),
                    deadline=card.expires_at,
                    waiting_for=people.waiting_for if people is not None else None,
                    card=card,
                )
            )
        return InboxView(items=items, next_cursor=page.cursor)

    def audit(self, caller: str, groups: frozenset[str], turn_id: str) -> AuditView:
        """The turn's audit records, for its owner and for the people who decided on its cards; anyone else gets
        the 404 of a missing turn."""
        from agentturn.ports.audit import AuditLog, AuditRecord, OutcomeLog, OutcomeRecord, card_records

        self.telemetry.bind(turnId=turn_id)
        turn = self.services.store.load(turn_id)
        memory = self.services.chat_memory
        records: list[AuditRecord] = (
            memory.decisions(turn.conversation_id, turn.created_at, turn.id) if isinstance(memory, AuditLog) else []
        )
        if not owns(turn, caller) and not any(r.subject == caller for r in records):
            raise TurnNotFoundError(turn_id)
        every = sorted([*records, *card_records(turn)], key=lambda r: r.at)
        outcomes: list[OutcomeRecord] = (
            memory.outcomes(turn.conversation_id, turn.created_at, turn.id) if isinstance(memory, OutcomeLog) else []
        )
        return AuditView(
            turn_id=turn.id, records=[r.to_wire() for r in every], outcomes=[o.to_wire() for o in outcomes]
        )

    def list_messages(self, caller: str, conversation_id: str, limit: int) -> MessagesView:
        self.telemetry.bind(conversationId=conversation_id)
        key = conversation_key(caller, conversation_id)
        memory = self.services.chat_memory(key)
        # Read repair: a wait whose card never reached the timeline (its write failed after the snapshot
        # was saved) would leave the person without a form to fill in. It reads who holds the conversation:
        # the view reports that.
        messages, repaired = read_repaired(self.services.scoped_store(caller), memory, limit)
        return MessagesView(conversation_id=conversation_id, active_turn_id=repaired.holder, messages=messages)

    # ------------------------------------------------------------------ answers

    def answer(
        self, caller: str, turn_id: str, command: ResumeCommand, key: str, groups: frozenset[str] = frozenset()
    ) -> ActionAccepted:
        """Apply a person's answer (any kind of :class:`ResumeCommand`) and hand the turn to a worker.

        ``groups`` are the caller's from the verified token: a card with approvers admits its approvers (the
        owner's other turns stay hidden from them; :class:`~agentturn.api.services.AnswerScopedStore`).
        """
        self.telemetry.bind(turnId=turn_id, actionId=command.action_id or "")
        # The idempotency record lives in the snapshot (turn.accepted_requests), written by the same
        # conditional write that applies the answer: no extra request, and no window between the two.
        principal = Principal(caller, groups)
        command = command.by(principal).with_metadata("requestId", key)
        store = self.services.answer_store(principal, command.action_id or "", key)
        answer = self._runner_for(caller, store).accept_answer(turn_id, command)
        turn = answer.turn
        accepted = turn.accepted_requests.get(key)
        if accepted is None:
            # submit_resume records the key with the write that applies the answer, and a replay only
            # returns when the key is recorded: reaching this is a broken invariant, not a client error.
            raise RuntimeError(f"turn {turn_id!r} accepted request {key!r} without recording it")
        if turn.status.is_runnable:
            # Also on a replay: if the first attempt died between its write and its send, the retry is what
            # hands the turn on. A replay's message carries no snapshot: its worker claims, so a flood of
            # retries costs refused claims, never a model call each.
            # A queued answer (resume_after="each") is applied by the run that holds the turn: its message is a
            # wake-up only, for a turn whose run was lost.
            self._hand_on_answered(turn, with_snapshot=not answer.replayed and not answer.queued)
        return ActionAccepted(
            turn_id=turn.id, action_id=accepted.action_id, version=accepted.version, accepted_at=accepted.accepted_at
        )

    def _hand_on_answered(self, turn: Turn, *, with_snapshot: bool) -> None:
        """Enqueue the answered turn, ``with_snapshot`` just saved when the queue can carry it (the worker then
        needs no claim to start: :mod:`agentturn.engine.handoff`)."""
        queue = self.services.queue
        # The key is read (a Secrets Manager request, once per process) only for a queue that carries snapshots.
        key = self.services.handoff_key() if with_snapshot and carries_snapshots(queue) else None
        packed = pack_snapshot(turn, serializer_of(self.services.store), key) if key is not None else None
        if packed is None or not carries_snapshots(queue):
            queue.enqueue(turn.id, turn.version)
            return
        snapshot, sealed = packed
        queue.enqueue(turn.id, turn.version, snapshot=snapshot, seal=sealed)

    def cancel(self, caller: str, turn_id: str, key: str) -> CancelAccepted:
        self.telemetry.bind(turnId=turn_id)
        store = self.services.scoped_store(caller)
        try:
            turn = store.load(turn_id)
        except SnapshotUnreadableError as exc:
            # A turn nobody can read cannot be saved CANCELLED; it is ended FAILED (snapshot_unreadable) now,
            # which frees its conversation: a waiting one would otherwise hold it with nothing to sweep it.
            # Already ended (or held by a worker): the problem says what it is.
            if self._runner_for(caller, store).record_unreadable(exc, at_once=True).counted:
                return CancelAccepted(turn_id=turn_id)
            raise
        if key in turn.accepted_requests:
            raise IdempotencyConflictError(turn_id, key)
        if turn.status.is_terminal:
            # Cancelling is idempotent: a turn that ended with the flag (cancelled, or stopped otherwise once
            # cancel was asked) answers the same 202 without writing; one that ended otherwise is a conflict.
            if not turn.cancel_requested:
                raise InvalidResumeError(f"turn {turn_id!r} is {turn.status.value}", reason=RefusalReason.TURN_TERMINAL)
        else:
            # Also when the flag is already set: a first attempt that set it but failed before the turn was
            # saved CANCELLED is finished by its retry (a running turn is stopped by its worker).
            self._runner_for(caller, store).cancel(turn_id)
        return CancelAccepted(turn_id=turn_id)
