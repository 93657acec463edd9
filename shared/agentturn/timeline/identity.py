"""Where each message and card of a turn sits in its conversation's timeline: its id, its turn and its sort key.

All three follow from the turn (its id, its creation time and the message's position, or the call a card
answers), so they are made here and nowhere else: :func:`stamp` gives a new message its identity,
:func:`place` gives a new card its own, and a stored snapshot leaves out whatever its turn implies
(:func:`implied_identity`), which :func:`restore_identity` puts back on load. Every byte of a snapshot is
billed on each of its writes, and these ids were a quarter of its text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agentturn.state.messages import ApprovalMessage, CardMessage, ModelMessage, approval_message_id, form_message_id

if TYPE_CHECKING:
    from agentturn.state.turn import Turn

#: The fields of a timeline entry that its turn implies.
IDENTITY_FIELDS: Final = frozenset({"message_id", "turn_id", "sort_key"})


def message_sort_key(turn: Turn, index: int) -> str:
    return f"{turn.timeline_prefix}#{index:05d}"


def card_sort_key(turn: Turn, call_id: str) -> str:
    """Right after the AI message that made the call, before whatever came next."""
    for index, message in enumerate(turn.messages):
        if message.type == "ai":
            for position, call in enumerate(message.tool_calls):
                if call.id == call_id:
                    return f"{message_sort_key(turn, index)}.{position:02d}"
    return f"{message_sort_key(turn, len(turn.messages))}.00"


def _message_id(turn_id: str, index: int) -> str:
    return f"{turn_id}:m:{index:05d}"


def message_identity(turn: Turn, index: int) -> dict[str, str]:
    """The identity of the turn's message at ``index``."""
    return {"message_id": _message_id(turn.id, index), "turn_id": turn.id, "sort_key": message_sort_key(turn, index)}


def message_index(message: ModelMessage) -> int | None:
    """The position in its turn of a message that has its implied id; ``None`` for one that does not."""
    turn_id, message_id = message.turn_id, message.message_id
    digits = (message_id or "").rpartition(":m:")[2]
    if not turn_id or not digits.isdigit() or message_id != _message_id(turn_id, int(digits)):
        return None
    return int(digits)


def card_identity(turn: Turn, card: CardMessage) -> dict[str, str]:
    """The identity of ``card`` in its turn (an approval's id differs from a form's)."""
    make_id = approval_message_id if isinstance(card, ApprovalMessage) else form_message_id
    return {
        "message_id": make_id(turn.id, card.action_id),
        "turn_id": turn.id,
        "sort_key": card_sort_key(turn, card.action_id),
    }


def stamp(turn: Turn, message: ModelMessage) -> ModelMessage:
    """Give a new message of the turn its timeline identity (id, turn, position)."""
    return message.model_copy(update=message_identity(turn, len(turn.messages)))


def place(turn: Turn, card: CardMessage) -> CardMessage:
    """Give a new card of the turn its timeline identity (id, turn, and a place right after its call)."""
    return card.model_copy(update=card_identity(turn, card))


def _identity(entry: ModelMessage | CardMessage) -> dict[str, str | None]:
    return {"message_id": entry.message_id, "turn_id": entry.turn_id, "sort_key": entry.sort_key}


def implied_identity(turn: Turn) -> dict[str, Any]:
    """An ``exclude`` for ``turn.model_dump_json``: the identity of every message and card that has exactly the
    one its turn implies (an entry whose identity differs keeps it: leaving it out would change it)."""
    messages = {i: IDENTITY_FIELDS for i, m in enumerate(turn.messages) if _identity(m) == message_identity(turn, i)}
    cards = {i: IDENTITY_FIELDS for i, c in enumerate(turn.cards) if _identity(c) == card_identity(turn, c)}
    exclude: dict[str, Any] = {}
    if messages:
        exclude["messages"] = messages
    if cards:
        exclude["cards"] = cards
    return exclude


def restore_identity(turn: Turn) -> Turn:
    """Put back the identity a stored snapshot left out: only fields absent from the text are filled, so an
    entry stored with an identity of its own keeps it.

    ``turn`` was just read from text, so its entries belong to it alone and are filled in place (a store reads
    a snapshot several times per step: a copy of every entry on each read was a tenth of a cycle's CPU).
    """
    for index, message in enumerate(turn.messages):
        if missing := IDENTITY_FIELDS - message.model_fields_set:
            _fill(message, missing, message_identity(turn, index))
    for card in turn.cards:
        if missing := IDENTITY_FIELDS - card.model_fields_set:
            _fill(card, missing, card_identity(turn, card))
    return turn


def _fill(entry: ModelMessage | CardMessage, missing: frozenset[str], implied: dict[str, str]) -> None:
    # Plain attribute writes: these models do not validate assignment, so pydantic's __setattr__ would only add
    # its bookkeeping; the fields set are kept true by hand.
    entry.__dict__.update({field: implied[field] for field in missing})
    entry.model_fields_set.update(missing)
