"""The seed's card rule (DESIGN invariant 12): before a decision returns, the card in ChatMemory shows it.

Each decision is made through the library (``Runner.submit_resume``), and the timeline is read before any worker
runs: memory, DynamoDB Local and moto's DynamoDB alike.
"""

from __future__ import annotations

from typing import Any

from agentturn import (
    ApprovalMessage,
    ApprovalStatus,
    FormMessage,
    FormStatus,
    ResumeCommand,
    TurnStatus,
)
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import SUPPORT_DATA, form_asking_agent
from tests.scenarios.test_approval import refund_agent


def _form_card(backend: Backend, turn_id: str) -> FormMessage:
    card = backend.memory("conv").get_message(f"{turn_id}:input:call-1")
    assert isinstance(card, FormMessage)
    return card


def test_a_submit_shows_the_card_submitted_with_its_values_before_any_worker_runs(every_backend: Backend) -> None:
    # GIVEN a turn waiting on a form, its card PENDING in the timeline
    agent = form_asking_agent()
    runner = every_backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    assert _form_card(every_backend, waiting.id).status is FormStatus.PENDING

    # WHEN the person submits (nothing runs the turn on)
    command = ResumeCommand.submit_form("call-1", SUPPORT_DATA).with_metadata("submittedBy", "alice")
    accepted = runner.submit_resume(waiting.id, command)

    # THEN the timeline's card is SUBMITTED, at the snapshot's version, with the values, the person and the time
    assert accepted.status is TurnStatus.RUNNING
    card = _form_card(every_backend, waiting.id)
    assert (card.status, card.actions, card.submitted_values) == (FormStatus.SUBMITTED, [], SUPPORT_DATA)
    assert card.submitted_by == "alice" and card.submitted_at
    assert card.version == accepted.card(card.message_id).version  # type: ignore[union-attr]
    # AND it is the same card the whole timeline shows (read as a page reads it)
    shown = [m for m in every_backend.memory("conv").get_messages() if isinstance(m, FormMessage)]
    assert shown == [card]


def test_a_decline_and_a_cancel_show_on_the_card_before_they_return(every_backend: Backend) -> None:
    # GIVEN two waiting form turns in two conversations
    agent = form_asking_agent()
    runner = every_backend.runner([agent])
    declined = runner.run(agent, "conv", "ticket")
    cancelled = runner.run(agent, "conv-2", "ticket")

    # WHEN one is declined and the other cancelled
    runner.submit_resume(declined.id, ResumeCommand.decline_input("call-1", "not now"))
    runner.cancel(cancelled.id)

    # THEN each card shows it, read-only
    card = _form_card(every_backend, declined.id)
    assert card.status is FormStatus.DECLINED and card.actions == []
    other = every_backend.memory("conv-2").get_message(f"{cancelled.id}:input:call-1")
    assert isinstance(other, FormMessage) and other.status is FormStatus.CANCELLED and other.actions == []


def test_approve_reject_and_respond_show_on_the_card_before_they_return(every_backend: Backend) -> None:
    # GIVEN three refunds waiting for approval, one per conversation
    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds)
    runner = every_backend.runner([agent])
    commands = {
        ApprovalStatus.APPROVED: ResumeCommand.approve_tool("call-r"),
        ApprovalStatus.REJECTED: ResumeCommand.reject_tool("call-r", "too much"),
        ApprovalStatus.RESPONDED: ResumeCommand.respond("call-r", {"refunded": False}),
    }
    for status, command in commands.items():
        conversation = f"conv-{status.value}"
        waiting = runner.run(agent, conversation, "refund please")
        assert waiting.status is TurnStatus.WAITING_FOR_APPROVAL

        # WHEN a person decides (nothing runs the turn on)
        runner.submit_resume(waiting.id, command.with_metadata("submittedBy", "boss"))

        # THEN the card shows the decision and who made it, and the tool has not run
        card = every_backend.memory(conversation).get_message(f"{waiting.id}:approval:call-r")
        assert isinstance(card, ApprovalMessage)
        assert (card.status, card.decided_by, card.actions) == (status, "boss", [])
    assert refunds == []
