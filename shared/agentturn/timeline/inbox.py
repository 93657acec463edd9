"""The inbox: every card waiting for a person, across conversations, by who may answer it.

A pending card is *assigned* to the principals who may answer it (:func:`assignees`): the people and groups its
``Approvers`` name, or — a card without approvers — the owner of its conversation. A chat memory provider that
can list them implements :class:`Inbox`: one read per principal (on DynamoDB, one Query of the sparse
``byAssignee`` index), ordered by :func:`due` — deadline first (no deadline last), then age. A page reads the
caller's own principal and each of their groups (:func:`inbox_page`), merges them, and hands out an opaque
cursor bound to the caller: another person's cursor is refused (:class:`InvalidCursorError`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from agentturn.state.approvers import USER_PREFIX, Principal, permitting_groups, requester_of
from agentturn.state.messages import ApprovalMessage, CardMessage, FormMessage
from agentturn.timeline.conversation_list import InvalidCursorError

#: Sorts after every ISO-8601 deadline: cards without one come last.
NO_DEADLINE: Final = "~"
MAX_CURSOR_CHARS: Final = 4096
MAX_LIMIT: Final = 100


def assignees(conversation_id: str, card: FormMessage | ApprovalMessage, *, owner_cards: bool) -> list[str]:
    """The inbox keys a card waits under while PENDING (none once settled).

    A card without approvers waits for its conversation's owner only with ``owner_cards``: listing those costs
    every form cycle two index writes (the card enters the index and leaves it), so a deployment opts in.
    """
    if card.status != "PENDING":
        return []
    if card.people is not None:
        return card.people.approvers.inbox_keys()
    owner = requester_of(conversation_id) if owner_cards else None
    return [USER_PREFIX + owner] if owner else []


def due(card: FormMessage | ApprovalMessage) -> str:
    """The inbox order of a card: its deadline (none: last), then when it was asked, then its id."""
    asked = card.people.asked_at if card.people is not None and card.people.asked_at else card.sort_key
    return f"{card.expires_at or NO_DEADLINE}#{asked}#{card.message_id}"


@dataclass(frozen=True)
class InboxEntry:
    #: the namespaced conversation id (``<owner>/<conversation>``)
    conversation_id: str
    card: CardMessage
    due: str


@runtime_checkable
class Inbox(Protocol):
    """What a chat memory provider offers when it can list pending cards by assignee."""

    def pending_for(self, assignee: str, after: str | None, limit: int) -> tuple[list[InboxEntry], bool]:
        """Up to ``limit`` cards waiting under ``assignee`` whose :func:`due` is after ``after``, in that order,
        and whether more follow. One read (a Query on DynamoDB)."""
        ...


@dataclass(frozen=True)
class InboxPage:
    entries: list[InboxEntry]
    cursor: str | None


def _owner_tag(principal: Principal) -> str:
    return hashlib.sha256(principal.subject.encode()).hexdigest()[:24]


def encode_cursor(principal: Principal, positions: dict[str, str]) -> str:
    document = json.dumps({"o": _owner_tag(principal), "p": positions}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(document.encode()).decode().rstrip("=")


def decode_cursor(principal: Principal, cursor: str) -> dict[str, str]:
    """The positions a cursor holds, per principal key; refused unless this caller was handed it."""
    if not cursor or len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidCursorError(cursor)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        document = json.loads(raw.decode())
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidCursorError(cursor) from None
    if not isinstance(document, dict) or document.get("o") != _owner_tag(principal):
        # Another person's cursor (or none of ours): it names no position of this caller's inbox.
        raise InvalidCursorError(cursor)
    positions = document.get("p")
    keys = set(principal.inbox_keys())
    if not isinstance(positions, dict) or not all(
        isinstance(k, str) and k in keys and isinstance(v, str) for k, v in positions.items()
    ):
        raise InvalidCursorError(cursor)
    return dict(positions)


def _may_answer(card: CardMessage, principal: Principal) -> bool:
    people = card.people
    return people is None or permitting_groups(people.approvers, people.requested_by, principal) is not None


def inbox_page(inbox: Inbox, principal: Principal, limit: int, cursor: str | None) -> InboxPage:
    """One page of what waits for ``principal``: one read per key of theirs, merged by :func:`due`; a card
    reachable by several keys (named as a user and through a group) shows once."""
    positions = decode_cursor(principal, cursor) if cursor is not None else {}
    limit = max(1, min(limit, MAX_LIMIT))
    fetched: dict[str, list[InboxEntry]] = {}
    more: dict[str, bool] = {}
    for key in principal.inbox_keys():
        fetched[key], more[key] = inbox.pending_for(key, positions.get(key), limit)
    merged: dict[str, InboxEntry] = {}
    for entries in fetched.values():
        for entry in entries:
            merged.setdefault(entry.card.message_id, entry)
    ordered = sorted(merged.values(), key=lambda e: e.due)[:limit]
    if not ordered:
        return InboxPage([], None)
    last = ordered[-1].due
    # A group can hold someone its approvers leave out (the requester, with exclude_requester): not theirs to see.
    page = [e for e in ordered if _may_answer(e.card, principal)]
    next_positions = dict(positions)
    left = False
    for key, entries in fetched.items():
        taken = [e.due for e in entries if e.due <= last]
        if taken:
            next_positions[key] = taken[-1]
        left = left or more[key] or any(e.due > last for e in entries)
    return InboxPage(page, encode_cursor(principal, next_positions) if left else None)
