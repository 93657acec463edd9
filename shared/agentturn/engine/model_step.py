"""The model step: one call of the agent's chat model, and what its reply makes of the turn."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from agentturn.agents.registry import AgentRegistry
from agentturn.engine.call_ids import unique_call_ids
from agentturn.engine.events import EventType
from agentturn.engine.lease_keeper import LeaseKeeper
from agentturn.engine.retry import RetryPolicy
from agentturn.engine.sequencer import EventSequencer
from agentturn.engine.turn_run import LeaseGone, Run, agent_of
from agentturn.engine.turn_writer import TurnWriter
from agentturn.errors import ModelError
from agentturn.ports.chat_model import ChatModel, ChatRequest, can_stream, collect
from agentturn.ports.memory import ChatMemory
from agentturn.state.messages import AiMessage, ModelMessage, UserMessage
from agentturn.state.turn import Turn, TurnPhase, TurnStatus
from agentturn.timeline.identity import stamp

_log = logging.getLogger("agentturn.engine.runner")


class ModelStep:
    def __init__(
        self,
        agents: AgentRegistry,
        writer: TurnWriter,
        events: EventSequencer,
        leases: LeaseKeeper,
        retry: RetryPolicy,
        memory: Callable[[str], ChatMemory | None],
    ) -> None:
        self._agents = agents
        self._writer = writer
        self._events = events
        self._leases = leases
        self._retry = retry
        self._memory = memory

    def __call__(self, run: Run) -> None:
        agent = agent_of(run, self._agents)
        turn = run.turn
        if turn.iteration_count >= agent.policy.max_iterations:
            self._writer.finish(run, TurnStatus.MAX_ITERATIONS_REACHED, "max_iterations", "model call limit reached")
            return
        if turn.step_count >= agent.policy.max_steps:
            self._writer.finish(run, TurnStatus.MAX_STEPS_REACHED, "max_steps", "step limit reached")
            return
        self._events.emit(turn, EventType.STEP_STARTED, kind="MODEL", step=turn.step_count + 1)
        request = ChatRequest(system=agent.instructions, messages=self._context(run), tools=agent.tool_specs())
        self._events.emit(turn, EventType.MODEL_STARTED, messages=len(request.messages))
        try:
            with self._leases.heartbeat(run):
                reply = self._ask(agent.chat_model, request, turn)
        except LeaseGone:
            raise
        except Exception as exc:
            self._failed(run, exc)
            return
        turn.retry = None
        reply = unique_call_ids(turn, reply)
        self._events.emit(turn, EventType.MODEL_COMPLETED, toolCalls=[c.name for c in reply.tool_calls])
        turn.iteration_count += 1
        turn.step_count += 1
        turn.status = TurnStatus.RUNNING
        turn.messages.append(stamp(turn, reply))
        if reply.tool_calls:
            turn.pending_tool_calls = list(reply.tool_calls)
            turn.phase = TurnPhase.TOOLS
            # The tool step's next save carries this reply. Until then a crash only asks the model again: the
            # control tool and an unknown tool act on nothing, and a business tool's call is saved before the
            # tool learns its idempotency key (``ToolContext.idempotency_key``), the one thing of this reply it
            # can hand to the world. A tool that never asks for its key has no write a replay could recognise,
            # so saving its call first would buy nothing but a write.
            run.unsaved = True
            self._events.emit(run.turn, EventType.STEP_COMPLETED, kind="MODEL", ok=True)
            return
        turn.final_output = reply.content
        self._events.emit(turn, EventType.STEP_COMPLETED, kind="MODEL", ok=True)
        self._writer.finish(run, TurnStatus.COMPLETED)

    def _ask(self, model: ChatModel, request: ChatRequest, turn: Turn) -> AiMessage:
        """The model's reply; streamed when the model can stream, each text piece told as MODEL_TEXT_DELTA.

        The reply kept is the stream's final message, so a turn ends in the same state either way. A stream
        that fails midway fails like a call (the pieces already told are only a preview: nothing stored).
        """
        if not can_stream(model):
            return model.chat(request)
        call = turn.iteration_count + 1
        index = 0

        def told(text: str) -> None:
            nonlocal index
            self._events.emit_transient(turn, EventType.MODEL_TEXT_DELTA, text=text, index=index, call=call)
            index += 1

        return collect(model.stream(request), told)  # type: ignore[attr-defined]

    def _context(self, run: Run) -> list[ModelMessage]:
        """The conversation's recent history (the agent's window) followed by this turn's messages.

        The history is read once per run: the turn holds its conversation while it runs (and a start that took
        it over made the previous turn's timeline whole first), so no other turn's messages change until the
        run ends, and every later model call of the run would read the same ones again.
        """
        if run.history is None:
            self.read_history(run)
        return [*(run.history or []), *run.turn.messages]

    def read_history(self, run: Run) -> None:
        """Set ``run.history``: the agent's window of the conversation before this turn (read once per run)."""
        turn = run.turn
        window = agent_of(run, self._agents).policy.context_window
        memory = self._memory(turn.conversation_id)
        if memory is None or window <= 0:
            run.history = []
            return
        fetched = memory.get_model_messages(window + len(turn.messages))
        run.history = context_history(fetched, turn.id, window)

    def _failed(self, run: Run, exc: Exception) -> None:
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
        self._events.emit(
            turn,
            EventType.MODEL_FAILED,
            kind=kind,
            retryable=retryable,
            attempt=attempt,
            maxAttempts=self._retry.max_attempts,
            error=message,
        )
        self._events.emit(turn, EventType.STEP_COMPLETED, kind="MODEL", ok=False)
        if not retryable:
            self._writer.finish(run, TurnStatus.FAILED, "model_error", message)
            return
        at_least = exc.retry_after if isinstance(exc, ModelError) else None
        self._writer.retry_later(run, "model_error", message, at_least=at_least, exhausted="model_retries_exhausted")


def context_history(fetched: Sequence[ModelMessage], turn_id: str, window: int) -> list[ModelMessage]:
    """The model's view of the conversation before turn ``turn_id``: the latest ``window`` of ``fetched`` (the
    conversation's latest model-visible messages) that are not the turn's own, opening on a user message."""
    history = [m for m in fetched if m.turn_id != turn_id][-window:] if window > 0 else []
    # A window must not open on a tool result or a dangling tool call: start at a user message.
    while history and not isinstance(history[0], UserMessage):
        history.pop(0)
    return history
