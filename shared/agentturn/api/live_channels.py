"""Which channel a conversation's live messages go to: one per user and conversation.

``/agentturn/{owner}/{conversation}``: the owner is the caller's verified subject (``sub``) as it is, so
that the channel namespace's subscribe handler can compare that segment with the subscriber's own
``sub``; the conversation is the first 32 hex digits of the SHA-256 of its id (channel segments allow only
letters, digits and dashes, up to 50 of them; conversation ids allow more). The console computes the same.
A subject that cannot be a channel segment (some OIDC subjects) gets no channel: its pages poll.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

#: The AppSync Events channel namespace of the live timeline (the CDK construct creates it by this name).
NAMESPACE: Final = "agentturn"
_SEGMENT: Final = re.compile(r"[A-Za-z0-9-]{1,50}")


def conversation_segment(conversation_id: str) -> str:
    return hashlib.sha256(conversation_id.encode()).hexdigest()[:32]


def channel_for(owner: str, conversation_id: str) -> str | None:
    """The channel of ``owner``'s conversation ``conversation_id`` (as the owner names it), or None."""
    if not _SEGMENT.fullmatch(owner):
        return None
    return f"/{NAMESPACE}/{owner}/{conversation_segment(conversation_id)}"


def owner_and_conversation(runtime_conversation_id: str) -> tuple[str | None, str]:
    """The owner and the conversation id as the owner names it (no owner: the id as it is)."""
    owner, slash, conversation = runtime_conversation_id.rpartition("/")
    return (owner, conversation) if slash and owner else (None, runtime_conversation_id)


def channel_of(runtime_conversation_id: str) -> tuple[str, str] | None:
    """For the runtime's conversation id (``{owner}/{conversation}``): the channel, and the conversation id
    as its owner names it. Conversation ids hold no "/", so the last one splits them."""
    owner, slash, conversation = runtime_conversation_id.rpartition("/")
    if not slash or not owner or not conversation:
        return None
    channel = channel_for(owner, conversation)
    return (channel, conversation) if channel is not None else None
