"""Who and what may resume a suspended turn: action ids, validation, terminal turns, races, other processes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    EventType,
    FormMessage,
    FormStatus,
    FormValidationError,
    IdempotencyConflictError,
    InvalidResumeError,
    ResumeCommand,
    ScriptedChatModel,
    Suspension,
    Tool,
    Turn,
    TurnStatus,
    UserInputTool,
    UserMessage,
    Worker,
)
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import (
    SUPPORT_DATA,
    Ledger,
    ai_calls,
    final_from_last_tool,
    reply_after_tools,
    support_form,
    support_ticket_tool_function,
)

ASK_FORM = ai_calls(("call-456", "request_user_input", {"formKey": "support_ticket_details"}))


def form_agent(version: str = "1") -> Agent:
    return Agent(
        id="support-agent",
        version=version,
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(ASK_FORM, final_from_last_tool)),
        tools=[UserInputTool(forms=[support_form()])],
    )


def waiting_turn(backend: Backend) -> tuple[Agent, Turn]:
    agent = form_agent()
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket please")
    return agent, backend.store.load(waiting.id)


def assert_unchanged(backend: Backend, before: Turn) -> None:
    """``before`` is a copy loaded from the store: the stored turn must be exactly that, still."""
    after = backend.store.load(before.id)
    assert after.version == before.version
    assert after.model_dump() == before.model_dump()


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (ResumeCommand.user_input("call-999", SUPPORT_DATA), "unknown_action"),
        (ResumeCommand.user_input("just some text"), "wrong_command"),
        (ResumeCommand.approve_tool("call-456"), "wrong_command"),
    ],
    ids=["wrong-action-id", "text-for-a-form", "approval-for-a-form"],
)
def test_a_command_that_does_not_fit_changes_nothing(backend: Backend, command: ResumeCommand, reason: str) -> None:
    # GIVEN a turn waiting on call-456's form
    agent, waiting = waiting_turn(backend)
    runner = backend.runner([agent])
    # WHEN a command that does not fit it is submitted
    with pytest.raises(InvalidResumeError) as refused:
        runner.submit_resume(waiting.id, command)
    # THEN it is refused with a precise reason and nothing stored changed
    assert refused.value.reason == reason
    assert_unchanged(backend, waiting)


def test_invalid_data_lists_every_problem_and_changes_nothing(backend: Backend) -> None:
    # GIVEN a waiting form
    agent, waiting = waiting_turn(backend)
    runner = backend.runner([agent])
    # WHEN data with a missing field, a wrong enum value and an undeclared field is submitted
    with pytest.raises(FormValidationError) as refused:
        runner.submit_resume(
            waiting.id, ResumeCommand.user_input("call-456", {"impactScope": "EVERYONE", "isAdmin": True})
        )
    # THEN each problem has its path and message, and nothing changed (the card is still PENDING)
    assert sorted(refused.value.errors, key=lambda e: e["path"]) == [
        {"path": "/affectedSystem", "message": "受影响系统 is required."},
        {"path": "/impactScope", "message": "影响范围 must be one of: “ONE_USER”, “PARTIAL_USERS”, “ALL_USERS”."},
        {"path": "/isAdmin", "message": "“isAdmin” is not a field of this form."},
    ]
    assert_unchanged(backend, waiting)
    card = backend.memory("conv").get_message(f"{waiting.id}:input:call-456")
    assert isinstance(card, FormMessage) and card.status is FormStatus.PENDING and card.version == 1


def test_duplicate_and_late_submissions_are_refused(backend: Backend) -> None:
    # GIVEN a form that was submitted once
    agent, waiting = waiting_turn(backend)
    runner = backend.runner([agent])
    runner.submit_resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))
    runnable = backend.store.load(waiting.id)

    # WHEN the same action is submitted again while the turn is runnable
    with pytest.raises(InvalidResumeError) as duplicate:
        runner.submit_resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))
    # THEN it is refused as not waiting, and nothing changed
    assert duplicate.value.reason == "not_waiting"
    assert_unchanged(backend, runnable)

    # WHEN the turn has completed and the action is submitted late
    assert runner.run_turn(waiting.id).status is TurnStatus.COMPLETED
    done = backend.store.load(waiting.id)
    with pytest.raises(InvalidResumeError) as late:
        runner.submit_resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))
    # THEN it is refused because the turn is terminal
    assert late.value.reason == "turn_terminal"
    assert_unchanged(backend, done)


def test_a_stale_action_id_of_an_earlier_form_does_not_resume_the_next_one(backend: Backend) -> None:
    # GIVEN a turn that asked for a form, got it, and now asks for the form again (a new call id)
    def model(request: ChatRequest) -> AiMessage:
        answered = sum(1 for m in request.messages if m.type == "tool")
        if answered == 0:
            return ASK_FORM
        if answered == 1:
            return ai_calls(("call-789", "request_user_input", {"formKey": "support_ticket_details"}))
        return AiMessage(content="thanks")

    agent = Agent(
        id="a", instructions="", chat_model=ScriptedChatModel(model), tools=[UserInputTool(forms=[support_form()])]
    )
    runner = backend.runner([agent])
    first = runner.run(agent, "conv", "go")
    runner.resume(first.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))
    second = backend.store.load(first.id)
    assert second.suspension is not None and second.suspension.correlation_id == "call-789"

    # WHEN the first action id is submitted again
    with pytest.raises(InvalidResumeError) as stale:
        runner.submit_resume(first.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))

    # THEN it is refused as no longer pending, and the waiting form is untouched
    assert stale.value.reason == "action_not_pending"
    assert_unchanged(backend, second)


def test_same_request_id_replays_and_a_different_body_is_refused(backend: Backend) -> None:
    # GIVEN a form submitted with a request id
    agent, waiting = waiting_turn(backend)
    runner = backend.runner([agent])
    command = ResumeCommand.user_input("call-456", SUPPORT_DATA).with_metadata("requestId", "req-789")
    runner.submit_resume(waiting.id, command)
    first = backend.store.load(waiting.id)

    # WHEN the same request is retried (even with other audit metadata)
    replay = runner.submit_resume(waiting.id, command.with_metadata("submittedBy", "someone-else"))
    # THEN it answers like the first time and applies nothing again
    assert replay.version == first.version
    assert replay.accepted_requests["req-789"].version == first.version

    # WHEN the same request id comes with different data
    other = ResumeCommand.user_input("call-456", {**SUPPORT_DATA, "impactScope": "ONE_USER"})
    with pytest.raises(IdempotencyConflictError):
        runner.submit_resume(waiting.id, other.with_metadata("requestId", "req-789"))
    # THEN it is refused and nothing changed
    assert_unchanged(backend, first)


def test_two_concurrent_submissions_exactly_one_wins(backend: Backend) -> None:
    # GIVEN a waiting form and two people submitting it at the same moment
    agent, waiting = waiting_turn(backend)
    runner = backend.runner([agent])
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def submit(system: str) -> None:
        barrier.wait()
        try:
            runner.submit_resume(
                waiting.id, ResumeCommand.user_input("call-456", {**SUPPORT_DATA, "affectedSystem": system})
            )
            outcomes.append("accepted")
        except InvalidResumeError as exc:
            outcomes.append(exc.reason)

    threads = [threading.Thread(target=submit, args=(name,)) for name in ("A", "B")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    # THEN exactly one was accepted and the other learned that the action is no longer pending
    assert sorted(outcomes) == ["accepted", "not_waiting"]
    stored = backend.store.load(waiting.id)
    assert stored.status is TurnStatus.RUNNING
    assert stored.version == waiting.version + 1


def test_a_second_runner_resumes_from_the_store(backend: Backend) -> None:
    # GIVEN a turn suspended by one runner (process A) that is then gone
    ledger = Ledger()

    def build() -> Agent:
        return Agent(
            id="support-agent",
            instructions="",
            chat_model=ScriptedChatModel(
                reply_after_tools(ai_calls(("call-456", "create_support_ticket", {"title": "x"})), final_from_last_tool)
            ),
            tools=[Tool("create_support_ticket", "", support_ticket_tool_function(ledger))],
        )

    first_process = backend.runner([build()])
    waiting = first_process.run(build(), "conv", "ticket")
    last_sequence = max(e.sequence for e in backend.events)

    # WHEN a new runner with freshly built agents (process B) submits and a worker there resumes
    backend.events.clear()
    second_process = backend.runner(lambda agent_id, version: build())
    second_process.submit_resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))
    done = Worker(second_process).process(waiting.id).turn

    # THEN the turn completes exactly where it stopped, and event numbers keep rising across processes
    assert done is not None and done.status is TurnStatus.COMPLETED
    assert len(ledger.effects) == 1
    assert min(e.sequence for e in backend.events) > last_sequence


def test_a_missing_agent_version_is_a_clear_error_not_a_fallback(backend: Backend) -> None:
    # GIVEN a turn started by version 1 of an agent, submitted, waiting for a worker
    agent, waiting = waiting_turn(backend)
    backend.runner([agent]).submit_resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))
    # WHEN a process that only knows version 2 picks it up
    runner = backend.runner([form_agent(version="2")])
    backend.events.clear()
    later = runner.run_turn(waiting.id)
    # THEN it does not continue it with another version: the turn stays runnable, to be tried again later
    assert later.status is TurnStatus.RUNNING
    assert later.retry is not None and later.retry.reason == "agent_unavailable"
    assert "UnknownAgentError" in later.retry.error and "'1'" in later.retry.error
    assert later.messages == backend.store.load(waiting.id).messages
    assert [e.type for e in backend.events] == [EventType.SNAPSHOT_SAVED, EventType.RETRY_SCHEDULED]


def test_plain_text_suspension_resumes_with_a_user_message_and_no_card(backend: Backend) -> None:
    # GIVEN a turn created without running and suspended at a plain-text wait point
    model = ScriptedChatModel(lambda request: AiMessage(content=f"got {request.messages[-1].content}"))  # type: ignore[union-attr]
    agent = Agent(id="a", instructions="", chat_model=model)
    runner = backend.runner([agent])
    turn = runner.start(agent, "conv", "退款")
    waiting = runner.suspend(turn, Suspension.user_input("请提供订单号"))
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    assert waiting.suspension is not None and waiting.suspension.message == "请提供订单号"

    # WHEN the person answers in text
    runner.submit_resume(waiting.id, ResumeCommand.user_input("订单号是 O-1001"))
    done = runner.run_turn(waiting.id)

    # THEN the model saw the answer as a user message, and no form card was ever made
    assert done.status is TurnStatus.COMPLETED
    assert isinstance(model.requests[-1].messages[-1], UserMessage)
    assert done.final_output == "got 订单号是 O-1001"
    assert not [m for m in backend.memory("conv").get_messages() if isinstance(m, FormMessage)]


def test_cancel_while_waiting_cancels_the_cards_and_refuses_later_submissions(backend: Backend) -> None:
    # GIVEN a waiting form
    agent, waiting = waiting_turn(backend)
    runner = backend.runner([agent])
    # WHEN the turn is cancelled
    cancelled = runner.cancel(waiting.id)
    # THEN it is CANCELLED, its card is CANCELLED and read-only, and a submission is refused
    assert cancelled.status is TurnStatus.CANCELLED
    card = backend.memory("conv").get_message(f"{waiting.id}:input:call-456")
    assert isinstance(card, FormMessage)
    assert card.status is FormStatus.CANCELLED and card.actions == []
    with pytest.raises(InvalidResumeError) as refused:
        runner.submit_resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))
    assert refused.value.reason == "turn_terminal"
    # ... and cancelling again is harmless
    assert runner.cancel(waiting.id).version == cancelled.version


def test_cancel_of_a_queued_turn_stops_it_before_any_work(backend: Backend) -> None:
    # GIVEN a submitted turn waiting in the queue for a worker
    ledger = Ledger()
    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(
            reply_after_tools(ai_calls(("call-456", "create_support_ticket", {})), final_from_last_tool)
        ),
        tools=[Tool("create_support_ticket", "", support_ticket_tool_function(ledger))],
    )
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    runner.submit_resume(waiting.id, ResumeCommand.user_input("call-456", SUPPORT_DATA))
    # WHEN it is cancelled before the worker gets it
    assert runner.cancel(waiting.id).status is TurnStatus.CANCELLED
    result = Worker(runner).process(waiting.id)
    # THEN the worker finds nothing to do and the tool never ran with the data
    assert result.outcome.value == "NOT_RUNNABLE"
    assert ledger.effects == {}


def test_cancellation_requested_during_a_tool_is_seen_by_the_tool_and_ends_the_turn(backend: Backend) -> None:
    # GIVEN a tool that is running when someone cancels the turn
    observed: list[bool] = []
    holder: dict[str, Any] = {}

    def slow_tool(arguments: dict[str, Any]) -> str:
        from agentturn import ToolContext

        holder["runner"].cancel(ToolContext.current().turn_id)
        observed.append(ToolContext.current().is_cancellation_requested())
        return "partial"

    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(ai_calls(("c1", "slow", {})), final_from_last_tool)),
        tools=[Tool("slow", "", slow_tool)],
    )
    runner = backend.runner([agent])
    holder["runner"] = runner
    # WHEN the turn runs
    done = runner.run(agent, "conv", "go")
    # THEN the tool could see the request, and the turn stopped at the next boundary instead of calling the model
    assert observed == [True]
    assert done.status is TurnStatus.CANCELLED
    assert done.iteration_count == 1
