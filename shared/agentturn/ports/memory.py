"""The ChatMemory port (the conversation timeline, a projection of turn snapshots) and its in-memory adapter."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from pydantic import TypeAdapter

from agentturn.ports.audit import AuditRecord, InMemoryAuditLog, OutcomeRecord
from agentturn.ports.serializer import JSON, Serializer
from agentturn.state.messages import (
    ApprovalMessage,
    CardMessage,
    FormMessage,
    ModelMessage,
    TimelineMessage,
)
from agentturn.timeline.conversation_list import (
    ConversationListing,
    ConversationPage,
    ConversationSummary,
    decode_cursor,
    encode_cursor,
)
from agentturn.timeline.inbox import InboxEntry, assignees, due

_TIMELINE: TypeAdapter[TimelineMessage] = TypeAdapter(TimelineMessage)
_MODEL: TypeAdapter[ModelMessage] = TypeAdapter(ModelMessage)


@runtime_checkable
class ChatMemory(Protocol):
    """One conversation's timeline, ordered by ``sort_key``; keyed by ``message_id``."""

    conversation_id: str

    def get_messages(self, limit: int | None = None) -> list[TimelineMessage]:
        """The latest ``limit`` entries (all when ``None``), oldest first, cards included."""
        ...

    def get_model_messages(self, limit: int | None = None) -> list[ModelMessage]:
        """The latest ``limit`` model-visible messages, oldest first: never a UI card."""
        ...

    def get_message(self, message_id: str) -> TimelineMessage | None: ...

    def append(self, message: TimelineMessage) -> bool:
        """Add an entry; ``False`` (and nothing changed) when its ``message_id`` is already there."""
        ...

    def append_all(self, messages: Sequence[TimelineMessage]) -> None:
        """Idempotent batch append, in order (an entry is stored only once those before it in the batch are);
        entries already present are left as they are."""
        ...

    def update_message(self, message: CardMessage, expected_version: int) -> bool:
        """Replace a card if the stored one is at ``expected_version`` (compare-and-set); ``False`` (and nothing
        changed) otherwise. A write whose answer was lost and that was sent again counts as done."""
        ...

    def get_active_turn(self) -> str | None:
        """The id of the turn that took the conversation last and has not let go of it, if any."""
        ...

    def set_active_turn(
        self, turn_id: str | None, *, expected: str | None, listing: ConversationListing | None = None
    ) -> bool:
        """Point the conversation at ``turn_id`` if it currently points at ``expected`` (atomic).

        ``listing`` (only with a ``turn_id``) lists the conversation under its owner in the same write, when
        the write succeeds: its last activity moves to ``listing.at``, its title is kept from the first time.

        Taking is idempotent: if the conversation already points at ``turn_id`` (not ``None``), the answer is
        ``True``. Turn ids are unique, so that can only be this call's own write (one whose answer was lost
        and that the caller or its SDK retried).
        """
        ...


ChatMemoryProvider = Callable[[str], ChatMemory]


class _Listings:
    """Every owner's listed conversations: owner -> conversation id -> (title, last activity)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_owner: dict[str, dict[str, tuple[str, str]]] = {}

    def record(self, conversation_id: str, listing: ConversationListing) -> None:
        with self._lock:
            entries = self._by_owner.setdefault(listing.owner, {})
            title = entries[conversation_id][0] if conversation_id in entries else listing.title
            entries[conversation_id] = (title, listing.at)

    def page(self, owner: str, limit: int, cursor: str | None) -> ConversationPage:
        with self._lock:
            entries = sorted(
                ((at, cid, title) for cid, (title, at) in self._by_owner.get(owner, {}).items()), reverse=True
            )
        if cursor is not None:
            after = decode_cursor(owner, cursor)
            entries = [e for e in entries if (e[0], e[1]) < after]
        shown = entries[: max(limit, 0)]
        more = len(entries) > len(shown) and bool(shown)
        return ConversationPage(
            conversations=[ConversationSummary(conversation_id=c, title=t, last_activity_at=a) for a, c, t in shown],
            cursor=encode_cursor(owner, shown[-1][0], shown[-1][1]) if more else None,
        )


class _Conversation:
    def __init__(
        self, conversation_id: str, lock: threading.Lock, serializer: Serializer, listings: _Listings | None = None
    ) -> None:
        self.conversation_id = conversation_id
        self._listings = listings if listings is not None else _Listings()
        self._serializer = serializer
        self._lock = lock
        self._keys: list[tuple[str, str]] = []
        self._bodies: dict[str, str] = {}
        self._sort_keys: dict[str, str] = {}
        #: the entries that are UI cards, with their type and version: the model's history skips them unread
        #: (as the DynamoDB adapter's model-message index does), and a compare-and-set reads only these (as
        #: its conditional write does)
        self._cards: dict[str, tuple[str, int]] = {}
        self._active_turn: str | None = None

    def _decode(self, message_id: str) -> TimelineMessage:
        return self._serializer.loads(self._bodies[message_id], _TIMELINE)

    def get_messages(self, limit: int | None = None) -> list[TimelineMessage]:
        with self._lock:
            keys = self._keys if limit is None else self._keys[-limit:] if limit > 0 else []
            return [self._decode(message_id) for _, message_id in keys]

    def get_model_messages(self, limit: int | None = None) -> list[ModelMessage]:
        # Newest first, stopping at ``limit``: the cost follows the window, not the conversation's length.
        wanted = len(self._keys) if limit is None else max(limit, 0)
        newest_first: list[ModelMessage] = []
        with self._lock:
            for _, message_id in reversed(self._keys):
                if len(newest_first) >= wanted:
                    break
                if message_id not in self._cards:
                    newest_first.append(self._serializer.loads(self._bodies[message_id], _MODEL))
        return newest_first[::-1]

    def get_message(self, message_id: str) -> TimelineMessage | None:
        with self._lock:
            return self._decode(message_id) if message_id in self._bodies else None

    def _insert(self, message: TimelineMessage) -> bool:
        if not message.message_id:
            raise ValueError("timeline entries need a message_id")
        if message.message_id in self._bodies:
            return False
        bisect.insort(self._keys, (message.sort_key, message.message_id))
        self._bodies[message.message_id] = self._serializer.dumps(message)
        self._sort_keys[message.message_id] = message.sort_key
        if isinstance(message, FormMessage | ApprovalMessage):
            self._cards[message.message_id] = (message.type, message.version)
        return True

    def append(self, message: TimelineMessage) -> bool:
        with self._lock:
            return self._insert(message)

    def append_all(self, messages: Sequence[TimelineMessage]) -> None:
        with self._lock:
            for message in messages:
                self._insert(message)

    def update_message(self, message: CardMessage, expected_version: int) -> bool:
        with self._lock:
            current = self._cards.get(message.message_id)
            if current != (message.type, expected_version):
                return False
            stored = message.model_copy(update={"sort_key": self._sort_keys[message.message_id]})
            self._bodies[message.message_id] = self._serializer.dumps(stored)
            self._cards[message.message_id] = (message.type, message.version)
            return True

    def pending_cards(self) -> list[InboxEntry]:
        with self._lock:
            cards = [self._decode(message_id) for message_id in self._cards]
        return [
            InboxEntry(self.conversation_id, card, due(card))
            for card in cards
            if isinstance(card, FormMessage | ApprovalMessage) and card.status == "PENDING"
        ]

    def get_active_turn(self) -> str | None:
        with self._lock:
            return self._active_turn

    def set_active_turn(
        self, turn_id: str | None, *, expected: str | None, listing: ConversationListing | None = None
    ) -> bool:
        with self._lock:
            if turn_id is not None and self._active_turn == turn_id:
                return True
            if self._active_turn != expected:
                return False
            self._active_turn = turn_id
        if listing is not None and turn_id is not None:
            self._listings.record(self.conversation_id, listing)
        return True


class InMemoryChatMemory:
    """A provider: ``InMemoryChatMemory()(conversation_id)`` returns that conversation's ChatMemory."""

    def __init__(self, *, serializer: Serializer = JSON, inbox_owner_cards: bool = False) -> None:
        self._serializer = serializer
        #: also list cards without approvers in their owner's inbox (as ``DynamoDBChatMemory`` does when told)
        self.inbox_owner_cards = inbox_owner_cards
        self._lock = threading.Lock()
        self._conversations: dict[str, _Conversation] = {}
        self._listings = _Listings()
        self._audit = InMemoryAuditLog()

    # The audit log (agentturn.ports.audit.AuditLog) beside the timeline, as the DynamoDB adapter keeps it.

    def record_decision(self, conversation_id: str, created_at: str, record: AuditRecord) -> bool:
        return self._audit.record_decision(conversation_id, created_at, record)

    def decisions(self, conversation_id: str, created_at: str, turn_id: str) -> list[AuditRecord]:
        return self._audit.decisions(conversation_id, created_at, turn_id)

    def record_outcome(self, conversation_id: str, created_at: str, record: OutcomeRecord) -> bool:
        return self._audit.record_outcome(conversation_id, created_at, record)

    def outcomes(self, conversation_id: str, created_at: str, turn_id: str) -> list[OutcomeRecord]:
        return self._audit.outcomes(conversation_id, created_at, turn_id)

    # The inbox (agentturn.timeline.inbox.Inbox): the reference reads every conversation; the DynamoDB adapter
    # reads one index partition.

    def pending_for(self, assignee: str, after: str | None, limit: int) -> tuple[list[InboxEntry], bool]:
        with self._lock:
            conversations = list(self._conversations.values())
        found = [
            entry
            for conversation in conversations
            for entry in conversation.pending_cards()
            if assignee in assignees(conversation.conversation_id, entry.card, owner_cards=self.inbox_owner_cards)
            and (after is None or entry.due > after)
        ]
        found.sort(key=lambda e: e.due)
        return found[:limit], len(found) > limit

    def list_conversations(self, owner: str, limit: int, cursor: str | None = None) -> ConversationPage:
        return self._listings.page(owner, limit, cursor)

    def __call__(self, conversation_id: str) -> ChatMemory:
        with self._lock:
            conversation = self._conversations.get(conversation_id)
            if conversation is None:
                conversation = _Conversation(conversation_id, threading.Lock(), self._serializer, self._listings)
                self._conversations[conversation_id] = conversation
            return conversation
