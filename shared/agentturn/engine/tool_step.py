"""The tool step: the next pending call passes a chain of gates, and the last one runs the tool.

Each gate either settles the call (answers it, parks it to wait for a person, or ends the turn) and says
so, or lets it through to the next: the control tool, an unknown tool, the approval policy, the tool-call
budget. Only a call that passes them all is executed.

The next call is the first pending one that does not wait for a person: when a model message holds several
calls, those that need nobody run in order, once each (every result is saved before the next call starts),
while each call that needs a person is parked with its wait. When only parked calls remain, the turn blocks
on all of them at once, in the same save as the last result (:func:`agentturn.engine.suspend.block`).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from typing import Any

from pydantic_core import to_jsonable_python

from agentturn.agents.agent import Agent, ApprovalVerdict, ToolApprovalDecision
from agentturn.agents.registry import AgentRegistry
from agentturn.agents.tools import Tool, ToolContext, tool_context
from agentturn.engine import tool_results
from agentturn.engine.clock import Clock
from agentturn.engine.events import EventType
from agentturn.engine.lease_keeper import LeaseKeeper
from agentturn.engine.redaction import redact_card
from agentturn.engine.rounds import park_for_round, round_prefix
from agentturn.engine.sequencer import EventSequencer
from agentturn.engine.suspend import (
    InputTarget,
    block,
    next_runnable_call,
    only_waits_remain,
    park_for_approval,
    park_for_form,
)
from agentturn.engine.turn_run import LeaseGone, Run, agent_of, policy_of
from agentturn.engine.turn_writer import TurnWriter
from agentturn.errors import LeaseLostError, ToolProtocolError, TurnNotFoundError, VersionConflictError
from agentturn.forms.definitions import REQUEST_USER_INPUT, FormDefinition, FormRequired
from agentturn.forms.rounds import InputRound, InputRoundRequired, PollLater, RoundAction, RoundAnswer
from agentturn.ports.store import TurnStore
from agentturn.state.messages import ToolCall, ToolMessage, form_message_id
from agentturn.state.turn import RetryState, Suspension, ToolCallState, Turn, TurnPhase, TurnStatus
from agentturn.timeline.identity import stamp

_log = logging.getLogger("agentturn.engine.runner")

#: A gate: ``True`` when it settled the call (nothing further may happen to it in this step).
Gate = Callable[[Run, Agent, ToolCall], bool]
#: Told what a tool did (the turn, the call's id, whether it failed, its result or error line): the audit
#: record's outcome of an approved call (agentturn.ports.audit.outcome_record).
OutcomeHook = Callable[[Turn, str, bool, Any], None]


class ToolStep:
    def __init__(
        self,
        store: TurnStore,
        clock: Clock,
        agents: AgentRegistry,
        writer: TurnWriter,
        events: EventSequencer,
        leases: LeaseKeeper,
        on_outcome: OutcomeHook | None = None,
    ) -> None:
        self._on_outcome = on_outcome
        self._store = store
        self._clock = clock
        self._agents = agents
        self._writer = writer
        self._events = events
        self._leases = leases
        self._gates: tuple[Gate, ...] = (self._control_tool, self._unknown_tool, self._approval, self._budget)

    def __call__(self, run: Run) -> None:
        agent = agent_of(run, self._agents)
        call = next_runnable_call(run.turn)
        if call is None:
            # Every pending call waits for a person (a turn resumed after one answer of several, whose
            # answer left nothing to run): wait on them again.
            block(run.turn)
            self._blocked(run, None)
            return
        if run.turn.step_count >= agent.policy.max_steps:
            self._writer.finish(run, TurnStatus.MAX_STEPS_REACHED, "max_steps", "step limit reached")
            return
        for gate in self._gates:
            if gate(run, agent, call):
                return
        tool = agent.tools[call.name]
        # A run that started from its message's snapshot claims the turn before a tool acts (of two deliveries of
        # one message, only one gets further); a cancel asked for meanwhile ends it instead. Not before a tool
        # declared idempotent: running it twice is harmless by that declaration, as after a crash.
        if not tool.idempotent and not self._leases.claim_deferred(run):
            return
        self._begin(run.turn, call)
        self._execute(run, call, tool)

    # ------------------------------------------------------------------ gates

    def _control_tool(self, run: Run, agent: Agent, call: ToolCall) -> bool:
        """``request_user_input``: the model asks the person to fill in one of the agent's forms."""
        if call.name != REQUEST_USER_INPUT:
            return False
        state = run.turn.tool_states.get(call.id)
        if state is not None and state.submitted_form_data is not None:
            # A redacting agent's form, answered: the answer becomes the call's result only now that the turn
            # runs on (agentturn.engine.redaction); _complete drops the snapshot's copy.
            self._begin(run.turn, call)
            answer = tool_results.submitted(str(call.arguments.get("formKey")), state.submitted_form_data)
            self._complete(run, call, answer)
            return True
        user_input_tool = agent.user_input_tool
        if user_input_tool is None:
            return False
        self._begin(run.turn, call)
        form_key = call.arguments.get("formKey")
        form = user_input_tool.form(form_key) if isinstance(form_key, str) else None
        if form is None:
            self._complete(run, call, tool_results.unknown_form_key(form_key, sorted(user_input_tool.forms)))
            return True
        self._events.emit(
            run.turn, EventType.TOOL_INPUT_REQUESTED, toolCallId=call.id, formKey=form.form_key, target="MODEL"
        )
        self._suspend_for_form(run, call, form, "MODEL")
        return True

    def _unknown_tool(self, run: Run, agent: Agent, call: ToolCall) -> bool:
        """A tool the agent does not have: the model is told which ones it has."""
        if call.name in agent.tools:
            return False
        self._begin(run.turn, call)
        self._complete(run, call, tool_results.unknown_tool(call.name, sorted(agent.tools)))
        return True

    def _approval(self, run: Run, agent: Agent, call: ToolCall) -> bool:
        """The agent's approval policy: allow, deny (the model is told), or wait for a person."""
        policy = agent.approval_policy
        if policy is None or run.turn.tool_state(call.id).approved:
            return False
        try:
            decision = policy(run.turn, call, agent.tools[call.name])
        except Exception as exc:
            _log.exception("approval policy failed for %r on turn %r", call.name, run.turn.id)
            self._writer.finish(run, TurnStatus.FAILED, "approval_policy_error", f"{type(exc).__name__}: {exc}")
            return True
        if not isinstance(decision, ToolApprovalDecision):
            self._writer.finish(
                run, TurnStatus.FAILED, "approval_policy_error", "policy must return ToolApprovalDecision"
            )
            return True
        if decision.verdict is ApprovalVerdict.DENY:
            self._begin(run.turn, call)
            self._events.emit(run.turn, EventType.TOOL_REJECTED, toolCallId=call.id, toolName=call.name, by="policy")
            self._complete(run, call, tool_results.denied(call.name, decision.message))
            return True
        if decision.verdict is ApprovalVerdict.REQUIRE_APPROVAL:
            self._begin(run.turn, call)
            park_for_approval(
                run.turn, call, decision, policy_of(run, self._agents), self._clock(), agent.tools[call.name].parameters
            )
            self._events.emit(run.turn, EventType.TOOL_APPROVAL_REQUESTED, toolCallId=call.id, toolName=call.name)
            self._parked(run, call)
            return True
        return False

    def _budget(self, run: Run, agent: Agent, call: ToolCall) -> bool:
        """Count each call once (a replay after a form is the same call), and stop at the budget."""
        turn = run.turn
        state = turn.tool_state(call.id)
        if state.counted:
            return False
        if turn.tool_call_count >= agent.policy.max_tool_calls:
            self._writer.finish(run, TurnStatus.BUDGET_EXCEEDED, "max_tool_calls", "tool call budget exhausted")
            return True
        state.counted = True
        turn.tool_call_count += 1
        return False

    # ------------------------------------------------------------------ execution

    def _execute(self, run: Run, call: ToolCall, tool: Tool) -> None:
        turn = run.turn
        state = turn.tool_state(call.id)
        if turn.retry is not None and turn.retry.reason == TOOL_POLL:
            turn.retry = None  # the poll is due: it is this run (a failure's backoff counts from zero again)
        durable = _DurableCall(run, self._writer)
        replay = state.submitted_form_data is not None
        input_round = _input_round(state) if state.round_state is not None else None
        # Approved with edits: the tool runs with the person's arguments, and sees them as its call's.
        arguments = dict(state.edited_arguments) if state.edited_arguments is not None else dict(call.arguments)
        self._events.emit(
            turn,
            EventType.TOOL_STARTED,
            toolCallId=call.id,
            toolName=call.name,
            replay=replay or input_round is not None,
            edited=state.edited_arguments is not None,
        )
        context = ToolContext(
            turn_id=turn.id,
            tool_call_id=call.id,
            tool_call=call.model_copy(update={"arguments": arguments}),  # id and name are strings: nothing else to copy
            submitted_form_data=dict(state.submitted_form_data or {}),
            form_submitted=replay,
            input_round=input_round,
            now=self._clock(),
            _progress=lambda stage, data: self._events.emit(
                turn, EventType.TOOL_PROGRESS, toolCallId=call.id, stage=stage, data=dict(data or {})
            ),
            _cancel_probe=lambda: self._cancel_requested(turn.id),
            _make_durable=durable if run.unsaved else None,
        )
        try:
            with tool_context(context), self._leases.heartbeat(run):
                result = tool.function(copy.deepcopy(arguments))
        except LeaseGone:
            raise
        except FormRequired as signal:
            durable.raise_if_failed()
            # The save of the call (if the tool asked for its key) replaced the run's copy of the turn.
            turn, state = run.turn, run.turn.tool_state(call.id)
            if replay or state.form_requested:
                error = ToolProtocolError(
                    f"tool {call.name!r} raised FormRequired again after the form was submitted",
                    tool=call.name,
                    form_key=signal.form.form_key,
                )
                self._events.emit(turn, EventType.TOOL_FAILED, toolCallId=call.id, toolName=call.name, error=str(error))
                self._events.emit(turn, EventType.STEP_COMPLETED, kind="TOOL", ok=False)
                self._writer.finish(run, TurnStatus.FAILED, "form_required_again", str(error))
                return
            state.form_requested = True
            self._events.emit(
                turn, EventType.TOOL_INPUT_REQUESTED, toolCallId=call.id, formKey=signal.form.form_key, target="TOOL"
            )
            self._suspend_for_form(run, call, signal.form, "TOOL")
            return
        except InputRoundRequired as signal:
            durable.raise_if_failed()
            turn = run.turn
            for suspension in park_for_round(turn, call, signal, agent_of(run, self._agents).policy, self._clock()):
                self._events.emit(
                    turn,
                    EventType.TOOL_INPUT_REQUESTED,
                    toolCallId=call.id,
                    formKey=suspension.form_key,
                    target="TOOL",
                    actionId=suspension.correlation_id,
                )
            self._parked(run, call)
            return
        except PollLater as signal:
            durable.raise_if_failed()
            self._poll_later(run, call, signal)
            return
        except Exception as exc:
            durable.raise_if_failed()
            turn = run.turn
            message = f"{type(exc).__name__}: {exc}"
            self._events.emit(turn, EventType.TOOL_FAILED, toolCallId=call.id, toolName=call.name, error=message)
            approved = turn.tool_state(call.id).approved
            if agent_of(run, self._agents).policy.on_tool_error == "fail_turn":
                self._events.emit(turn, EventType.STEP_COMPLETED, kind="TOOL", ok=False)
                self._writer.finish(run, TurnStatus.FAILED, "tool_error", message)
            else:
                self._complete(run, call, tool_results.tool_failed(message))
            self._outcome(run.turn, call, approved, failed=True, result=message)
            return
        durable.raise_if_failed()
        self._events.emit(run.turn, EventType.TOOL_COMPLETED, toolCallId=call.id, toolName=call.name)
        content = _jsonable(result)
        approved = run.turn.tool_state(call.id).approved
        self._complete(run, call, content, rerunnable=tool.idempotent)
        self._outcome(run.turn, call, approved, failed=False, result=content)

    def _outcome(self, turn: Turn, call: ToolCall, approved: bool, *, failed: bool, result: Any) -> None:
        # After the result is saved, never between the tool and that save: a failed put must not make a tool
        # that acts run again. (Conditional: a rerun of an idempotent tool finds the first outcome kept.)
        if self._on_outcome is not None and approved:
            self._on_outcome(turn, call.id, failed, result)

    def _poll_later(self, run: Run, call: ToolCall, signal: PollLater) -> None:
        """The call runs again after ``signal.delay``: its state kept, the turn saved runnable but not due before
        then (the driver stops, the worker hands the turn back to the queue with that delay, the sweeper finds it
        if the message is lost)."""
        turn = run.turn
        state = turn.tool_state(call.id)
        state.round_state = copy.deepcopy(signal.state)
        state.round_answers = None
        turn.retry = RetryState(reason=TOOL_POLL, not_before=self._clock() + signal.delay)
        turn.status = TurnStatus.RUNNING
        self._writer.save(run)
        self._events.emit(
            run.turn, EventType.STEP_COMPLETED, kind="TOOL", ok=True, toolName=call.name, pollIn=signal.delay
        )

    def _cancel_requested(self, turn_id: str) -> bool:
        try:
            return self._store.load(turn_id).cancel_requested
        except TurnNotFoundError:
            return True

    # ------------------------------------------------------------------ outcomes

    def _begin(self, turn: Turn, call: ToolCall) -> None:
        turn.step_count += 1
        turn.status = TurnStatus.RUNNING
        self._events.emit(turn, EventType.STEP_STARTED, kind="TOOL", step=turn.step_count, toolName=call.name)

    def _complete(self, run: Run, call: ToolCall, content: Any, *, rerunnable: bool = False) -> None:
        """The call's ToolMessage, then a snapshot: one boundary per tool result. ``rerunnable``: the result of
        an idempotent tool, which the run's next save carries instead (a crash before it runs the tool again)."""
        turn = run.turn
        turn.pending_tool_calls = [c for c in turn.pending_tool_calls if c.id != call.id]
        state = turn.tool_states.get(call.id)
        if state is not None and state.edited_arguments is not None:
            # The model proposed other arguments: its result says a person changed them, and to what.
            content = tool_results.edited(call.arguments, state.edited_arguments, content)
            state.edited_arguments = None
        if state is not None and state.round_state is not None:
            # Like submitted form data: a round's state and answers lived only for the tool that asked.
            state.round_state = None
            state.round_answers = None
            if policy_of(run, self._agents).redact_submitted_values:
                for card in [c for c in turn.cards if c.action_id.startswith(round_prefix(call.id))]:
                    redact_card(turn, card.message_id)
        if state is not None and state.submitted_form_data is not None:
            # Invariant 8: the submitted form data lived only for the tool that needed it.
            state.submitted_form_data = None
            if policy_of(run, self._agents).redact_submitted_values:
                redact_card(turn, form_message_id(turn.id, call.id))
        turn.messages.append(stamp(turn, ToolMessage(tool_call_id=call.id, content=content, tool_name=call.name)))
        if not turn.pending_tool_calls:
            turn.phase = TurnPhase.MODEL
        if only_waits_remain(turn):
            # The last call that needed nobody: the turn waits on the others, in this same save.
            block(turn)
            self._blocked(run, call)
            return
        if rerunnable:
            run.unsaved = True
        else:
            self._writer.save(run, project_later=True)
        self._events.emit(run.turn, EventType.STEP_COMPLETED, kind="TOOL", ok=True, toolName=call.name)

    def _suspend_for_form(self, run: Run, call: ToolCall, form: FormDefinition, target: InputTarget) -> None:
        park_for_form(run.turn, call, form, target, agent_of(run, self._agents).policy, self._clock())
        self._parked(run, call)

    def _parked(self, run: Run, call: ToolCall) -> None:
        """``call`` waits for a person: the turn blocks if nothing else can run, else goes on to the next call."""
        if only_waits_remain(run.turn):
            block(run.turn)
            self._blocked(run, call)
            return
        # Saved before the next call starts, so that a crash does not ask the tool (or the policy) again.
        self._writer.save(run)
        self._events.emit(run.turn, EventType.STEP_COMPLETED, kind="TOOL", ok=True, toolName=call.name, parked=True)

    def _blocked(self, run: Run, call: ToolCall | None) -> None:
        self._writer.save(run)
        turn = run.turn
        if turn.status.is_runnable:
            # Answers queued while it ran (resume_after="each") were taken by this save: the run goes on.
            if call is not None:
                self._events.emit(turn, EventType.STEP_COMPLETED, kind="TOOL", ok=True, toolName=call.name)
            return
        first = turn.suspension
        assert first is not None
        if call is not None:
            self._events.emit(turn, EventType.STEP_COMPLETED, kind="TOOL", ok=True, toolName=call.name, suspended=True)
        if turn.cancel_requested:
            # Cancelled while this step ran (the save came back carrying the flag): nobody may answer a
            # turn that is being cancelled, so it ends now rather than waiting with live cards.
            self._writer.finish(run, TurnStatus.CANCELLED)
            return
        self._events.emit(
            turn,
            EventType.TURN_SUSPENDED,
            **_action_summary(first),
            actionIds=[s.correlation_id for s in turn.suspensions],
            actions=[_action_summary(s) for s in turn.suspensions],
        )


class _DurableCall:
    """Saves the run's unsaved turn (the model's reply holding the call) the first time the tool asks for its
    idempotency key, and keeps a failed save to raise again once the tool is back (a tool may swallow it): the
    run then fails as it would had the save come before the tool, never as the tool's own failure."""

    def __init__(self, run: Run, writer: TurnWriter) -> None:
        self._run = run
        self._writer = writer
        self._lease_id = run.lease.lease_id if run.lease is not None else ""
        self._lock = threading.Lock()  # a tool may ask from several threads of its own
        self._failure: Exception | None = None

    def __call__(self) -> None:
        with self._lock:
            if self._failure is None and self._run.unsaved:
                try:
                    self._writer.save(self._run, project_later=True)
                except Exception as exc:
                    self._failure = exc
            if isinstance(self._failure, LeaseGone | VersionConflictError):
                # Another holder has the turn: the key of a call it may never make must not be used.
                raise LeaseLostError(self._run.turn.id, self._lease_id) from self._failure
            if self._failure is not None:
                raise self._failure

    def raise_if_failed(self) -> None:
        """After the tool: nothing it did or returned is kept if its call could not be saved."""
        failure = self._failure
        if isinstance(failure, LeaseGone | VersionConflictError):
            raise LeaseGone from failure
        if failure is not None:
            raise failure


def _action_summary(suspension: Suspension) -> dict[str, Any]:
    """What a notice may say of one pending decision: ids and names, never arguments or form data."""
    return {
        "type": suspension.type.value,
        "actionId": suspension.correlation_id,
        "formKey": suspension.metadata.get("formKey"),
        "toolName": suspension.metadata.get("toolName"),
        "expiresAt": suspension.expires_at,
    }


#: ``RetryState.reason`` of a turn whose tool polls again later (:class:`PollLater`), not of a failure
TOOL_POLL = "tool_poll"


def _input_round(state: ToolCallState) -> InputRound:
    """What a replayed tool sees of its round (a question nobody settled, which cannot happen, reads as cancel)."""
    answers = {
        key: RoundAnswer(RoundAction(answer.get("action", "cancel")), answer.get("content"))
        for key, answer in (state.round_answers or {}).items()
    }
    return InputRound(state=copy.deepcopy(state.round_state or {}), answers=answers, number=state.rounds)


def _jsonable(value: Any) -> Any:
    try:
        return to_jsonable_python(value)
    except (TypeError, ValueError):
        return str(value)
