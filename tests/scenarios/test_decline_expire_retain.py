"""Beyond the seed: a person declines a form, nobody answers in time, submitted data is forgotten."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentturn import (
    Agent,
    AiMessage,
    ApprovalMessage,
    ApprovalStatus,
    ChatRequest,
    ExecutionPolicy,
    FormMessage,
    FormStatus,
    InvalidResumeError,
    ResumeCommand,
    ScriptedChatModel,
    Suspension,
    Tool,
    ToolApprovalDecision,
    ToolMessage,
    TurnStatus,
    UserInputTool,
    Worker,
)
from agentturn.aws import tables
from agentturn.aws.body_codec import BODY, BODY_REF
from agentturn.aws.chat_memory import DynamoDBChatMemory
from agentturn.state.messages import form_message_id
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

ASK = ai_calls(("call-1", "request_user_input", {"formKey": "support_ticket_details"}))
TICKET = ai_calls(("call-1", "create_support_ticket", {"title": "登录故障"}))


def model_form_agent(policy: ExecutionPolicy | None = None) -> Agent:
    return Agent(
        id="model-form",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(ASK, final_from_last_tool)),
        tools=[UserInputTool(forms=[support_form()])],
        policy=policy,
    )


def tool_form_agent(ledger: Ledger, policy: ExecutionPolicy | None = None) -> Agent:
    return Agent(
        id="tool-form",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(TICKET, final_from_last_tool)),
        tools=[Tool("create_support_ticket", "", support_ticket_tool_function(ledger))],
        policy=policy,
    )


def card(backend: Backend, turn_id: str, kind: str = "input") -> Any:
    return backend.memory("conv").get_message(f"{turn_id}:{kind}:call-1")


def test_declining_a_model_requested_form_tells_the_model(backend: Backend) -> None:
    # GIVEN the model asked for a form
    agent = model_form_agent()
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    # WHEN the person closes it instead of filling it in
    done = runner.resume(
        waiting.id, ResumeCommand.decline_input("call-1", "not now").with_metadata("submittedBy", "u1")
    )
    # THEN the model got "declined" for its original call and answered; the card is DECLINED and read-only
    assert done.status is TurnStatus.COMPLETED
    result = next(m for m in done.messages if isinstance(m, ToolMessage))
    assert result.tool_call_id == "call-1"
    assert result.content == {"status": "declined", "formKey": "support_ticket_details", "reason": "not now"}
    form = card(backend, waiting.id)
    assert isinstance(form, FormMessage)
    assert (form.status, form.actions, form.decline_reason, form.submitted_by) == (
        FormStatus.DECLINED,
        [],
        "not now",
        "u1",
    )


def test_declining_a_tool_requested_form_does_not_replay_the_tool(backend: Backend) -> None:
    # GIVEN a tool that asked for a form
    ledger = Ledger()
    agent = tool_form_agent(ledger)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    # WHEN the person declines
    done = runner.resume(waiting.id, ResumeCommand.decline_input("call-1"))
    # THEN the tool ran only its first (side-effect-free) attempt, and the model got an error for the call
    assert ledger.attempts == [f"{waiting.id}:call-1"]
    assert ledger.effects == {}
    result = next(m for m in done.messages if isinstance(m, ToolMessage))
    assert isinstance(result.content, dict)
    assert (result.content["status"], result.content["error"]) == ("error", "input_declined")
    assert "declined" in result.content["message"]
    assert card(backend, waiting.id).status is FormStatus.DECLINED
    # ... and a later submission of that action is refused
    with pytest.raises(InvalidResumeError):
        runner.submit_resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))


def test_an_expired_form_goes_back_to_the_model(backend: Backend) -> None:
    # GIVEN a form with a one-hour input timeout
    agent = model_form_agent(ExecutionPolicy(input_timeout=3600))
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    assert waiting.suspension is not None and waiting.suspension.expires_at is not None
    assert card(backend, waiting.id).expires_at is not None

    # WHEN the sweeper looks before the deadline, nothing happens
    assert runner.expire_overdue() == []
    backend.clock.advance(3601)
    # WHEN a submission arrives after the deadline, it is refused and changes nothing
    before = backend.store.load(waiting.id)
    with pytest.raises(InvalidResumeError) as late:
        runner.submit_resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    assert late.value.reason == "input_expired"
    assert backend.store.load(waiting.id) == before

    # WHEN the sweeper runs after the deadline
    runnable = runner.expire_overdue()
    # THEN the wait was closed: the call got "expired", the card is EXPIRED, and a worker finishes the turn
    assert [t.id for t in runnable] == [waiting.id]
    assert card(backend, waiting.id).status is FormStatus.EXPIRED
    done = Worker(runner).process(waiting.id).turn
    assert done is not None and done.status is TurnStatus.COMPLETED
    result = next(m for m in done.messages if isinstance(m, ToolMessage))
    assert result.content == {"status": "expired", "formKey": "support_ticket_details", "reason": None}
    # ... and expiring again is harmless
    assert runner.expire(waiting.id).status is TurnStatus.COMPLETED


def test_a_turn_level_timeout_overrides_the_agent_and_can_cancel(backend: Backend) -> None:
    # GIVEN an agent that cancels on expiry, and a turn whose own timeout is one minute
    agent = model_form_agent(ExecutionPolicy(input_timeout=86400, on_input_timeout="cancel"))
    runner = backend.runner([agent])
    turn = runner.start(agent, "conv", "ticket")
    stored = backend.store.load(turn.id)
    stored.input_timeout = 60
    backend.store.save(stored, expected_version=stored.version)
    waiting = runner.run_turn(turn.id)
    # WHEN a minute passes and the sweeper runs
    backend.clock.advance(61)
    assert runner.expire_overdue() == []
    # THEN the turn ended CANCELLED (the agent's choice) and its card is read-only
    done = backend.store.load(waiting.id)
    assert done.status is TurnStatus.CANCELLED
    assert done.error is not None and done.error.type == "input_expired"
    assert card(backend, waiting.id).status is FormStatus.CANCELLED


def test_an_expired_approval_never_runs_the_tool(backend: Backend) -> None:
    # GIVEN a refund waiting for approval with a timeout
    refunds: list[Any] = []
    agent = Agent(
        id="refund",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(ai_calls(("call-1", "refund", {})), final_from_last_tool)),
        tools=[Tool("refund", "", refunds.append)],
        approval_policy=lambda turn, call, tool: ToolApprovalDecision.require_approval("ok?"),
        policy=ExecutionPolicy(input_timeout=10),
    )
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "refund")
    # WHEN nobody decides in time
    backend.clock.advance(11)
    runner.expire_overdue()
    done = runner.run_turn(waiting.id)
    # THEN the refund never ran; the card is EXPIRED; the model was told
    assert refunds == []
    approval = card(backend, waiting.id, "approval")
    assert isinstance(approval, ApprovalMessage) and approval.status is ApprovalStatus.EXPIRED
    result = next(m for m in done.messages if isinstance(m, ToolMessage))
    assert isinstance(result.content, dict) and result.content["status"] == "expired"


def test_a_plain_text_wait_that_expires_ends_the_turn(backend: Backend) -> None:
    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel([AiMessage(content="x")]),
        policy=ExecutionPolicy(input_timeout=5),
    )
    runner = backend.runner([agent])
    turn = runner.start(agent, "conv", "refund")
    waiting = runner.suspend(
        turn, Suspension.user_input("请提供订单号").model_copy(update={"expires_at": backend.clock() + 5})
    )
    backend.clock.advance(6)
    assert runner.expire(waiting.id).status is TurnStatus.CANCELLED


def test_submitted_values_leave_the_snapshot_but_stay_on_the_card(backend: Backend) -> None:
    # GIVEN a tool-requested form submitted and the turn completed
    agent = tool_form_agent(Ledger())
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    runner.resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    # THEN the stored snapshot holds the values nowhere — not for the tool, not on its copy of the card
    stored = backend.store.load(waiting.id)
    assert stored.tool_states["call-1"].submitted_form_data is None
    assert [c.submitted_values for c in stored.cards] == [None]
    assert "统一登录系统" not in stored.model_dump_json(exclude={"messages", "final_output"})
    # ... while the person still sees what they submitted
    assert card(backend, waiting.id).submitted_values == SUPPORT_DATA
    # ... and the terminal turn carries a retention deadline for the store's TTL
    assert stored.retain_until is not None and stored.retain_until > backend.clock()


def test_an_agent_can_redact_the_card_too(backend: Backend) -> None:
    # GIVEN an agent that must not keep submitted values even on the card
    agent = tool_form_agent(Ledger(), ExecutionPolicy(redact_submitted_values=True, retention=None))
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    done = runner.resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    # THEN once the tool completed, the card shows it was submitted, by whom, but not the values
    form = card(backend, waiting.id)
    assert (form.status, form.submitted_values, form.values_redacted) == (FormStatus.SUBMITTED, None, True)
    assert done.retain_until is None


def _stored_cards(backend: Backend, conversation_id: str, message_id: str) -> list[dict[str, Any]]:
    """Every stored copy of card ``message_id``, as JSON: on DynamoDB each item's body read raw (a group may
    hold a settled card's copy besides its own item), in memory the one entry."""
    memory = backend.memory
    if not isinstance(memory, DynamoDBChatMemory):
        return [
            m.model_dump(mode="json", by_alias=True)
            for m in memory(conversation_id).get_messages()
            if m.message_id == message_id
        ]
    items = memory.client.query(
        TableName=memory.table_name,
        KeyConditionExpression="#c = :c",
        ExpressionAttributeNames={"#c": tables.CONVERSATION_ID},
        ExpressionAttributeValues={":c": {"S": conversation_id}},
        ConsistentRead=True,
    )["Items"]
    entries: list[dict[str, Any]] = []
    for item in items:
        if BODY in item or BODY_REF in item:
            body = json.loads(memory.codec.decode(item, what="entry"))
            entries += body if isinstance(body, list) else [body]
    return [entry for entry in entries if entry.get("messageId") == message_id]


def test_a_redacted_card_leaves_no_stored_copy_that_shows_the_values(backend: Backend) -> None:
    # GIVEN an agent that redacts submitted values, and a tool-requested form answered on the worker's path
    agent = tool_form_agent(Ledger(), ExecutionPolicy(redact_submitted_values=True))
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    runner.submit_resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    # ... whose answered card reached the timeline with its values (the submit wrote it)
    assert any(c.get("submittedValues") for c in _stored_cards(backend, "conv", form_message_id(waiting.id, "call-1")))

    # WHEN the worker runs the turn to its end
    done = runner.run_turn(waiting.id)

    # THEN no stored copy of the card holds the values (neither its own item nor a group's), and the latest is
    # the redacted one
    assert done.status is TurnStatus.COMPLETED
    copies = _stored_cards(backend, "conv", form_message_id(waiting.id, "call-1"))
    assert copies and all(copy.get("submittedValues") is None for copy in copies)
    assert max(copies, key=lambda copy: copy["version"])["valuesRedacted"] is True


def test_model_requested_redaction_keeps_the_data_only_in_the_tool_result(backend: Backend) -> None:
    def model(request: ChatRequest) -> AiMessage:
        return ASK if len(request.messages) == 1 else AiMessage(content="ok")

    agent = Agent(
        id="m",
        instructions="",
        chat_model=ScriptedChatModel(model),
        tools=[UserInputTool(forms=[support_form()])],
        policy=ExecutionPolicy(redact_submitted_values=True),
    )
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    done = runner.resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    assert card(backend, waiting.id).values_redacted is True
    result = next(m for m in done.messages if isinstance(m, ToolMessage))
    assert isinstance(result.content, dict) and result.content["data"] == SUPPORT_DATA
