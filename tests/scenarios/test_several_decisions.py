"""Several decisions at once: one model message with calls that need a person and calls that need nobody.

The batch of the demo assistant — two refunds to approve, a form the model asks for, a ticket whose tool asks
for its form — plus a lookup that needs nobody. Every backend (in memory, DynamoDB Local) runs the same rules:
the lookup runs once, at once; every other call gets its card at once; each card is answered on its own; the
turn resumes once, after the last answer (or after each, by policy); approve with edits, respond, fingerprints.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agentturn import (
    Agent,
    AiMessage,
    ApprovalMessage,
    ChatRequest,
    EventType,
    ExecutionPolicy,
    FormMessage,
    FormValidationError,
    InvalidResumeError,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolApprovalDecision,
    ToolCall,
    ToolContext,
    ToolMessage,
    Turn,
    TurnStatus,
    UserInputTool,
    require_form,
)
from agentturn.errors import RefusalReason
from agentturn.state.turn import arguments_fingerprint
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import MEETING_DATA, SUPPORT_DATA, ai_calls, meeting_form, support_form

REFUND_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"orderId": {"type": "string", "minLength": 1}, "amount": {"type": "number", "minimum": 0}},
    "required": ["orderId", "amount"],
}

BATCH = ai_calls(
    ("call-r1", "issue_refund", {"orderId": "O-1", "amount": 40}),
    ("call-lookup", "lookup_order", {"orderId": "O-1"}),
    ("call-r2", "issue_refund", {"orderId": "O-2", "amount": 10}),
    ("call-form", "request_user_input", {"formKey": "meeting_room_booking"}),
    ("call-ticket", "create_ticket", {"title": "login down"}),
)
WAITING = ["call-r1", "call-r2", "call-form", "call-ticket"]


class Calls:
    """What the tools did, and what the model was shown each time it was asked."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.arguments: dict[str, dict[str, Any]] = {}
        self.model_requests: list[list[str]] = []


def batch_agent(calls: Calls, policy: ExecutionPolicy | None = None) -> Agent:
    def model(request: ChatRequest) -> AiMessage:
        calls.model_requests.append([m.type for m in request.messages])
        if isinstance(request.messages[-1], ToolMessage):
            done = sorted(m.tool_call_id for m in request.messages if isinstance(m, ToolMessage))
            return AiMessage(content=f"results for {done}")
        return BATCH

    def issue_refund(arguments: dict[str, Any]) -> dict[str, Any]:
        call_id = ToolContext.current().tool_call_id
        calls.runs[call_id] += 1
        calls.arguments[call_id] = arguments
        return {"refunded": arguments["amount"], "orderId": arguments["orderId"]}

    def lookup_order(arguments: dict[str, Any]) -> dict[str, Any]:
        calls.runs["call-lookup"] += 1
        return {"orderId": arguments["orderId"], "status": "shipped"}

    def create_ticket(arguments: dict[str, Any]) -> dict[str, Any]:
        calls.runs["create_ticket:attempt"] += 1
        details = require_form(support_form())
        calls.runs["call-ticket"] += 1
        return {"ticket": "T-1", **details}

    def approval(turn: Turn, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
        if call.name == "issue_refund":
            return ToolApprovalDecision.require_approval(f"refund {call.arguments['amount']}?")
        return ToolApprovalDecision.allow()

    return Agent(
        id="batch-agent",
        instructions="",
        chat_model=ScriptedChatModel(model),
        tools=[
            UserInputTool(forms=[meeting_form()]),
            Tool("issue_refund", "refund", issue_refund, parameters=REFUND_PARAMETERS),
            Tool("lookup_order", "lookup", lookup_order),
            Tool("create_ticket", "ticket", create_ticket),
        ],
        approval_policy=approval,
        policy=policy or ExecutionPolicy(),
    )


def _answers() -> dict[str, ResumeCommand]:
    return {
        "call-r1": ResumeCommand.approve_tool("call-r1"),
        "call-r2": ResumeCommand.reject_tool("call-r2", "not this one"),
        "call-form": ResumeCommand.submit_form("call-form", MEETING_DATA),
        "call-ticket": ResumeCommand.submit_form("call-ticket", SUPPORT_DATA),
    }


def _cards(backend: Backend, conversation: str) -> list[tuple[str, str]]:
    return [
        (m.action_id, m.status.value)
        for m in backend.memory(conversation).get_messages()
        if isinstance(m, FormMessage | ApprovalMessage)
    ]


def test_every_call_that_needs_a_person_gets_its_card_at_once_and_the_rest_runs_once(backend: Backend) -> None:
    # GIVEN a model message with two approvals, a lookup, a form the model asks for and a tool that asks for one
    calls = Calls()
    agent = batch_agent(calls)
    runner = backend.runner([agent])

    # WHEN the turn runs
    waiting = runner.run(agent, "conv", "do it all")

    # THEN the lookup ran once, the ticket tool asked for its form (before any side effect), and the turn waits
    # on all four decisions, in the order of the calls, each with a PENDING card in the timeline
    assert calls.runs == Counter({"call-lookup": 1, "create_ticket:attempt": 1})
    assert waiting.status is TurnStatus.WAITING_FOR_APPROVAL
    assert [s.correlation_id for s in waiting.suspensions] == WAITING
    assert waiting.suspension is not None and waiting.suspension.correlation_id == "call-r1"
    assert [s.input_target for s in waiting.suspensions] == [None, None, "MODEL", "TOOL"]
    assert _cards(backend, "conv") == [(a, "PENDING") for a in WAITING]
    assert [m.tool_call_id for m in waiting.messages if isinstance(m, ToolMessage)] == ["call-lookup"]
    assert len(calls.model_requests) == 1
    suspended = [e for e in backend.events if e.type is EventType.TURN_SUSPENDED]
    assert len(suspended) == 1 and list(suspended[0].data["actionIds"]) == WAITING

    # WHEN the cards are answered one by one, out of order
    answers = _answers()
    for action in ("call-ticket", "call-r2", "call-r1"):
        turn = runner.submit_resume(waiting.id, answers[action])
        # THEN until the last answer the turn keeps waiting on the others, and nothing runs
        assert turn.status.is_blocked, action
        assert action not in [s.correlation_id for s in turn.suspensions]
    assert [s.correlation_id for s in turn.suspensions] == ["call-form"]
    assert turn.status is TurnStatus.WAITING_FOR_USER
    assert calls.runs == Counter({"call-lookup": 1, "create_ticket:attempt": 1})
    assert len(calls.model_requests) == 1

    # WHEN the last card is answered
    last = runner.submit_resume(waiting.id, answers["call-form"])
    assert last.status is TurnStatus.RUNNING
    done = runner.run_turn(waiting.id)

    # THEN the turn resumed once: the approved refund ran once, the ticket tool was replayed once with its
    # form, the rejected refund never ran, and the model was asked once more, with all five results
    assert done.status is TurnStatus.COMPLETED, done.error
    assert calls.runs == Counter({"call-lookup": 1, "call-r1": 1, "create_ticket:attempt": 2, "call-ticket": 1})
    assert len(calls.model_requests) == 2
    results = [m.tool_call_id for m in done.messages if isinstance(m, ToolMessage)]
    assert sorted(results) == sorted(["call-lookup", *WAITING]) and len(results) == 5
    assert done.final_output == f"results for {sorted(['call-lookup', *WAITING])}"
    assert _cards(backend, "conv") == [
        ("call-r1", "APPROVED"),
        ("call-r2", "REJECTED"),
        ("call-form", "SUBMITTED"),
        ("call-ticket", "SUBMITTED"),
    ]
    # AND four answers were accepted, and the turn resumed once
    submitted = [e for e in backend.events if e.type is EventType.INPUT_SUBMITTED]
    assert [list(e.data["pending"]) for e in submitted] == [
        ["call-r1", "call-r2", "call-form"],
        ["call-r1", "call-form"],
        ["call-form"],
        [],
    ]
    resumed = [e for e in backend.events if e.type is EventType.TURN_RESUMED]
    assert [e.data["actionId"] for e in resumed] == ["call-form"]


def test_an_answered_card_cannot_be_answered_again_while_the_others_wait(backend: Backend) -> None:
    # GIVEN the batch waiting, one refund already approved
    calls = Calls()
    agent = batch_agent(calls)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "do it all")
    after_one = runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r1"))

    # WHEN the same card is answered again (rejected this time), and an unknown action is named
    # THEN both are refused and nothing changes
    with pytest.raises(InvalidResumeError) as again:
        runner.submit_resume(waiting.id, ResumeCommand.reject_tool("call-r1", "changed my mind"))
    assert again.value.reason is RefusalReason.ACTION_NOT_PENDING
    with pytest.raises(InvalidResumeError) as unknown:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-nope"))
    assert unknown.value.reason is RefusalReason.UNKNOWN_ACTION
    assert backend.store.load(waiting.id).version == after_one.version
    # AND a form answer to an approval card is the wrong kind of answer
    with pytest.raises(InvalidResumeError) as wrong:
        runner.submit_resume(waiting.id, ResumeCommand.submit_form("call-r2", {}))
    assert wrong.value.reason is RefusalReason.WRONG_COMMAND


def test_resume_after_each_runs_an_approved_call_at_once_and_asks_the_model_only_at_the_end(
    backend: Backend,
) -> None:
    # GIVEN the batch waiting, under a policy that resumes after each answer
    calls = Calls()
    agent = batch_agent(calls, ExecutionPolicy(resume_after="each"))
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "do it all")
    assert [s.resume_after for s in waiting.suspensions] == ["each"] * 4

    # WHEN one refund is approved
    turn = runner.resume(waiting.id, ResumeCommand.approve_tool("call-r1"))

    # THEN it ran at once, and the turn waits again on the three others without asking the model
    assert calls.runs["call-r1"] == 1
    assert turn.status is TurnStatus.WAITING_FOR_APPROVAL
    assert [s.correlation_id for s in turn.suspensions] == ["call-r2", "call-form", "call-ticket"]
    assert len(calls.model_requests) == 1

    # WHEN a reject leaves nothing to run, the turn does not even go to a worker
    turn = runner.submit_resume(waiting.id, ResumeCommand.reject_tool("call-r2"))
    assert turn.status is TurnStatus.WAITING_FOR_USER

    # WHEN the rest are answered
    turn = runner.resume(waiting.id, ResumeCommand.submit_form("call-ticket", SUPPORT_DATA))
    assert calls.runs["call-ticket"] == 1 and turn.status is TurnStatus.WAITING_FOR_USER
    done = runner.resume(waiting.id, ResumeCommand.submit_form("call-form", MEETING_DATA))

    # THEN each call ran once and the model was asked once more, at the end
    assert done.status is TurnStatus.COMPLETED
    assert calls.runs == Counter({"call-lookup": 1, "call-r1": 1, "create_ticket:attempt": 2, "call-ticket": 1})
    assert len(calls.model_requests) == 2


def test_approve_with_edits_runs_the_tool_with_them_and_tells_the_model(backend: Backend) -> None:
    # GIVEN the batch waiting
    calls = Calls()
    agent = batch_agent(calls)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "do it all")
    r1 = waiting.suspension_for("call-r1")
    assert r1 is not None and r1.parameters_schema == REFUND_PARAMETERS
    assert r1.arguments_fingerprint == arguments_fingerprint({"orderId": "O-1", "amount": 40})
    before = backend.store.load(waiting.id).version

    # WHEN edited arguments that break the tool's parameter schema are sent, THEN they are refused, nothing changes
    with pytest.raises(FormValidationError) as invalid:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r1", {"orderId": "O-1", "amount": -5}))
    assert [e["path"] for e in invalid.value.errors] == ["/amount"]
    with pytest.raises(FormValidationError) as undeclared:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r1", {"orderId": "O-1", "amount": 1, "x": 1}))
    assert [e["path"] for e in undeclared.value.errors] == ["/x"]
    assert backend.store.load(waiting.id).version == before

    # WHEN the person approves with a smaller amount (naming the arguments they saw) and answers the rest
    edited = {"orderId": "O-1", "amount": 25}
    runner.submit_resume(
        waiting.id,
        ResumeCommand.approve_tool("call-r1", edited, arguments_fingerprint=r1.arguments_fingerprint),
    )
    for action, command in _answers().items():
        if action != "call-r1":
            runner.submit_resume(waiting.id, command)
    done = runner.run_turn(waiting.id)

    # THEN the tool ran once with the edited arguments, and its result tells the model what a person changed
    assert done.status is TurnStatus.COMPLETED
    assert calls.arguments["call-r1"] == edited
    result = next(m for m in done.messages if isinstance(m, ToolMessage) and m.tool_call_id == "call-r1")
    assert isinstance(result.content, dict)
    assert result.content["status"] == "edited"
    assert result.content["originalArguments"] == {"orderId": "O-1", "amount": 40}
    assert result.content["arguments"] == edited
    assert result.content["result"] == {"refunded": 25, "orderId": "O-1"}
    # AND the card shows both the original and the edited arguments
    card = backend.memory("conv").get_message(f"{waiting.id}:approval:call-r1")
    assert isinstance(card, ApprovalMessage)
    assert card.status == "APPROVED" and card.arguments == {"orderId": "O-1", "amount": 40}
    assert card.edited_arguments == edited
    # AND the model's own message still says what the model proposed
    ai = next(m for m in done.messages if isinstance(m, AiMessage) and m.tool_calls)
    assert ai.tool_calls[0].arguments == {"orderId": "O-1", "amount": 40}


def test_an_approval_for_other_arguments_than_the_card_shows_is_refused(backend: Backend) -> None:
    # GIVEN the batch waiting
    calls = Calls()
    agent = batch_agent(calls)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "do it all")
    before = backend.store.load(waiting.id)

    # WHEN an approval names the fingerprint of other arguments (the card of the other refund, say)
    other = arguments_fingerprint({"orderId": "O-2", "amount": 10})
    with pytest.raises(InvalidResumeError) as refused:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r1", arguments_fingerprint=other))

    # THEN it is refused and nothing changed; with the right fingerprint it is accepted
    assert refused.value.reason is RefusalReason.ARGUMENTS_CHANGED
    assert backend.store.load(waiting.id).version == before.version
    right = arguments_fingerprint({"orderId": "O-1", "amount": 40})
    accepted = runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r1", arguments_fingerprint=right))
    assert "call-r1" not in [s.correlation_id for s in accepted.suspensions]


def test_respond_answers_in_the_tools_place_and_the_tool_never_runs(backend: Backend) -> None:
    # GIVEN the batch waiting
    calls = Calls()
    agent = batch_agent(calls)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "do it all")

    # WHEN a person tries to respond in place of a form, THEN that is the wrong kind of answer
    with pytest.raises(InvalidResumeError) as wrong:
        runner.submit_resume(waiting.id, ResumeCommand.respond("call-form", "6 people"))
    assert wrong.value.reason is RefusalReason.WRONG_COMMAND

    # WHEN a person answers for the first refund, and the rest are answered
    answer = {"refunded": 0, "note": "already refunded by phone"}
    runner.submit_resume(waiting.id, ResumeCommand.respond("call-r1", answer))
    for action, command in _answers().items():
        if action != "call-r1":
            runner.submit_resume(waiting.id, command)
    done = runner.run_turn(waiting.id)

    # THEN the refund tool never ran for it; the model read the person's answer as its result, marked as theirs
    assert done.status is TurnStatus.COMPLETED
    assert "call-r1" not in calls.runs
    result = next(m for m in done.messages if isinstance(m, ToolMessage) and m.tool_call_id == "call-r1")
    assert isinstance(result.content, dict) and result.metadata == {"writtenBy": "person"}
    assert (result.content["status"], result.content["response"]) == ("answered_by_person", answer)
    card = backend.memory("conv").get_message(f"{waiting.id}:approval:call-r1")
    assert isinstance(card, ApprovalMessage) and card.status == "RESPONDED" and card.response == answer


def test_cancel_closes_every_pending_card(backend: Backend) -> None:
    # GIVEN the batch waiting, one card answered
    calls = Calls()
    agent = batch_agent(calls)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "do it all")
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r1"))

    # WHEN the turn is cancelled
    cancelled = runner.cancel(waiting.id)

    # THEN every card still pending is CANCELLED, and no approved call ran
    assert cancelled.status is TurnStatus.CANCELLED and cancelled.suspensions == []
    assert _cards(backend, "conv") == [
        ("call-r1", "APPROVED"),
        ("call-r2", "CANCELLED"),
        ("call-form", "CANCELLED"),
        ("call-ticket", "CANCELLED"),
    ]
    assert "call-r1" not in calls.runs


def test_expired_waits_each_get_an_expired_result_and_the_turn_resumes_once(backend: Backend) -> None:
    # GIVEN the batch waiting under an input timeout, two cards answered
    calls = Calls()
    agent = batch_agent(calls, ExecutionPolicy(input_timeout=60))
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "do it all")
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r1"))
    runner.submit_resume(waiting.id, ResumeCommand.submit_form("call-form", MEETING_DATA))

    # WHEN the time runs out and the sweeper acts
    backend.clock.advance(61)
    resumed = runner.expire_overdue()

    # THEN the two unanswered waits expired together and the turn is runnable once; answers are kept
    assert [t.id for t in resumed] == [waiting.id]
    done = runner.run_turn(waiting.id)
    assert done.status is TurnStatus.COMPLETED
    assert calls.runs["call-r1"] == 1 and "call-ticket" not in calls.runs
    assert _cards(backend, "conv") == [
        ("call-r1", "APPROVED"),
        ("call-r2", "EXPIRED"),
        ("call-form", "SUBMITTED"),
        ("call-ticket", "EXPIRED"),
    ]


def test_a_single_suspension_snapshot_of_schema_version_1_still_loads() -> None:
    # GIVEN a stored turn of the first schema, with one "suspension"
    stored = {
        "schemaVersion": 1,
        "id": "t",
        "conversationId": "c",
        "agentId": "a",
        "agentVersion": "1",
        "status": "WAITING_FOR_APPROVAL",
        "suspension": {"type": "TOOL_APPROVAL", "correlationId": "call-1", "metadata": {"arguments": {"a": 1}}},
    }
    # WHEN it is read THEN its one wait is the list's only one, and its fingerprint is that of its arguments
    turn = Turn.model_validate(stored)
    assert [s.correlation_id for s in turn.suspensions] == ["call-1"]
    assert turn.suspension is not None and turn.suspension.arguments_fingerprint == arguments_fingerprint({"a": 1})
