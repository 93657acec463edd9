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
from typing import Final

from pydantic import Field, model_validator

from agentturn.state.wire import WireModel

#: The turn's metadata key naming who started it (the verified subject; ``agentturn.api.ownership.OWNER_KEY``).
REQUESTER_KEY: Final = "ownerId"
#: A principal's key in the inbox index: a user by subject, a group by name.
USER_PREFIX: Final = "u#"
GROUP_PREFIX: Final = "g#"


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

    @model_validator(mode="after")
    def _check(self) -> Approvers:
        for name, after in (("remind_after", self.remind_after), ("escalate_after", self.escalate_after)):
            if after is not None and not after > 0:
                raise ValueError(f"Approvers.{name} must be > 0 seconds, not {after!r}")
        if (self.escalate_after is None) != (self.escalate_to is None):
            raise ValueError("Approvers.escalate_after and Approvers.escalate_to go together")
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

    def escalated(self) -> Approvers:
        """Who answers after the escalation: the group ``escalate_to`` alone, with the same quorum and rules
        (nothing further to remind of or escalate to)."""
        assert self.escalate_to is not None
        return Approvers(
            groups=(self.escalate_to,),
            quorum=self.quorum,
            exclude_requester=self.exclude_requester,
            rejections=self.rejections,
        )

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


class Decision(WireModel):
    """One person's decision on a card, stored as they made it."""

    subject: str
    #: the groups of theirs that permitted them (empty: named as a user, or the owner of a card without approvers)
    groups: list[str] = Field(default_factory=list)
    verdict: Verdict
    at: str
    reason: str | None = None


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


def waiting_for(approvers: Approvers, decisions: Iterable[Decision]) -> str:
    """What the owner reads on the card while it waits: ``waiting for finance (1 of 2)``."""
    return f"waiting for {approvers.describe()} ({approvals(decisions)} of {approvers.quorum})"


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

    @model_validator(mode="after")
    def _wording(self) -> Assignment:
        if not self.waiting_for:
            self.waiting_for = waiting_for(self.approvers, self.decisions)
        return self

    def with_decision(self, decision: Decision) -> Assignment:
        """A copy with ``decision`` added (the caller checked it is that person's first)."""
        decisions = [*self.decisions, decision]
        return self.model_copy(update={"decisions": decisions, "waiting_for": waiting_for(self.approvers, decisions)})

    def next_due(self) -> float | None:
        """When the sweeper must next act on this wait's people (a reminder or an escalation), if ever."""
        due = [t for t in (self.remind_at, self.escalate_at) if t is not None]
        return min(due) if due else None

    def decided_by(self, subject: str) -> Decision | None:
        return next((d for d in self.decisions if d.subject == subject), None)


def requester_of(conversation_id: str) -> str | None:
    """The owner a namespaced conversation id (``<owner>/<conversation>``, ``agentturn.api.ownership``) names;
    conversation ids hold no "/", so the owner is everything before the last one."""
    owner, slash, _ = conversation_id.rpartition("/")
    return owner if slash and owner else None
