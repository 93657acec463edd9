"""People beyond the owner: who may answer a card, how many must agree, and each person's decision.

A wait frozen with :class:`Approvers` is answered only by the people it names — a user by subject, or anyone
in one of its groups, where groups come from the verified token only (:class:`Principal` is built by the entry
point from the token's claims, never from a request's body or headers). The card stays PENDING until
``quorum`` distinct permitted people approve; ``rejections`` rejections (one, unless the wait says otherwise)
reject it. Every person's decision is kept as a :class:`Decision` in the wait (and shown on the card) as they
make it; the same person cannot decide twice.

Pure: nothing here reads or writes storage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from pydantic import Field, model_validator

from agentturn.state.wire import WireModel

#: The turn's metadata key naming who started it (the verified subject; ``agentturn.api.ownership.OWNER_KEY``).
REQUESTER_KEY: Final = "ownerId"
#: A principal's key in the inbox index: a user by subject, a group by name.
USER_PREFIX: Final = "u#"
GROUP_PREFIX: Final = "g#"


#: Who decides when the deadline does (``Decision.subject`` and the card's ``decidedBy``): no token carries it, and
#: a decision by it is admitted only as the wait's own default answer once its deadline passed.
DEADLINE_SUBJECT: Final = "agentturn:deadline"


class DeadlineAction(StrEnum):
    """What a wait's deadline does when it passes before the card is settled."""

    #: the turn ends CANCELLED (nothing the card asked for happens)
    CANCEL = "cancel"
    #: the deadline approves the call, as a person would (an approval only)
    APPROVE = "approve"
    #: the deadline rejects the call (an approval only)
    REJECT = "reject"
    #: the deadline submits the default data (a form only; checked against its schema when the form is defined)
    ANSWER = "answer"
    #: the card moves to another group, which answers it from then on
    ESCALATE = "escalate"


class AtDeadline(WireModel):
    """What happens at a wait's ``deadline_after``: ``AtDeadline.cancel()``, a default answer
    (``AtDeadline.approve()``, ``AtDeadline.reject(reason)``, ``AtDeadline.answer(data)`` for a form), or
    ``AtDeadline.escalate("managers")``. A default answer is applied as a person's answer is, recorded as decided by
    the deadline (:data:`DEADLINE_SUBJECT`), and settles the card alone, whatever the quorum."""

    model_config = {**WireModel.model_config, "frozen": True}

    action: DeadlineAction
    #: ANSWER: the form data the deadline submits
    data: dict[str, Any] | None = None
    #: REJECT: the reason the model reads
    reason: str | None = None
    #: ESCALATE: the group the card moves to
    to: str | None = None

    @classmethod
    def cancel(cls) -> AtDeadline:
        return cls(action=DeadlineAction.CANCEL)

    @classmethod
    def approve(cls) -> AtDeadline:
        return cls(action=DeadlineAction.APPROVE)

    @classmethod
    def reject(cls, reason: str | None = None) -> AtDeadline:
        return cls(action=DeadlineAction.REJECT, reason=reason)

    @classmethod
    def answer(cls, data: dict[str, Any]) -> AtDeadline:
        return cls(action=DeadlineAction.ANSWER, data=data)

    @classmethod
    def escalate(cls, to: str) -> AtDeadline:
        return cls(action=DeadlineAction.ESCALATE, to=to)

    @property
    def is_default_answer(self) -> bool:
        return self.action in (DeadlineAction.APPROVE, DeadlineAction.REJECT, DeadlineAction.ANSWER)

    @model_validator(mode="after")
    def _check(self) -> AtDeadline:
        if (self.action is DeadlineAction.ANSWER) != (self.data is not None):
            raise ValueError("AtDeadline: data goes with the action 'answer', and 'answer' needs its data")
        if (self.action is DeadlineAction.ESCALATE) != (self.to is not None):
            raise ValueError("AtDeadline: to goes with the action 'escalate', and 'escalate' needs its group")
        if self.to is not None and (not self.to.strip() or self.to != self.to.strip()):
            raise ValueError(f"AtDeadline: {self.to!r} is not a usable group name")
        if self.reason is not None and self.action is not DeadlineAction.REJECT:
            raise ValueError("AtDeadline: a reason goes with the action 'reject'")
        return self


class Approvers(WireModel):
    """Who may answer a tool approval or a form, and how many of them must approve.

    ``users`` are verified subjects (``sub``); ``groups`` are group names as the token carries them
    (``cognito:groups`` or the claim the deployment names). ``quorum`` distinct people must approve;
    ``rejections`` rejections reject (default one: any permitted person can stop it). ``exclude_requester``
    keeps the person who started the turn from answering even if a group would admit them.
    """

    model_config = {**WireModel.model_config, "frozen": True}

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    quorum: int = 1
    exclude_requester: bool = False
    rejections: int = 1
    #: seconds after the card was asked for when its approvers are reminded once (a ``Turn reminder`` notice)
    remind_after: float | None = None
    #: seconds after the card was asked for when it moves to the group ``escalate_to`` (a ``Turn escalated``
    #: notice): from then on only that group may answer it, and it leaves the earlier approvers' inboxes
    escalate_after: float | None = None
    escalate_to: str | None = None
    #: seconds after the card was asked for when ``at_deadline`` happens, unless the card was settled before
    #: (measured from the ask: an escalation on the way does not move it)
    deadline_after: float | None = None
    at_deadline: AtDeadline | None = None

    @model_validator(mode="after")
    def _check(self) -> Approvers:
        for name, after in (
            ("remind_after", self.remind_after),
            ("escalate_after", self.escalate_after),
            ("deadline_after", self.deadline_after),
        ):
            if after is not None and not after > 0:
                raise ValueError(f"Approvers.{name} must be > 0 seconds, not {after!r}")
        if (self.escalate_after is None) != (self.escalate_to is None):
            raise ValueError("Approvers.escalate_after and Approvers.escalate_to go together")
        if (self.deadline_after is None) != (self.at_deadline is None):
            raise ValueError("Approvers.deadline_after and Approvers.at_deadline go together")
        if self.deadline_after is not None:
            for name, after in (("remind_after", self.remind_after), ("escalate_after", self.escalate_after)):
                if after is not None and after >= self.deadline_after:
                    # It would never happen: the deadline settles the card first.
                    raise ValueError(f"Approvers.{name} ({after!r}) must come before deadline_after")
        if self.escalate_to is not None and (
            not self.escalate_to.strip() or self.escalate_to != self.escalate_to.strip()
        ):
            raise ValueError(f"Approvers: {self.escalate_to!r} is not a usable group name")
        if not self.users and not self.groups:
            raise ValueError("Approvers needs at least one user or group")
        for name in (*self.users, *self.groups):
            if not isinstance(name, str) or not name.strip() or name != name.strip():
                raise ValueError(f"Approvers: {name!r} is not a usable user or group name")
        if self.quorum < 1 or self.rejections < 1:
            raise ValueError("Approvers.quorum and Approvers.rejections must be >= 1")
        if not self.groups and self.quorum > len(set(self.users)):
            raise ValueError(f"Approvers.quorum {self.quorum} is more than the {len(set(self.users))} users named")
        return self

    def escalated(self, to: str | None = None) -> Approvers:
        """Who answers after the escalation (to ``escalate_to``, or ``to`` at the deadline): that group alone,
        with the same quorum and rules; nothing further to remind of or escalate to, but the deadline still
        ahead when there is one (an escalation at the deadline leaves none)."""
        group = to if to is not None else self.escalate_to
        assert group is not None
        keep_deadline = to is None and self.deadline_after is not None
        return Approvers(
            groups=(group,),
            quorum=self.quorum,
            exclude_requester=self.exclude_requester,
            rejections=self.rejections,
            deadline_after=self.deadline_after if keep_deadline else None,
            at_deadline=self.at_deadline if keep_deadline else None,
        )

    def later_groups(self) -> set[str]:
        """The groups this card may move to (``escalate_to``, an escalation at the deadline)."""
        later = {self.escalate_to} if self.escalate_to is not None else set()
        if self.at_deadline is not None and self.at_deadline.to is not None:
            later.add(self.at_deadline.to)
        return later

    def inbox_keys(self) -> list[str]:
        """The inbox keys of everyone this names: each user, each group."""
        return [*(USER_PREFIX + u for u in dict.fromkeys(self.users)), *(GROUP_PREFIX + g for g in self.groups)]

    def describe(self) -> str:
        """Who it waits for, as the owner reads it: ``finance``, ``alice or bob``, ``finance or oncall``."""
        names = [*self.groups, *self.users]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


@dataclass(frozen=True)
class Principal:
    """A verified caller: the token's subject and the groups the token says they belong to."""

    subject: str
    groups: frozenset[str] = field(default_factory=frozenset)

    def inbox_keys(self) -> list[str]:
        """The inbox keys that reach this person: their own, then each group's (sorted, so pages are stable)."""
        return [USER_PREFIX + self.subject, *(GROUP_PREFIX + g for g in sorted(self.groups))]


class Verdict(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"
    #: a form's answer, or a person's answer in the tool's place: decides alone
    ANSWER = "answer"


class DecisionSource(StrEnum):
    #: a verified person
    PERSON = "person"
    #: the wait's deadline, giving its default answer (``Approvers.at_deadline``); subject :data:`DEADLINE_SUBJECT`
    DEADLINE = "deadline"


class Decision(WireModel):
    """One person's decision on a card, stored as they made it."""

    subject: str
    #: the groups of theirs that permitted them (empty: named as a user, or the owner of a card without approvers)
    groups: list[str] = Field(default_factory=list)
    verdict: Verdict
    at: str
    reason: str | None = None
    #: the groups of theirs the card may move to later (``Approvers.later_groups``): the quorum rule
    #: (:func:`counted`) reads them after an escalation; no other group of theirs is kept
    also_in: list[str] = Field(default_factory=list)
    source: DecisionSource = DecisionSource.PERSON


def counted(approvers: Approvers, requested_by: str | None, decisions: Iterable[Decision]) -> list[Decision]:
    """THE QUORUM RULE across an escalation, in its one place: a decision counts toward ``quorum`` (and toward
    ``rejections``) only if the person who made it may answer the card *now*, under ``approvers`` as they are.

    Approvals by the group a card escalated away from stop counting, unless that person is also in the new group;
    every decision stays in the wait's list and in the audit record all the same. A decision by the deadline is
    not a person's and settles the card alone (``engine.people.decides``); it is counted here as made.
    """
    kept: list[Decision] = []
    for decision in decisions:
        if decision.source is DecisionSource.DEADLINE:
            kept.append(decision)
            continue
        principal = Principal(decision.subject, frozenset((*decision.groups, *decision.also_in)))
        if permitting_groups(approvers, requested_by, principal) is not None:
            kept.append(decision)
    return kept


def permitting_groups(approvers: Approvers, requester: str | None, principal: Principal) -> list[str] | None:
    """The groups that let ``principal`` answer (``[]`` when named as a user); ``None`` when they may not."""
    if approvers.exclude_requester and requester is not None and principal.subject == requester:
        return None
    groups = sorted(principal.groups.intersection(approvers.groups))
    if principal.subject in approvers.users:
        return groups
    return groups or None


def approvals(decisions: Iterable[Decision]) -> int:
    return sum(1 for d in decisions if d.verdict is Verdict.APPROVE)


def rejections(decisions: Iterable[Decision]) -> int:
    return sum(1 for d in decisions if d.verdict is Verdict.REJECT)


def waiting_for(approvers: Approvers, decisions: Iterable[Decision], requested_by: str | None = None) -> str:
    """What the owner reads on the card while it waits: ``waiting for finance (1 of 2)``, counting only the
    decisions that count now (:func:`counted`); ``answered by deadline (approve)`` once the deadline decided."""
    decisions = list(decisions)
    by_deadline = next((d for d in decisions if d.source is DecisionSource.DEADLINE), None)
    if by_deadline is not None:
        return f"answered by deadline ({by_deadline.verdict.value})"
    now = approvals(counted(approvers, requested_by, decisions))
    return f"waiting for {approvers.describe()} ({now} of {approvers.quorum})"


def groups_from_claim(value: object) -> frozenset[str]:
    """A token's group claim as the entry point receives it.

    A list (a Lambda authorizer, the local gateway), or the one string API Gateway's JWT authorizer makes of an
    array claim: ``"[finance oncall]"``; a plain string is one group. Anything else: no groups.
    """
    if isinstance(value, list | tuple):
        return frozenset(v for v in value if isinstance(v, str) and v.strip() == v and v)
    if not isinstance(value, str):
        return frozenset()
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1]
        # JSON-looking ("["a","b"]") or API Gateway's space-separated form: quotes and commas are never part of a
        # group name either way.
        parts = inner.replace(",", " ").split()
        return frozenset(p.strip("\"'") for p in parts if p.strip("\"'"))
    return frozenset({text}) if text else frozenset()


class Assignment(WireModel):
    """A wait's people, frozen with it and carried by its card: who may answer, who asked and when, and each
    decision so far. Only waits with :class:`Approvers` have one; the owner answers every other card."""

    approvers: Approvers
    #: the subject who started the turn (``exclude_requester`` refers to them; the inbox shows them)
    requested_by: str | None = None
    #: when the card was asked for (ISO-8601 UTC)
    asked_at: str = ""
    #: what the turn is about, for an approver who cannot open the owner's conversation (its input's first line)
    title: str = ""
    decisions: list[Decision] = Field(default_factory=list)
    #: what the owner reads while it waits: ``waiting for finance (1 of 2)`` (kept with the decisions)
    waiting_for: str = ""
    #: epoch seconds when the approvers are reminded / the card escalates (``None``: never, or done already);
    #: the overdue index keys on the earliest of these and the wait's deadline (``ports.store.wait_deadline``)
    remind_at: float | None = None
    escalate_at: float | None = None
    #: when the reminder went out and when the card escalated, and from whom (ISO-8601 UTC; for the record)
    reminded_at: str | None = None
    escalated_at: str | None = None
    escalated_from: Approvers | None = None
    #: epoch seconds when ``approvers.at_deadline`` happens (``None``: no deadline, or it passed already)
    deadline_at: float | None = None
    #: when the deadline acted (ISO-8601 UTC; for the record)
    deadline_passed_at: str | None = None

    @model_validator(mode="after")
    def _wording(self) -> Assignment:
        if not self.waiting_for:
            self.waiting_for = waiting_for(self.approvers, self.decisions, self.requested_by)
        return self

    def with_decision(self, decision: Decision) -> Assignment:
        """A copy with ``decision`` added (the caller checked it is that person's first)."""
        decisions = [*self.decisions, decision]
        wording = waiting_for(self.approvers, decisions, self.requested_by)
        return self.model_copy(update={"decisions": decisions, "waiting_for": wording})

    def counted(self) -> list[Decision]:
        """The decisions that count toward the quorum now (:func:`counted`)."""
        return counted(self.approvers, self.requested_by, self.decisions)

    def next_due(self) -> float | None:
        """When the sweeper must next act on this wait's people (a reminder, an escalation, the deadline)."""
        due = [t for t in (self.remind_at, self.escalate_at, self.deadline_at) if t is not None]
        return min(due) if due else None

    def deadline_due(self, now: float) -> bool:
        return self.deadline_at is not None and now >= self.deadline_at

    def decided_by(self, subject: str) -> Decision | None:
        return next((d for d in self.decisions if d.subject == subject), None)


def requester_of(conversation_id: str) -> str | None:
    """The owner a namespaced conversation id (``<owner>/<conversation>``, ``agentturn.api.ownership``) names;
    conversation ids hold no "/", so the owner is everything before the last one."""
    owner, slash, _ = conversation_id.rpartition("/")
    return owner if slash and owner else None
