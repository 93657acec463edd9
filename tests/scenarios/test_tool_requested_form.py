"""Entry point 2: a business tool raises FormRequired and is replayed from the start with the submitted data."""

from __future__ import annotations

from typing import Any

from agentturn import (
    Agent,
    EventType,
    ExecutionPolicy,
    FormMessage,
    FormRequired,
    FormStatus,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolContext,
    ToolMessage,
    TurnPhase,
    TurnStatus,
    UserInputTool,
    Worker,
)
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import (
    SUPPORT_DATA,
    SUPPORT_SCHEMA,
    Ledger,
    ai_calls,
    final_from_last_tool,
    reply_after_tools,
    support_form,
    support_ticket_tool_function,
)

TICKET_CALL = ai_calls(("call-456", "create_support_ticket", {"title": "登录故障", "priority": "HIGH"}))


def support_agent(ledger: Ledger, policy: ExecutionPolicy | None = None, **kwargs: Any) -> Agent:
    return Agent(
        id="support-agent",
        instructions="创建故障工单缺少必要信息时调用 request_user_input；不要猜测缺失字段。",
        chat_model=ScriptedChatModel(reply_after_tools(TICKET_CALL, final_from_last_tool)),
        tools=[
            UserInputTool(forms=[support_form()]),
            Tool("create_support_ticket", "创建故障工单", support_ticket_tool_function(ledger)),
        ],
        policy=policy,
        **kwargs,
    )


def test_support_ticket_end_to_end_with_replay(backend: Backend) -> None:
    # GIVEN the seed's support agent whose ticket tool needs two fields the user did not give
    ledger = Ledger()
    agent = support_agent(ledger)
    runner = backend.runner([agent])

    # WHEN the user asks for a ticket
    waiting = runner.run(agent, "conversation-1", "帮我创建一个高优先级的登录故障工单。")

    # THEN the tool asked for the form before any side effect; the business call is still pending
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    assert waiting.phase is TurnPhase.TOOLS
    assert waiting.suspension is not None
    assert waiting.suspension.correlation_id == "call-456"
    assert waiting.suspension.metadata["inputTarget"] == "TOOL"
    assert waiting.suspension.metadata["toolName"] == "create_support_ticket"
    assert waiting.suspension.metadata["schema"] == SUPPORT_SCHEMA
    assert [c.name for c in waiting.pending_tool_calls] == ["create_support_ticket"]
    assert ledger.effects == {}

    # WHEN the form is submitted and a worker resumes the turn
    runner.submit_resume(
        waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA).with_metadata("submittedBy", "user-1001")
    )
    done = Worker(runner).process(waiting.id).turn

    # THEN the same tool ran again from the start with the data, once for real, under one idempotency key
    assert done is not None and done.status is TurnStatus.COMPLETED
    key = f"{waiting.id}:call-456"
    assert ledger.attempts == [key, key]
    assert ledger.effects == {key: {"title": "登录故障", "priority": "HIGH", **SUPPORT_DATA}}
    tool_messages = [m for m in done.messages if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 1
    assert tool_messages[0].tool_call_id == "call-456"
    assert tool_messages[0].tool_name == "create_support_ticket"
    # ... no request_user_input message was invented for the model: the tool's result is the only answer
    assert isinstance(tool_messages[0].content, dict) and tool_messages[0].content["ticketId"] == "T-1"
    card = backend.memory("conversation-1").get_message(f"{waiting.id}:input:call-456")
    assert isinstance(card, FormMessage)
    assert (card.status, card.submitted_values, card.input_target) == (FormStatus.SUBMITTED, SUPPORT_DATA, "TOOL")


OPTIONAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Extra details (optional)",
    "properties": {"note": {"type": "string", "title": "Note"}},
}


def test_an_empty_submission_of_an_all_optional_form_is_an_answer_not_a_new_request(backend: Backend) -> None:
    # GIVEN a tool that asks, with the README idiom, for a form whose fields are all optional
    ledger = Ledger()
    agent = Agent(
        id="support-agent",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(TICKET_CALL, final_from_last_tool)),
        tools=[Tool("create_support_ticket", "t", support_ticket_tool_function(ledger, OPTIONAL_SCHEMA))],
    )
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conversation-1", "ticket please")
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    # WHEN the person submits the form untouched: {} (what the console sends)
    done = runner.resume(waiting.id, ResumeCommand.user_input("call-456", {}))
    # THEN the replayed tool sees a submission (not "nobody was asked"), runs once, and the turn completes
    assert done.status is TurnStatus.COMPLETED, done.error
    key = f"{waiting.id}:call-456"
    assert ledger.effects == {key: {"title": "登录故障", "priority": "HIGH"}}


def test_form_submitted_tells_a_replay_from_a_first_run(backend: Backend) -> None:
    # GIVEN a tool that records what its context says on each run
    seen: list[tuple[bool, dict[str, Any]]] = []

    def tool(arguments: dict[str, Any]) -> Any:
        context = ToolContext.current()
        seen.append((context.form_submitted, context.submitted_form_data))
        if not context.form_submitted:
            raise FormRequired(support_form(OPTIONAL_SCHEMA))
        return {"ok": True}

    agent = Agent(
        id="support-agent",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(TICKET_CALL, final_from_last_tool)),
        tools=[Tool("create_support_ticket", "t", tool)],
    )
    runner = backend.runner([agent])
    waiting = runner.run(agent, "c", "ticket")
    # WHEN the empty form is submitted
    runner.resume(waiting.id, ResumeCommand.user_input("call-456", {}))
    # THEN the first run was not a submission, the replay was one, with empty data
    assert seen == [(False, {}), (True, {})]


def test_events_of_a_tool_requested_form_never_include_tool_failed(backend: Backend) -> None:
    # GIVEN the support agent and a listener recording every event
    agent = support_agent(Ledger())
    runner = backend.runner([agent])

    # WHEN the turn suspends on the tool's form
    runner.run(agent, "c", "ticket")

    # THEN the tool step reads TOOL_STARTED → TOOL_INPUT_REQUESTED (with the save of the call in between when the
    # tool asked for its idempotency key first), and the suspension comes after STEP_COMPLETED
    types = [e.type for e in backend.events]
    assert EventType.TOOL_FAILED not in types
    tool_started = types.index(EventType.TOOL_STARTED)
    assert next(t for t in types[tool_started + 1 :] if t is not EventType.SNAPSHOT_SAVED) is (
        EventType.TOOL_INPUT_REQUESTED
    )
    assert types[-2:] == [EventType.STEP_COMPLETED, EventType.TURN_SUSPENDED]
    assert types[0] is EventType.SNAPSHOT_SAVED and types[1] is EventType.TURN_STARTED
    sequences = [e.sequence for e in backend.events]
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
    # every step is bracketed
    assert types.count(EventType.STEP_STARTED) == types.count(EventType.STEP_COMPLETED) == 2


def test_raising_form_required_again_after_submission_fails_the_turn(backend: Backend) -> None:
    # GIVEN a tool that asks for the form whatever it is given
    def stubborn(arguments: dict[str, Any]) -> Any:
        raise FormRequired(support_form())

    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(TICKET_CALL, final_from_last_tool)),
        tools=[Tool("create_support_ticket", "", stubborn)],
    )
    runner = backend.runner([agent])
    waiting = runner.run(agent, "c", "ticket")

    # WHEN the form is submitted and the tool raises FormRequired again
    done = runner.resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))

    # THEN the turn fails with a clear protocol error instead of looping, and no card is left pending
    assert done.status is TurnStatus.FAILED
    assert done.error is not None and done.error.type == "form_required_again"
    assert "create_support_ticket" in done.error.message
    assert done.pending_cards() == []
    assert EventType.TOOL_FAILED in [e.type for e in backend.events]


def test_a_form_replay_is_the_same_logical_call_for_max_tool_calls(backend: Backend) -> None:
    # GIVEN a budget of exactly one tool call
    ledger = Ledger()
    agent = support_agent(ledger, policy=ExecutionPolicy(max_tool_calls=1))
    runner = backend.runner([agent])

    # WHEN the tool suspends for its form and is replayed after submission
    waiting = runner.run(agent, "c", "ticket")
    done = runner.resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))

    # THEN the replay did not consume a second call
    assert done.status is TurnStatus.COMPLETED
    assert done.tool_call_count == 1
    assert len(ledger.attempts) == 2


def test_a_second_business_call_over_budget_ends_the_turn(backend: Backend) -> None:
    # GIVEN a budget of one tool call and a model that makes two
    calls: list[str] = []
    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(
            [ai_calls(("c1", "noop", {}), ("c2", "noop", {}))],
        ),
        tools=[Tool("noop", "", lambda arguments: calls.append("x"))],
        policy=ExecutionPolicy(max_tool_calls=1),
    )
    # WHEN it runs
    done = backend.runner([agent]).run(agent, "c", "go")
    # THEN the first ran, the second did not, and the turn says why
    assert done.status is TurnStatus.BUDGET_EXCEEDED
    assert calls == ["x"]
    assert done.error is not None and done.error.type == "max_tool_calls"


def test_submitted_form_data_is_dropped_from_the_snapshot_once_the_tool_completed(backend: Backend) -> None:
    # GIVEN a turn that waited for a tool's form
    agent = support_agent(Ledger())
    runner = backend.runner([agent])
    waiting = runner.run(agent, "c", "ticket")
    runnable = runner.submit_resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))
    # (while the tool has not run yet, the snapshot must keep the data: the replay needs it)
    assert runnable.tool_states["call-456"].submitted_form_data == SUPPORT_DATA

    # WHEN the tool has completed
    done = runner.run_turn(waiting.id)

    # THEN the stored snapshot no longer holds the submitted data for the tool
    stored = runner.restore(done.id)
    assert stored.tool_states["call-456"].submitted_form_data is None


def test_tool_context_inside_a_tool(backend: Backend) -> None:
    # GIVEN a tool that reads its context and reports progress
    seen: list[tuple[str, str, str, bool]] = []

    def tool(arguments: dict[str, Any]) -> str:
        context = ToolContext.current()
        context.emit_progress("looking", {"step": 1})
        seen.append(
            (context.turn_id, context.tool_call_id, context.idempotency_key, context.is_cancellation_requested())
        )
        return "ok"

    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(ai_calls(("call-9", "t", {})), final_from_last_tool)),
        tools=[Tool("t", "", tool)],
    )
    # WHEN it runs
    done = backend.runner([agent]).run(agent, "c", "go")
    # THEN the context names the turn and the call, and progress became an event
    assert seen == [(done.id, "call-9", f"{done.id}:call-9", False)]
    progress = [e for e in backend.events if e.type is EventType.TOOL_PROGRESS]
    assert len(progress) == 1 and progress[0].data["stage"] == "looking" and progress[0].data["data"]["step"] == 1
