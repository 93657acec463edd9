"""The model step over an in-memory store: limits, retries, the context it sends."""

from __future__ import annotations

from tests.unit.conftest import Parts

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    ExecutionPolicy,
    FormDefinition,
    ScriptedChatModel,
    Tool,
    ToolCall,
    TurnStatus,
    UserInputTool,
    UserMessage,
)
from agentturn.errors import ModelError, ModelErrorKind
from agentturn.state.messages import TimelineMessage
from agentturn.state.turn import TurnPhase


def failing(kind: ModelErrorKind, *, retryable: bool) -> ScriptedChatModel:
    def fail(request: ChatRequest) -> AiMessage:
        raise ModelError("nope", kind=kind, provider="test", model="m", retryable=retryable)

    return ScriptedChatModel(fail)


def test_a_reply_with_calls_moves_the_turn_to_its_tools_and_a_plain_one_completes_it(parts: Parts) -> None:
    # GIVEN a model that calls one of its agent's tools, then answers
    model = ScriptedChatModel(
        [AiMessage(tool_calls=[ToolCall(id="c1", name="t", arguments={})]), AiMessage(content="done")]
    )
    run = parts.new_run(Agent("a", "x", model, tools=[Tool("t", "acts", lambda arguments: "ok")]))

    # WHEN the model step runs once
    parts.model_step(run)

    # THEN the call is pending, the turn in its tool phase, and the reply left to the tool step's save (the
    # tool step saves it before the tool learns its idempotency key: see test_tool_step)
    assert [c.id for c in run.turn.pending_tool_calls] == ["c1"]
    assert run.turn.phase is TurnPhase.TOOLS
    assert parts.store.load(run.turn.id).pending_tool_calls == []
    assert run.unsaved

    # WHEN it runs again (the call answered meanwhile)
    run.turn.pending_tool_calls = []
    parts.model_step(run)

    # THEN the turn completed with the model's answer
    assert run.turn.status is TurnStatus.COMPLETED
    assert run.turn.final_output == "done"


def test_the_iteration_limit_ends_the_turn_without_calling_the_model(parts: Parts) -> None:
    # GIVEN a turn that already used its one allowed model call
    model = ScriptedChatModel([AiMessage(content="never")])
    run = parts.new_run(Agent("a", "x", model, policy=ExecutionPolicy(max_iterations=1)))
    run.turn.iteration_count = 1

    # WHEN the model step runs
    parts.model_step(run)

    # THEN the turn ended at its limit and the model was not asked
    assert run.turn.status is TurnStatus.MAX_ITERATIONS_REACHED
    assert len(model.requests) == 0


def test_a_throttled_model_is_tried_again_later_until_the_attempts_run_out(parts: Parts) -> None:
    # GIVEN a model that is always throttled (the runner allows 3 attempts)
    run = parts.new_run(Agent("a", "x", failing(ModelErrorKind.THROTTLED, retryable=True)))

    # WHEN the model step runs, once per due attempt
    parts.model_step(run)
    first = run.turn.model_copy(deep=True)
    for _ in range(2):
        assert run.turn.retry is not None and run.turn.retry.not_before is not None
        parts.clock.advance(run.turn.retry.not_before - parts.clock() + 1)
        parts.model_step(run)

    # THEN the first failure left it runnable with a backoff, and the last one ended it FAILED
    assert first.status is TurnStatus.RUNNING and first.retry is not None and first.retry.attempts == 1
    assert first.retry.not_before is not None and not first.is_due(first.retry.not_before - 1)
    assert run.turn.status is TurnStatus.FAILED
    assert run.turn.error is not None and run.turn.error.type == "model_retries_exhausted"
    assert parts.types().count("RETRY_SCHEDULED") == 2


def test_a_refused_request_fails_the_turn_at_once(parts: Parts) -> None:
    # GIVEN a model that refuses the request as invalid (retrying cannot help)
    run = parts.new_run(Agent("a", "x", failing(ModelErrorKind.INVALID_REQUEST, retryable=False)))

    # WHEN the model step runs
    parts.model_step(run)

    # THEN the turn failed with a model error, with no retry scheduled
    assert run.turn.status is TurnStatus.FAILED
    assert run.turn.error is not None and run.turn.error.type == "model_error"
    assert "RETRY_SCHEDULED" not in parts.types()


def test_the_history_window_never_opens_on_a_tool_result(parts: Parts) -> None:
    # GIVEN a conversation whose earlier turn ended with a tool call and its result, and a window of 2
    memory = parts.memory("c1")
    earlier: list[TimelineMessage] = [
        UserMessage(content="hi", message_id="e0", turn_id="old", sort_key="old#0"),
        AiMessage(
            tool_calls=[ToolCall(id="x", name="t", arguments={})], message_id="e1", turn_id="old", sort_key="old#1"
        ),
        UserMessage(content="again", message_id="e2", turn_id="old", sort_key="old#2"),
        AiMessage(content="ok", message_id="e3", turn_id="old", sort_key="old#3"),
    ]
    memory.append_all(earlier)
    model = ScriptedChatModel([AiMessage(content="done")])
    run = parts.new_run(Agent("a", "x", model, policy=ExecutionPolicy(context_window=3)))

    # WHEN the model step runs
    parts.model_step(run)

    # THEN the model saw the window from its first user message on, not the dangling call before it
    sent = model.requests[-1].messages
    assert [m.message_id for m in sent] == ["e2", "e3"]


def test_a_reply_that_asks_for_a_form_is_left_to_the_save_that_suspends_the_turn(parts: Parts) -> None:
    # GIVEN a model that asks for a form through the control tool
    form = FormDefinition("ticket", "ticket details", {"type": "object", "properties": {"title": {"type": "string"}}})
    ask = AiMessage(tool_calls=[ToolCall(id="c1", name="request_user_input", arguments={"formKey": "ticket"})])
    run = parts.new_run(Agent("a", "x", ScriptedChatModel([ask]), tools=[UserInputTool(forms=[form])]))
    saved_before = parts.store.load(run.turn.id).version

    # WHEN the model step runs
    parts.model_step(run)

    # THEN nothing was written (no tool of the agent acts before the tool step's save), and the run says so
    assert parts.store.load(run.turn.id).version == saved_before
    assert run.unsaved

    # WHEN the tool step settles the call
    parts.tool_step(run)

    # THEN one save holds the reply and the wait, and the timeline holds the reply before the card
    stored = parts.store.load(run.turn.id)
    assert stored.status is TurnStatus.WAITING_FOR_USER
    assert stored.version == saved_before + 1
    assert [m.type for m in stored.messages] == ["ai"]
    assert [m.type for m in parts.memory("c1").get_messages()] == ["ai", "agent_form"]
    assert not run.unsaved
