"""Whose data is what: turns carry their owner, conversations are namespaced by it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    # A type only: the sweeper imports this module and needs no turn model until it reads a turn.
    from agentturn.state.turn import Turn

#: Stored in ``turn.metadata`` when the turn is created: the verified subject that owns it.
OWNER_KEY: Final = "ownerId"


def conversation_key(owner: str, conversation_id: str) -> str:
    """The runtime's conversation id: the caller's id, namespaced by the caller.

    Two callers using the same conversation id never share a timeline, and a caller can only name
    conversations inside its own namespace. Conversation ids cannot contain "/", so the mapping is
    injective even for subjects that do.
    """
    return f"{owner}/{conversation_id}"


def owns(turn: Turn, owner: str) -> bool:
    return turn.metadata.get(OWNER_KEY) == owner and turn.conversation_id.startswith(f"{owner}/")


def public_conversation_id(turn: Turn) -> str:
    """The conversation id as its owner named it."""
    owner = turn.metadata.get(OWNER_KEY)
    prefix = f"{owner}/"
    if isinstance(owner, str) and turn.conversation_id.startswith(prefix):
        return turn.conversation_id[len(prefix) :]
    return turn.conversation_id
