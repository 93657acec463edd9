"""What the people scenarios share: the refund finance approves, a clock standing at one instant, and an answer
racing the sweeper."""

from __future__ import annotations

import threading
from typing import Any, Final

from agentturn import (
    Agent,
    Approvers,
    InvalidResumeError,
    ResumeCommand,
    Runner,
    ScriptedChatModel,
    Tool,
    ToolApprovalDecision,
    ToolCall,
    Turn,
)
from tests.scenarios.scripts import ai_calls, final_from_last_tool, reply_after_tools

REFUND: Final = ai_calls(("call-r", "issue_refund", {"orderId": "O-1001", "amount": 4200}))
HOUR: Final = 3600.0
#: Rounds of each race: an answer and the sweeper acting on the same card at once.
ROUNDS: Final = 100


def refund_agent(refunds: list[dict[str, Any]], approvers: Approvers, *, fails_with: str | None = None) -> Agent:
    """Refunds over 1,000 wait for ``approvers``; each refund made is appended to ``refunds``."""

    def policy(turn: Turn, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
        return ToolApprovalDecision.require_approval("refund over 1,000", approvers=approvers)

    def issue_refund(arguments: dict[str, Any]) -> dict[str, Any]:
        if fails_with is not None:
            raise RuntimeError(fails_with)
        refunds.append(arguments)
        return {"refunded": arguments["amount"]}

    return Agent(
        id="refund-agent",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(REFUND, final_from_last_tool)),
        tools=[Tool("issue_refund", "refund", issue_refund)],
        approval_policy=policy,
    )


class FixedClock:
    """A clock standing at ``at`` (creeping up by a microsecond a reading, so that timestamps still sort)."""

    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        self.at += 1e-6
        return self.at


def race_with_sweeper(
    answerer: Runner, sweeper: Runner, turn_id: str, command: ResumeCommand, *, sweeper_first: bool = False
) -> Turn | InvalidResumeError:
    """``command`` submitted through ``answerer`` while ``sweeper`` acts on the turn (``Runner.expire``), both
    released together; either may be scheduled first (``sweeper_first`` starts its thread first). What the answer
    got: the turn it left, or the refusal."""
    start = threading.Barrier(2)
    outcome: dict[str, Turn | InvalidResumeError] = {}
    swept: list[bool] = []

    def answer() -> None:
        start.wait()
        try:
            outcome["answer"] = answerer.submit_resume(turn_id, command)
        except InvalidResumeError as refused:
            outcome["answer"] = refused

    def sweep() -> None:
        start.wait()
        sweeper.expire(turn_id)
        swept.append(True)

    threads = [threading.Thread(target=answer), threading.Thread(target=sweep)][:: -1 if sweeper_first else 1]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), "a racer did not finish"
    assert swept and "answer" in outcome, (swept, outcome)
    return outcome["answer"]
