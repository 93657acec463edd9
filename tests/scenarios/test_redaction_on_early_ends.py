"""``redact_submitted_values`` on every end: a turn that ends before the tool that needed an answer runs
(cancelled, failed by a tool, out of budget or steps, expired) keeps no copy of what the person submitted —
neither in the snapshot nor in the timeline (the card's values, a tool result) — as read from the raw stored
items, on the memory backend and on DynamoDB Local."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    ExecutionPolicy,
    FormDefinition,
    FormMessage,
    FormStatus,
    InMemoryChatMemory,
    InMemoryTurnStore,
    ResumeCommand,
    Runner,
    ScriptedChatModel,
    Tool,
    ToolApprovalDecision,
    ToolCall,
    ToolMessage,
    Turn,
    TurnStatus,
    UserInputTool,
    require_form,
)
from agentturn.aws.chat_memory import DynamoDBChatMemory
from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.state.messages import form_message_id
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import ai_calls

#: What the person submits: no stored byte may hold it once the turn ended before its tool ran.
SSN = "078-05-1120"
KYC = FormDefinition(
    "kyc",
    "the customer's social security number",
    {"type": "object", "properties": {"ssn": {"type": "string"}}, "required": ["ssn"]},
)


def _open_account(fails: bool) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def open_account(arguments: dict[str, Any]) -> dict[str, Any]:
        details = require_form(KYC)
        if fails:
            raise RuntimeError("core banking is down")
        return {"account": "A-1", "checked": bool(details)}

    return open_account


def _model(*calls: tuple[str, str, dict[str, Any]]) -> ScriptedChatModel:
    def reply(request: ChatRequest) -> AiMessage:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return AiMessage(content="done")
        return ai_calls(*calls)

    return ScriptedChatModel(reply)


def _agent(*calls: tuple[str, str, dict[str, Any]], fails: bool = False, redact: bool = True, **policy: Any) -> Agent:
    def approval(turn: Turn, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
        if call.name == "refund":
            return ToolApprovalDecision.require_approval("refund?")
        return ToolApprovalDecision.allow()

    return Agent(
        id="bank",
        instructions="",
        chat_model=_model(*calls),
        tools=[
            Tool("open_account", "", _open_account(fails)),
            Tool("refund", "", lambda arguments: {"refunded": True}),
            UserInputTool(forms=[KYC]),
        ],
        policy=ExecutionPolicy(redact_submitted_values=redact, **policy),
        approval_policy=approval,
    )


OPEN = ("call-1", "open_account", {"name": "Ada"})


@dataclass(frozen=True)
class EarlyEnd:
    """A turn that gets the SSN, then ends before the tool that needed it runs."""

    agent: Agent
    #: answer the waiting turn (the SSN among the answers) and end it; returns the ended turn
    end: Callable[[Runner, Backend, Turn], Turn]
    status: TurnStatus


def _submit(runner: Runner, turn: Turn, action: str = "call-1") -> None:
    runner.submit_resume(turn.id, ResumeCommand.submit_form(action, {"ssn": SSN}))


def _cancel(runner: Runner, backend: Backend, turn: Turn) -> Turn:
    _submit(runner, turn)
    return runner.cancel(turn.id)


def _run_on(runner: Runner, backend: Backend, turn: Turn) -> Turn:
    _submit(runner, turn)
    return runner.run_turn(turn.id)


def _approve_then_run(runner: Runner, backend: Backend, turn: Turn) -> Turn:
    runner.submit_resume(turn.id, ResumeCommand.approve_tool("call-0"))
    return _run_on(runner, backend, turn)


def _expire(runner: Runner, backend: Backend, turn: Turn) -> Turn:
    _submit(runner, turn)
    backend.clock.advance(61)
    return runner.expire(turn.id)


EARLY_ENDS = {
    # a person cancels after answering, before the worker replays the tool
    "cancel": EarlyEnd(_agent(OPEN), _cancel, TurnStatus.CANCELLED),
    # the tool's replay fails, and the policy fails the turn
    "tool-fails-the-turn": EarlyEnd(_agent(OPEN, fails=True, on_tool_error="fail_turn"), _run_on, TurnStatus.FAILED),
    # an approved call before it spends the last of the budget
    "budget": EarlyEnd(
        _agent(("call-0", "refund", {}), OPEN, max_tool_calls=1), _approve_then_run, TurnStatus.BUDGET_EXCEEDED
    ),
    # the replay would be one step too many
    "max-steps": EarlyEnd(_agent(OPEN, max_steps=2), _run_on, TurnStatus.MAX_STEPS_REACHED),
    # another form of the same message is not answered in time, and expiry cancels the turn
    "expiry": EarlyEnd(
        _agent(OPEN, ("call-2", "open_account", {"name": "Bob"}), input_timeout=60, on_input_timeout="cancel"),
        _expire,
        TurnStatus.CANCELLED,
    ),
    # a model-requested form, cancelled before the model was shown the answer
    "cancel-model-form": EarlyEnd(
        _agent(("call-1", "request_user_input", {"formKey": "kyc"})), _cancel, TurnStatus.CANCELLED
    ),
}


def stored_text(backend: Backend) -> str:
    """Everything the backend stores, as text: every snapshot and every timeline entry (bodies decoded), and
    every other attribute of every item."""
    store, memory = backend.store, backend.memory
    texts: list[str] = []
    if isinstance(store, InMemoryTurnStore) and isinstance(memory, InMemoryChatMemory):
        texts += [record.body for record in store._records.values()]
        for conversation in memory._conversations.values():
            texts += list(conversation._bodies.values())
        return "\n".join(texts)
    assert isinstance(store, DynamoDBTurnStore) and isinstance(memory, DynamoDBChatMemory)
    for table, codec in ((store.table_name, store.codec), (memory.table_name, memory.codec)):
        pages = store.client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
        for item in (item for page in pages for item in page["Items"]):
            body = codec.decode(item, what="item") if "body" in item or "bodyRef" in item else ""
            others = {k: v for k, v in item.items() if k not in ("body", "bodyRef")}
            texts += [body, json.dumps(others, default=str)]
    return "\n".join(texts)


@pytest.mark.parametrize("case", sorted(EARLY_ENDS))
def test_a_turn_that_ends_before_its_tool_runs_keeps_no_copy_of_the_submitted_values(
    backend: Backend, case: str
) -> None:
    # GIVEN an agent that redacts submitted values, and its turn waiting for the SSN
    early = EARLY_ENDS[case]
    runner = backend.runner([early.agent])
    waiting = runner.run(early.agent, "conv", "open an account")
    assert waiting.status.is_blocked

    # WHEN the person submits it, and the turn ends before the tool that needed it runs
    ended = early.end(runner, backend, waiting)

    # THEN the turn ended so, and no stored snapshot or timeline entry holds the value
    assert ended.status is early.status, ended.error
    assert SSN not in stored_text(backend)
    # ... while the card still says that it was submitted (values redacted), in the timeline and the snapshot
    card = backend.memory("conv").get_message(form_message_id(waiting.id, "call-1"))
    assert isinstance(card, FormMessage)
    assert (card.status, card.submitted_values, card.values_redacted) == (FormStatus.SUBMITTED, None, True)
    stored = backend.store.load(waiting.id).card(card.message_id)
    assert stored is not None and stored.version == card.version


def test_without_redaction_a_cancelled_turns_card_keeps_what_the_person_submitted(backend: Backend) -> None:
    # GIVEN an agent that does not redact, and its turn waiting for the SSN
    agent = _agent(OPEN, redact=False)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "open an account")

    # WHEN the person submits it and then cancels the turn
    ended = _cancel(runner, backend, waiting)

    # THEN the card shows what they submitted (the snapshot's tool state keeps nothing, as always)
    assert ended.status is TurnStatus.CANCELLED
    card = backend.memory("conv").get_message(form_message_id(waiting.id, "call-1"))
    assert isinstance(card, FormMessage) and card.submitted_values == {"ssn": SSN}
    assert all(state.submitted_form_data is None for state in backend.store.load(waiting.id).tool_states.values())
