"""Notices for people: a turn waits for someone, or it ended.

:class:`TurnNotifier` is a runner listener that makes a :class:`TurnNotice` of every suspension and every
terminal state and hands it to a :class:`NoticeSink` (EventBridge on AWS). A notice carries ids, what kind
of wait or end it is, the form's key or the tool's name, and the deadline; never what anyone entered, so a
rule may route it to e-mail or chat without leaking a form. A sink that fails is logged, and the turn goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Final, Literal, Protocol, TypeAlias

from agentturn.engine.clock import iso
from agentturn.engine.events import Event, EventType
from agentturn.state.wire import WireModel

_log = logging.getLogger("agentturn.listeners.notifications")

NoticeKind: TypeAlias = Literal["SUSPENDED", "COMPLETED", "FAILED", "CANCELLED", "REMINDER", "ESCALATED"]

_KINDS: Final[dict[EventType, NoticeKind]] = {
    EventType.TURN_SUSPENDED: "SUSPENDED",
    EventType.TURN_COMPLETED: "COMPLETED",
    EventType.TURN_FAILED: "FAILED",
    EventType.TURN_CANCELLED: "CANCELLED",
    EventType.TURN_REMINDER: "REMINDER",
    EventType.TURN_ESCALATED: "ESCALATED",
}


#: What every turn's life sends: a wait for a person, and each end.
LIFECYCLE_KINDS: Final[frozenset[NoticeKind]] = frozenset({"SUSPENDED", "COMPLETED", "FAILED", "CANCELLED"})
#: What only a wait that asks for it sends (``Approvers.remind_after`` / ``escalate_after``, an escalation at the
#: deadline).
PEOPLE_KINDS: Final[frozenset[NoticeKind]] = frozenset({"REMINDER", "ESCALATED"})


class TurnNotices(StrEnum):
    """Which turn notices a deployment sends; each is an EventBridge event ($1 per million)."""

    #: Every wait for a person and every end (two per form cycle: $2 per million cycles), and the people ones.
    ALL = "all"
    #: Only reminders and escalations: a wait asked for them itself, and nothing else tells its approvers.
    #: An ordinary cycle sends none.
    PEOPLE = "people"
    #: None at all (a wait's reminder then reaches nobody but the inbox).
    NONE = "none"

    @property
    def kinds(self) -> frozenset[NoticeKind]:
        if self is TurnNotices.ALL:
            return LIFECYCLE_KINDS | PEOPLE_KINDS
        return PEOPLE_KINDS if self is TurnNotices.PEOPLE else frozenset()


class NoticeAction(WireModel):
    """One decision a suspended turn waits for: its kind, the id an answer names, the form or the tool, and
    the deadline (ISO 8601 UTC; absent when it waits forever)."""

    suspension_type: str
    action_id: str
    form_key: str | None = None
    tool_name: str | None = None
    deadline: str | None = None


class TurnNotice(WireModel):
    kind: NoticeKind
    turn_id: str
    #: The conversation as its owner names it, and the owner (the verified subject), when the turn has one.
    conversation_id: str
    owner_id: str | None = None
    #: For a suspension: USER_INPUT or TOOL_APPROVAL, the id an answer names, the form or the tool, and the
    #: deadline (ISO 8601 UTC; absent when it waits forever).
    suspension_type: str | None = None
    action_id: str | None = None
    form_key: str | None = None
    tool_name: str | None = None
    deadline: str | None = None
    #: For a suspension: every decision the turn waits for, in order (the fields above repeat the first), so
    #: a rule can reach every person whose answer a batch of several tool calls needs.
    pending_actions: list[NoticeAction] | None = None
    #: For a reminder or an escalation: who may answer the action now (``u#<sub>``, ``g#<group>``: the inbox
    #: keys), and for an escalation who could before.
    approvers: list[str] | None = None
    escalated_from: list[str] | None = None
    #: For an end: the turn's status (COMPLETED, FAILED, MAX_STEPS_REACHED, ...) and the error's type.
    status: str | None = None
    error: str | None = None


class NoticeSink(Protocol):
    def send(self, notice: TurnNotice) -> None: ...


#: The runtime's conversation id → (owner, the conversation as the owner names it).
OwnerOf = Callable[[str], "tuple[str | None, str]"]


def _no_owner(conversation_id: str) -> tuple[str | None, str]:
    return None, conversation_id


def notice_of(event: Event, owner_of: OwnerOf = _no_owner) -> TurnNotice | None:
    kind = _KINDS.get(event.type)
    if kind is None:
        return None
    owner, conversation = owner_of(event.conversation_id) if event.conversation_id else (None, "")
    data = event.data
    if kind == "SUSPENDED":
        expires = data.get("expiresAt")
        return TurnNotice(
            kind=kind,
            turn_id=event.turn_id,
            conversation_id=conversation,
            owner_id=owner,
            suspension_type=_text(data.get("type")),
            action_id=_text(data.get("actionId")),
            form_key=_text(data.get("formKey")),
            tool_name=_text(data.get("toolName")),
            deadline=_deadline(expires),
            pending_actions=_actions(data.get("actions")),
        )
    if kind in ("REMINDER", "ESCALATED"):
        return TurnNotice(
            kind=kind,
            turn_id=event.turn_id,
            conversation_id=conversation,
            owner_id=owner,
            action_id=_text(data.get("actionId")),
            approvers=_texts(data.get("approvers")),
            escalated_from=_texts(data.get("escalatedFrom")),
        )
    return TurnNotice(
        kind=kind,
        turn_id=event.turn_id,
        conversation_id=conversation,
        owner_id=owner,
        status=_text(data.get("status")),
        error=_text(data.get("error")),
    )


def _deadline(expires: object) -> str | None:
    return iso(expires) if isinstance(expires, int | float) else None


def _actions(raw: object) -> list[NoticeAction]:
    # Event data is frozen (lists become tuples, dicts read-only mappings).
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return []
    return [
        NoticeAction(
            suspension_type=str(item.get("type")),
            action_id=str(item.get("actionId")),
            form_key=_text(item.get("formKey")),
            tool_name=_text(item.get("toolName")),
            deadline=_deadline(item.get("expiresAt")),
        )
        for item in raw
        if isinstance(item, Mapping)
    ]


def _texts(value: object) -> list[str] | None:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return None
    return [str(v) for v in value]


def _text(value: object) -> str | None:
    return str(value) if value is not None else None


class TurnNotifier:
    """A runner listener: each suspension and terminal state, as a :class:`TurnNotice`, to ``sink``."""

    def __init__(
        self,
        sink: NoticeSink,
        owner_of: OwnerOf = _no_owner,
        *,
        on_failure: Callable[[TurnNotice, Exception], None] | None = None,
        kinds: frozenset[NoticeKind] = TurnNotices.ALL.kinds,
    ) -> None:
        self.sink = sink
        self.owner_of = owner_of
        self.on_failure = on_failure
        #: the kinds sent (``TurnNotices``): the others are not made at all
        self.kinds = kinds

    def __call__(self, event: Event) -> None:
        if _KINDS.get(event.type) not in self.kinds:
            return
        notice = notice_of(event, self.owner_of)
        if notice is None:
            return
        try:
            self.sink.send(notice)
        except Exception as exc:
            _log.warning("notice %s for turn %r was not sent", notice.kind, notice.turn_id, exc_info=True)
            if self.on_failure is not None:
                self.on_failure(notice, exc)
