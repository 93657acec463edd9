"""The audit record: one immutable entry per decision a person makes on a card.

Who decided (the verified subject, and the groups that permitted them), when, what they were shown (the
arguments' fingerprint, or the form schema's), the arguments as proposed and as edited, the answer, and what
the decision did to the card (``outcome``: APPROVED, or still PENDING "waiting for finance (1 of 2)"). Form data
is recorded by its fingerprint, not its values: the values leave the snapshot once their tool has run
(DESIGN invariant 8) and the record must not keep them longer.

The tool's outcome is a record of its own (:class:`OutcomeRecord`): when the approved call's tool has run,
one more conditional put under the same turn, keyed by the card (never by a person), adds whether it succeeded
or failed and the sha256 fingerprint of what it returned (a failure also keeps its error line, which names no
argument values the record does not already hold). The decisions themselves are never touched: a record
rewritten to add its outcome could also have been rewritten in any other way, and a put that only creates
cannot. A tool that runs again after a crash finds the first outcome there and leaves it.

Records are written for cards with approvers (decisions by people other than the requester). A card its owner
answers alone already is such a record: once settled it never changes (``agentturn.state.messages.is_settled``)
and holds who, when and what; :func:`card_records` reads it as one, so that the owner's decisions cost no
request and no write unit more per form cycle (DESIGN's ≤ 5 requests per submit, ≤ 14 per cycle).

A chat memory provider that can keep records implements :class:`AuditLog` (the in-memory reference below, and
``agentturn.aws.chat_memory.DynamoDBChatMemory``, which keeps them beside the turn's timeline so that retention
removes them with the turn). A record is written by a conditional put: never rewritten; writing the same
decision again (the retry of an answer) finds it there and counts as done.
"""

from __future__ import annotations

import hashlib
import json
import threading
from enum import StrEnum
from typing import Any, Final, Protocol, runtime_checkable

from pydantic import Field, JsonValue

from agentturn.state.approvers import DecisionSource
from agentturn.state.commands import ResumeCommand, ResumeKind
from agentturn.state.messages import ApprovalMessage, FormMessage
from agentturn.state.turn import Turn
from agentturn.state.wire import WireModel


class AuditRecord(WireModel):
    turn_id: str
    action_id: str
    #: ``agent_approval`` or ``agent_form``
    card_type: str
    tool_name: str = ""
    form_key: str | None = None
    subject: str
    #: the groups of the subject's token that let them decide (empty: named as a user, or the turn's owner)
    groups: list[str] = Field(default_factory=list)
    at: str
    kind: ResumeKind
    #: what the person was shown: ``argumentsFingerprint`` of an approval, ``schemaFingerprint`` of a form
    shown: dict[str, str] = Field(default_factory=dict)
    arguments: dict[str, Any] | None = None
    edited_arguments: dict[str, Any] | None = None
    reason: str | None = None
    response: JsonValue = None
    #: sha256 of the canonical JSON of the submitted form data (the values themselves are not kept here)
    data_fingerprint: str | None = None
    #: the card's status after this decision, and while it still waits, for whom
    outcome: str
    waiting_for: str | None = None
    #: who decided: a person, or the wait's deadline giving its default answer (``subject`` is then
    #: ``agentturn:deadline`` and ``groups`` is empty)
    source: DecisionSource = DecisionSource.PERSON


class ToolOutcome(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


#: How much of a failed tool's error line a record keeps.
SUMMARY_CHARS: Final = 200


class OutcomeRecord(WireModel):
    """What the approved call's tool did, recorded once after it ran (beside the decisions, never in them)."""

    turn_id: str
    #: the approval card's action id (the tool call's id)
    action_id: str
    tool_name: str
    at: str
    outcome: ToolOutcome
    #: sha256 of the canonical JSON of the tool's result (or of its error line)
    result_fingerprint: str
    #: a failure's error line, cut at ``SUMMARY_CHARS``; empty for a success (its result may hold personal data)
    summary: str = ""


@runtime_checkable
class AuditLog(Protocol):
    """What a chat memory provider offers when it keeps audit records."""

    def record_decision(self, conversation_id: str, created_at: str, record: AuditRecord) -> bool:
        """Put ``record`` unless a record of the same decision is there; True when this call wrote it."""
        ...

    def decisions(self, conversation_id: str, created_at: str, turn_id: str) -> list[AuditRecord]:
        """The turn's records, in the order they were made."""
        ...


@runtime_checkable
class OutcomeLog(Protocol):
    """What a chat memory provider offers when it keeps the outcomes of approved tools too."""

    def record_outcome(self, conversation_id: str, created_at: str, record: OutcomeRecord) -> bool:
        """Put ``record`` unless the card's outcome is there; True when this call wrote it."""
        ...

    def outcomes(self, conversation_id: str, created_at: str, turn_id: str) -> list[OutcomeRecord]:
        """The turn's tool outcomes, in the order they were recorded."""
        ...


def outcome_record(turn: Turn, call_id: str, outcome: ToolOutcome, result: Any, at: str) -> OutcomeRecord | None:
    """The outcome of ``call_id``'s tool when people with approvers approved it (their decisions have records to
    go with); None otherwise (no card, or one its owner answered alone: the timeline's tool result is its record)."""
    card = next((c for c in turn.cards if c.action_id == call_id), None)
    if not isinstance(card, ApprovalMessage) or card.people is None or card.status != "APPROVED":
        return None
    return OutcomeRecord(
        turn_id=turn.id,
        action_id=call_id,
        tool_name=card.tool_name,
        at=at,
        outcome=outcome,
        result_fingerprint=fingerprint(result),
        summary=str(result)[:SUMMARY_CHARS] if outcome is ToolOutcome.FAILED else "",
    )


def fingerprint(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def audit_record(turn: Turn, command: ResumeCommand) -> AuditRecord | None:
    """The record of ``command``'s decision, read from ``turn`` as saved after it (its card carries what was
    shown and each person's decision); None for an answer with no card (a plain-text wait) or no answerer."""
    answerer = command.answerer
    card = next((c for c in turn.cards if c.action_id == command.action_id), None)
    if answerer is None or card is None or card.people is None:
        # No card, or one its owner answers alone: the settled card is the record (card_records).
        return None
    decision = card.people.decided_by(answerer.subject)
    if decision is None:
        return None
    common: dict[str, Any] = {
        "turn_id": turn.id,
        "action_id": card.action_id,
        "card_type": card.type,
        "tool_name": card.tool_name,
        "subject": answerer.subject,
        "groups": decision.groups if decision is not None else [],
        "source": decision.source if decision is not None else DecisionSource.PERSON,
        "kind": command.kind,
        "reason": command.reason,
        "outcome": card.status.value,
        "waiting_for": card.people.waiting_for if card.people is not None and card.status == "PENDING" else None,
    }
    if isinstance(card, ApprovalMessage):
        at = decision.at if decision is not None else card.decided_at
        return AuditRecord(
            **common,
            at=at or turn.updated_at,
            shown={"argumentsFingerprint": card.arguments_fingerprint or fingerprint(card.arguments)},
            arguments=card.arguments,
            edited_arguments=card.edited_arguments,
            response=command.response,
        )
    assert isinstance(card, FormMessage)
    at = decision.at if decision is not None else card.submitted_at
    return AuditRecord(
        **common,
        form_key=card.form_key,
        at=at or turn.updated_at,
        shown={"schemaFingerprint": fingerprint(card.schema)},
        data_fingerprint=fingerprint(command.data) if command.data is not None else None,
    )


def card_records(turn: Turn) -> list[AuditRecord]:
    """The decisions of the turn's settled cards without approvers, read from the cards themselves (immutable
    once settled). Form data shows by nothing: by then it may have been redacted."""
    records: list[AuditRecord] = []
    for card in turn.cards:
        if card.people is not None or card.status in ("PENDING", "CANCELLED", "EXPIRED"):
            continue
        if isinstance(card, ApprovalMessage):
            if card.decided_by is None:
                continue
            kind = {"APPROVED": ResumeKind.APPROVE_TOOL, "REJECTED": ResumeKind.REJECT_TOOL}.get(
                card.status.value, ResumeKind.RESPOND_TOOL
            )
            records.append(
                AuditRecord(
                    turn_id=turn.id,
                    action_id=card.action_id,
                    card_type=card.type,
                    tool_name=card.tool_name,
                    subject=card.decided_by,
                    at=card.decided_at or "",
                    kind=kind,
                    shown={"argumentsFingerprint": card.arguments_fingerprint or fingerprint(card.arguments)},
                    arguments=card.arguments,
                    edited_arguments=card.edited_arguments,
                    reason=card.reason,
                    response=card.response,
                    outcome=card.status.value,
                )
            )
        elif card.submitted_by is not None:
            records.append(
                AuditRecord(
                    turn_id=turn.id,
                    action_id=card.action_id,
                    card_type=card.type,
                    tool_name=card.tool_name,
                    form_key=card.form_key,
                    subject=card.submitted_by,
                    at=card.submitted_at or "",
                    kind=ResumeKind.FORM_INPUT if card.status == "SUBMITTED" else ResumeKind.DECLINE_INPUT,
                    shown={"schemaFingerprint": fingerprint(card.schema)},
                    reason=card.decline_reason,
                    outcome=card.status.value,
                )
            )
    return records


def record_key(record: AuditRecord) -> str:
    """What makes a record one decision: its card and who made it (one decision per person and card)."""
    return f"{record.action_id}\x1f{record.subject}"


class InMemoryAuditLog:
    """The reference: records by turn, each written once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, AuditRecord]] = {}
        self._outcomes: dict[str, dict[str, OutcomeRecord]] = {}

    def record_decision(self, conversation_id: str, created_at: str, record: AuditRecord) -> bool:
        with self._lock:
            turn = self._records.setdefault(record.turn_id, {})
            if record_key(record) in turn:
                return False
            turn[record_key(record)] = record.deep_copy()
            return True

    def decisions(self, conversation_id: str, created_at: str, turn_id: str) -> list[AuditRecord]:
        with self._lock:
            return [r.deep_copy() for r in self._records.get(turn_id, {}).values()]

    def record_outcome(self, conversation_id: str, created_at: str, record: OutcomeRecord) -> bool:
        with self._lock:
            turn = self._outcomes.setdefault(record.turn_id, {})
            if record.action_id in turn:
                return False
            turn[record.action_id] = record.deep_copy()
            return True

    def outcomes(self, conversation_id: str, created_at: str, turn_id: str) -> list[OutcomeRecord]:
        with self._lock:
            return [r.deep_copy() for r in self._outcomes.get(turn_id, {}).values()]

    def forget(self, turn_id: str) -> None:
        """Retention's part: the records leave with their turn."""
        with self._lock:
            self._records.pop(turn_id, None)
            self._outcomes.pop(turn_id, None)
