"""The tool step's gates, each driven directly over an in-memory store (see conftest's ``parts``)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.conftest import Parts

from agentturn import (
    Agent,
    AiMessage,
    ExecutionPolicy,
    ScriptedChatModel,
    Tool,
    ToolCall,
    ToolMessage,
    TurnStatus,
)
from agentturn.agents.agent import ToolApprovalDecision
from agentturn.agents.tools import ToolContext
from agentturn.engine.turn_run import LeaseGone, Run
from agentturn.errors import LeaseLostError, StorageUnavailableError
from agentturn.forms.definitions import FormDefinition, UserInputTool
from agentturn.state.turn import TurnPhase
from agentturn.timeline.identity import stamp

ADDRESS = FormDefinition("address", "Where to ship", {"type": "object", "properties": {"city": {"type": "string"}}})


class Ledger:
    """A tool that records each time it runs: the proof that a gate stopped a call, or let it through."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def __call__(self, arguments: dict[str, Any]) -> dict[str, Any]:
        self.runs.append(arguments)
        return {"refunded": arguments.get("amount")}


def agent_with(ledger: Ledger, **options: Any) -> Agent:
    tools = [Tool("refund", "Refund an order", ledger), UserInputTool([ADDRESS])]
    return Agent("shop", "help", ScriptedChatModel([]), tools=tools, **options)


def calling(parts: Parts, agent: Agent, *calls: ToolCall) -> Run:
    run = parts.new_run(agent)
    run.turn.messages.append(stamp(run.turn, AiMessage(tool_calls=list(calls))))
    run.turn.pending_tool_calls = list(calls)
    run.turn.phase = TurnPhase.TOOLS
    run.turn.status = TurnStatus.RUNNING
    return run


def last_result(run: Run) -> Any:
    message = run.turn.messages[-1]
    assert isinstance(message, ToolMessage)
    return message.content


def test_a_call_that_passes_every_gate_runs_once_and_its_result_is_saved(parts: Parts) -> None:
    # GIVEN an agent with no approval policy and a call to its tool
    ledger = Ledger()
    run = calling(parts, agent_with(ledger), ToolCall(id="c1", name="refund", arguments={"amount": 5}))

    # WHEN the tool step runs
    parts.tool_step(run)

    # THEN the tool ran once, its result is the call's result, counted, and saved for the model's turn
    assert ledger.runs == [{"amount": 5}]
    assert last_result(run) == {"refunded": 5}
    assert run.turn.tool_call_count == 1
    assert run.turn.phase is TurnPhase.MODEL
    assert parts.store.load(run.turn.id).messages[-1].type == "tool"


def test_an_unknown_tool_is_answered_with_the_tools_there_are(parts: Parts) -> None:
    # GIVEN a call to a tool the agent does not have
    ledger = Ledger()
    run = calling(parts, agent_with(ledger), ToolCall(id="c1", name="refnud", arguments={}))

    # WHEN the tool step runs
    parts.tool_step(run)

    # THEN nothing ran, nothing was counted, and the model is told what it may call
    assert ledger.runs == []
    assert run.turn.tool_call_count == 0
    assert last_result(run)["error"] == "unknown_tool"
    assert "refund" in last_result(run)["message"]


def test_the_control_tool_suspends_for_a_known_form_and_answers_an_unknown_one(parts: Parts) -> None:
    # GIVEN one call asking for a form that does not exist, then one asking for the address form
    ledger = Ledger()
    wrong = ToolCall(id="c1", name="request_user_input", arguments={"formKey": "adress"})
    right = ToolCall(id="c2", name="request_user_input", arguments={"formKey": "address"})
    run = calling(parts, agent_with(ledger), wrong, right)

    # WHEN the tool step runs twice
    parts.tool_step(run)
    first = last_result(run)
    parts.tool_step(run)

    # THEN the unknown key got the list of forms, and the known one made the turn wait with its card
    assert first["error"] == "unknown_form_key" and first["allowedFormKeys"] == ["address"]
    assert run.turn.status is TurnStatus.WAITING_FOR_USER
    assert [card.action_id for card in run.turn.pending_cards()] == ["c2"]
    assert "TURN_SUSPENDED" in parts.types()


def test_a_policy_denial_stops_the_call_and_tells_the_model(parts: Parts) -> None:
    # GIVEN a policy that denies refunds
    ledger = Ledger()
    agent = agent_with(ledger, approval_policy=lambda turn, call, tool: ToolApprovalDecision.deny("not allowed"))
    run = calling(parts, agent, ToolCall(id="c1", name="refund", arguments={"amount": 5}))

    # WHEN the tool step runs
    parts.tool_step(run)

    # THEN the tool did not run and the model gets the denial with the policy's reason
    assert ledger.runs == []
    assert last_result(run) == {"status": "denied", "toolName": "refund", "reason": "not allowed"}


def test_a_call_needing_approval_waits_and_an_approved_one_is_not_asked_again(parts: Parts) -> None:
    # GIVEN a policy that asks a person about every refund
    ledger = Ledger()
    asked: list[str] = []

    def ask(turn: Any, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
        asked.append(call.id)
        return ToolApprovalDecision.require_approval("check it")

    run = calling(parts, agent_with(ledger, approval_policy=ask), ToolCall(id="c1", name="refund", arguments={}))

    # WHEN the tool step runs
    parts.tool_step(run)

    # THEN the turn waits for approval and the tool has not run
    assert run.turn.status is TurnStatus.WAITING_FOR_APPROVAL
    assert ledger.runs == []

    # WHEN the call is approved and the step runs again
    run.turn.tool_state("c1").approved = True
    run.turn.suspension = None
    run.turn.status = TurnStatus.RUNNING
    parts.tool_step(run)

    # THEN the policy was not asked again and the tool ran
    assert asked == ["c1"]
    assert len(ledger.runs) == 1


def test_the_budget_ends_the_turn_before_a_call_over_it_runs(parts: Parts) -> None:
    # GIVEN an agent allowed one tool call, and a reply with two
    ledger = Ledger()
    agent = agent_with(ledger, policy=ExecutionPolicy(max_tool_calls=1))
    calls = [ToolCall(id=f"c{n}", name="refund", arguments={"n": n}) for n in (1, 2)]
    run = calling(parts, agent, *calls)

    # WHEN the tool step runs for each
    parts.tool_step(run)
    parts.tool_step(run)

    # THEN only the first ran; the turn ended over budget
    assert ledger.runs == [{"n": 1}]
    assert run.turn.status is TurnStatus.BUDGET_EXCEEDED
    assert run.turn.error is not None and run.turn.error.type == "max_tool_calls"


def test_a_failing_tool_is_reported_to_the_model_or_fails_the_turn_as_the_policy_says(parts: Parts) -> None:
    # GIVEN two agents whose tool raises: one returns errors to the model, one fails the turn
    def broken(arguments: dict[str, Any]) -> Any:
        raise RuntimeError("warehouse down")

    def agent(on_error: Any) -> Agent:
        policy = ExecutionPolicy(on_tool_error=on_error)
        return Agent(f"a-{on_error}", "x", ScriptedChatModel([]), tools=[Tool("ship", "Ship", broken)], policy=policy)

    told = calling(parts, agent("return_to_model"), ToolCall(id="c1", name="ship", arguments={}))
    failed = calling(parts, agent("fail_turn"), ToolCall(id="c1", name="ship", arguments={}))

    # WHEN each runs its tool step
    parts.tool_step(told)
    parts.tool_step(failed)

    # THEN the first model learns why, the second turn ends FAILED with the error
    assert last_result(told) == {"status": "error", "error": "tool_failed", "message": "RuntimeError: warehouse down"}
    assert told.turn.status is TurnStatus.RUNNING
    assert failed.turn.status is TurnStatus.FAILED
    assert failed.turn.error is not None and failed.turn.error.type == "tool_error"


def test_a_call_is_saved_before_its_tool_learns_its_idempotency_key(parts: Parts) -> None:
    # GIVEN a model reply not saved yet (the model step leaves it to the tool step) calling a tool that looks at
    # what is stored when it gets its key
    stored_when_keyed: list[list[str]] = []

    def refund(arguments: dict[str, Any]) -> str:
        key = ToolContext.current().idempotency_key
        stored_when_keyed.append([c.id for c in parts.store.load(run.turn.id).pending_tool_calls])
        return key

    agent = Agent("shop", "help", ScriptedChatModel([]), tools=[Tool("refund", "Refund", refund)])
    run = calling(parts, agent, ToolCall(id="c1", name="refund", arguments={}))
    run.unsaved = True
    before = parts.store.load(run.turn.id).version

    # WHEN the tool step runs it
    parts.tool_step(run)

    # THEN the call was stored before the key was handed out, and the result was saved after: two writes
    assert stored_when_keyed == [["c1"]]
    assert last_result(run) == f"{run.turn.id}:c1"
    stored = parts.store.load(run.turn.id)
    assert stored.version == before + 2
    assert stored.messages[-1].type == "tool"


def test_a_tool_that_never_asks_for_its_key_costs_one_write_for_its_call_and_result(parts: Parts) -> None:
    # GIVEN an unsaved model reply calling a tool that does not take its idempotency key
    ledger = Ledger()
    run = calling(parts, agent_with(ledger), ToolCall(id="c1", name="refund", arguments={"amount": 5}))
    run.unsaved = True
    before = parts.store.load(run.turn.id).version

    # WHEN the tool step runs it
    parts.tool_step(run)

    # THEN the reply and the result reached the store in one write
    stored = parts.store.load(run.turn.id)
    assert stored.version == before + 1
    assert [m.type for m in stored.messages] == ["ai", "tool"]
    assert not run.unsaved


def test_a_key_whose_call_cannot_be_saved_stops_the_tool_and_keeps_nothing(parts: Parts) -> None:
    # GIVEN an unsaved reply calling a tool, and another worker that took the turn over meanwhile
    seen: list[str] = []

    def refund(arguments: dict[str, Any]) -> str:
        try:
            return f"refunded under {ToolContext.current().idempotency_key}"
        except LeaseLostError as exc:
            seen.append(type(exc).__name__)
        return "refunded anyway"  # a tool that swallows the error

    agent = Agent("shop", "help", ScriptedChatModel([]), tools=[Tool("refund", "Refund", refund)])
    run = calling(parts, agent, ToolCall(id="c1", name="refund", arguments={}))
    run.unsaved = True
    parts.clock.advance(parts.lease_seconds + 1)
    assert parts.store.claim(run.turn.id, "w2", parts.lease_seconds) is not None
    before = parts.store.load(run.turn.id)

    # WHEN the tool step runs it
    with pytest.raises(LeaseGone):
        parts.tool_step(run)

    # THEN the tool was told its key cannot be had, and neither its call nor its result was stored
    assert seen == ["LeaseLostError"]
    after = parts.store.load(run.turn.id)
    assert after.version == before.version
    assert after.messages == before.messages


def test_a_key_whose_save_fails_in_storage_fails_the_run_not_the_tool(
    parts: Parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an unsaved reply calling a tool that asks for its key, and a store that is unreachable for that save
    ran: list[str] = []

    def refund(arguments: dict[str, Any]) -> str:
        ran.append(ToolContext.current().idempotency_key)
        return "refunded"

    agent = Agent("shop", "help", ScriptedChatModel([]), tools=[Tool("refund", "Refund", refund)])
    run = calling(parts, agent, ToolCall(id="c1", name="refund", arguments={}))
    run.unsaved = True
    before = parts.store.load(run.turn.id)

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise StorageUnavailableError("throttled")

    monkeypatch.setattr(parts.store, "save", unreachable)

    # WHEN the tool step runs it
    with pytest.raises(StorageUnavailableError):
        parts.tool_step(run)

    # THEN the tool never got its key, and no "tool failed" result was made of the storage error
    assert ran == []
    monkeypatch.undo()
    assert parts.store.load(run.turn.id).messages == before.messages
    assert not any(m.type == "tool" for m in run.turn.messages)
