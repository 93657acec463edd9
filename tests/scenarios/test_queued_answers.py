"""Answers kept beside a running turn (``resume_after="each"``), through the library on every backend.

The HTTP path and the races are in ``tests/reliability/test_each_answers.py``; here: what the runner returns for a
kept answer, and what a cancel does to one (the card shows CANCELLED, not the SUBMITTED its submit showed).
"""

from __future__ import annotations

from typing import Any

from agentturn import (
    Agent,
    AiMessage,
    ApprovalMessage,
    ChatRequest,
    ExecutionPolicy,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolApprovalDecision,
    ToolCall,
    ToolMessage,
    Turn,
    TurnStatus,
)
from agentturn.engine.queued_answers import take_queued
from agentturn.state.turn import QueuedAnswer
from tests.scenarios.conftest import Backend

CALLS = ("r1", "r2", "r3")


def _agent(ran: list[str]) -> Agent:
    def model(request: ChatRequest) -> AiMessage:
        if isinstance(request.messages[-1], ToolMessage):
            return AiMessage(content="done")
        return AiMessage(tool_calls=[ToolCall(id=c, name="refund", arguments={"n": c}) for c in CALLS])

    def refund(arguments: dict[str, Any]) -> dict[str, Any]:
        ran.append(arguments["n"])
        return {"ok": True}

    def approval(turn: Turn, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
        return ToolApprovalDecision.require_approval("refund?")

    return Agent(
        id="each",
        instructions="",
        chat_model=ScriptedChatModel(model),
        tools=[Tool("refund", "refund", refund)],
        approval_policy=approval,
        policy=ExecutionPolicy(resume_after="each"),
    )


def _cards(backend: Backend) -> dict[str, str]:
    return {m.action_id: m.status.value for m in backend.memory("c").get_messages() if isinstance(m, ApprovalMessage)}


def test_a_kept_answer_is_applied_once_by_the_run_and_shown_at_once(backend: Backend) -> None:
    # GIVEN a turn waiting on three refunds, one approved: it runs while two cards still show PENDING
    ran: list[str] = []
    agent = _agent(ran)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "c", "refund all")
    assert runner.submit_resume(waiting.id, ResumeCommand.approve_tool("r1")).status is TurnStatus.RUNNING

    # WHEN the second is approved before the worker ran
    kept = runner.accept_answer(waiting.id, ResumeCommand.approve_tool("r2"))

    # THEN it is kept beside the turn (no new version), its card shows it, and nothing ran yet
    assert kept.queued
    stored = backend.store.load(waiting.id)
    assert stored.version == kept.turn.version
    assert [q.command.action_id for q in stored.queued_answers] == ["r2"]
    assert _cards(backend) == {"r1": "APPROVED", "r2": "APPROVED", "r3": "PENDING"}
    assert ran == []

    # WHEN the worker runs, and the last card is approved
    runner.run_turn(waiting.id)
    assert ran == ["r1", "r2"]
    done = runner.resume(waiting.id, ResumeCommand.approve_tool("r3"))

    # THEN each refund ran once and the turn completed with nothing left beside it
    assert done.status is TurnStatus.COMPLETED
    assert ran == ["r1", "r2", "r3"]
    assert backend.store.load(waiting.id).queued_answers == []


def test_a_cancel_drops_a_kept_answer_and_its_card_shows_cancelled(backend: Backend) -> None:
    # GIVEN a running turn with an answer kept beside it
    ran: list[str] = []
    agent = _agent(ran)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "c", "refund all")
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("r1"))
    assert runner.accept_answer(waiting.id, ResumeCommand.approve_tool("r2")).queued

    # WHEN the turn is cancelled before the worker ran
    cancelled = runner.cancel(waiting.id)

    # THEN it ended with nothing run and nothing left beside it, and the kept answer's card shows CANCELLED
    assert cancelled.status is TurnStatus.CANCELLED
    assert ran == []
    assert backend.store.load(waiting.id).queued_answers == []
    assert _cards(backend) == {"r1": "APPROVED", "r2": "CANCELLED", "r3": "CANCELLED"}


def test_a_second_round_of_a_save_takes_only_the_answers_queued_since_the_first(backend: Backend) -> None:
    # GIVEN a turn waiting on three refunds, and the answers the store holds beside it: one, then two
    agent = _agent([])
    waiting = backend.runner([agent]).run(agent, "c", "refund all")
    first = QueuedAnswer(command=ResumeCommand.approve_tool("r2"), accepted_at=backend.clock(), nonce="n-1")
    second = QueuedAnswer(command=ResumeCommand.approve_tool("r3"), accepted_at=backend.clock(), nonce="n-2")

    # WHEN a save takes the first, is refused again for the second, and takes what it was told of
    once = take_queued(waiting, [first])
    twice = take_queued(once, [first, second])

    # THEN each answer was applied once: the first card moved one version (not again), the second too
    versions = {c.action_id: (c.status.value, c.version) for c in twice.cards}
    pending = {c.action_id: c.version for c in waiting.cards}
    assert versions["r2"] == ("APPROVED", pending["r2"] + 1)
    assert versions["r3"] == ("APPROVED", pending["r3"] + 1)
    assert twice.answers_taken == 2
    assert [s.correlation_id for s in twice.suspensions] == ["r1"]
