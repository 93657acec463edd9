"""The one rule for submitted values at a turn's end (agentturn.engine.redaction), pure."""

from __future__ import annotations

from agentturn import ExecutionPolicy, FormMessage, FormStatus
from agentturn.engine.redaction import forget_at_end, redact_card, redacts
from agentturn.state.turn import Suspension, SuspensionType
from agentturn.testing.builders import new_turn


def _answered_card(values: dict[str, str] | None) -> FormMessage:
    return FormMessage(
        message_id="t:input:c1",
        action_id="c1",
        form_key="kyc",
        schema={"type": "object"},
        status=FormStatus.SUBMITTED,
        submitted_values=values,
        version=2,
    )


def test_the_end_drops_every_tool_states_copy_and_redacting_every_answered_cards_values() -> None:
    # GIVEN a turn holding a tool's submitted data, an input round's answers, and an answered card
    turn = new_turn()
    turn.tool_state("c1").submitted_form_data = {"ssn": "1"}
    turn.tool_state("c2").round_state = {"step": 1}
    turn.tool_state("c2").round_answers = {"q": {"action": "accept", "content": {"ssn": "1"}}}
    turn.cards = [_answered_card({"ssn": "1"})]

    # WHEN it ends, redacting
    forget_at_end(turn, redact=True)

    # THEN nothing holds the values, and the card says so at its next version
    assert all(
        (s.submitted_form_data, s.round_state, s.round_answers) == (None, None, None) for s in turn.tool_states.values()
    )
    [card] = turn.cards
    assert isinstance(card, FormMessage)
    assert (card.submitted_values, card.values_redacted, card.version) == (None, True, 3)


def test_a_card_whose_snapshot_copy_already_went_is_still_redacted_for_the_timeline() -> None:
    # GIVEN an answered card whose values the snapshot already dropped (the timeline holds them)
    turn = new_turn()
    turn.cards = [_answered_card(None)]

    # WHEN it is redacted, twice
    redact_card(turn, "t:input:c1")
    redact_card(turn, "t:input:c1")

    # THEN it moved on once: its next version, written to the timeline, holds no values
    [card] = turn.cards
    assert isinstance(card, FormMessage) and (card.values_redacted, card.version) == (True, 3)


def test_a_wait_frozen_with_redaction_redacts_even_when_the_agent_is_unknown() -> None:
    turn = new_turn()
    turn.suspensions = [
        Suspension(type=SuspensionType.USER_INPUT, correlation_id="c1", metadata={"redactValues": True})
    ]
    assert redacts(turn, ExecutionPolicy()) is True
    turn.suspensions = []
    assert redacts(turn, ExecutionPolicy()) is False
    assert redacts(turn, ExecutionPolicy(redact_submitted_values=True)) is True
