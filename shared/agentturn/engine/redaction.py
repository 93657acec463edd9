"""Where what a person submitted may live, and when it leaves: one rule for the end of a tool and of a turn.

Submitted form data lives in the snapshot only for the tool that needs it (``ToolCallState.submitted_form_data``,
an input round's ``round_answers``), and on the answered card (the timeline, and the snapshot's copy until the
timeline is known to hold it: :func:`agentturn.engine.turn_writer.forget_projected_values`). With the policy
``redact_submitted_values`` the card loses the values too, once the tool that needed them has run.

A turn that ends before that tool runs — cancelled, failed by a tool, out of budget or steps, expired — will
never run it: at that end (:func:`forget_at_end`, from :meth:`TurnWriter.finish`, the one way every turn ends)
the tool states drop what they held, and with redaction every answered card drops its values, in the snapshot
and, through the card's next version, in the timeline. A model-requested form of a redacting agent keeps its
answer for the model in the snapshot alone until the turn runs on (see :func:`agentturn.engine.resume.apply_resume`),
so a turn that ends first leaves no tool result holding it either.
"""

from __future__ import annotations

from agentturn.agents.agent import ExecutionPolicy
from agentturn.state.messages import FormMessage, FormStatus
from agentturn.state.turn import Turn

#: The key of a wait's frozen terms that says its answer's values are redacted.
REDACT_VALUES = "redactValues"


def redacts(turn: Turn, policy: ExecutionPolicy) -> bool:
    """Whether ``turn``'s submitted values are redacted: by its agent's policy, or by the terms frozen with a wait
    it still has (a turn whose agent this process does not know, cancelled while it waits)."""
    return policy.redact_submitted_values or any(s.metadata.get(REDACT_VALUES) for s in turn.suspensions)


def redact_card(turn: Turn, message_id: str) -> None:
    """The card keeps that it was answered, not what: its values leave the snapshot and, at its next version, the
    timeline. Also when the snapshot's copy already went (the timeline still holds the values then)."""
    card = turn.card(message_id)
    if isinstance(card, FormMessage) and card.status == FormStatus.SUBMITTED and not card.values_redacted:
        update = {"submitted_values": None, "values_redacted": True, "version": card.version + 1}
        turn.cards = [card.model_copy(update=update) if c.message_id == message_id else c for c in turn.cards]


def forget_at_end(turn: Turn, *, redact: bool) -> None:
    """At a turn's end no tool of it runs again: nothing keeps submitted data for one, and with ``redact`` no card
    keeps the values either."""
    for state in turn.tool_states.values():
        state.submitted_form_data = None
        state.round_state = None
        state.round_answers = None
    if redact:
        for card in list(turn.cards):
            redact_card(turn, card.message_id)
