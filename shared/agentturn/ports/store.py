"""The TurnStore port (snapshots with optimistic versions and leases) and its in-memory adapter."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Final, Protocol, runtime_checkable

from pydantic import TypeAdapter, ValidationError

from agentturn.engine.clock import Clock
from agentturn.errors import (
    AnswersQueuedError,
    LeaseLostError,
    SnapshotRoundTripError,
    SnapshotUnreadableError,
    TurnNotFoundError,
    VersionConflictError,
)
from agentturn.ports.serializer import JSON, Serializer
from agentturn.state.turn import SCHEMA_VERSION, QueuedAnswer, Turn, TurnStatus

_TURN: Final[TypeAdapter[Turn]] = TypeAdapter(Turn)


@dataclass(frozen=True)
class Lease:
    """The right to advance a turn. ``lease_id`` is unique per claim: it fences stale holders in the store.

    ``turn`` is the snapshot as the claim found it, when the store could hand it back with the claim (it
    saves the read that would follow); ``None`` means: load it.
    """

    turn_id: str
    worker_id: str
    lease_id: str
    expires_at: float
    turn: Turn | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RunnableTurn:
    turn_id: str
    version: int
    updated_at: float


@runtime_checkable
class TurnStore(Protocol):
    """Turn snapshots. Every write is conditional; a lost condition raises ``VersionConflictError``."""

    def create(self, turn: Turn, *, lease: Lease | None = None) -> Turn:
        """Store a new turn at version 1 (the id must not exist); with ``lease``, already claimed by it."""
        ...

    def load(self, turn_id: str) -> Turn: ...

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        """Store ``turn`` as version ``expected_version + 1``.

        With ``lease_id`` the write also requires that lease to be the current one (even if it has
        expired, as long as nobody took it over); without it, no live lease may exist. The returned turn
        carries the new version and the stored cancel flag.

        Queued answers (:meth:`queue_answer`): a save that leaves the turn not runnable, or whose turn took
        some (``turn.answers_taken``), requires the store to hold exactly ``turn.answers_taken`` of them and
        removes them; otherwise it raises :class:`~agentturn.errors.AnswersQueuedError` carrying them and
        writes nothing. Any other save leaves them as they are.
        """
        ...

    def queue_answer(self, turn_id: str, answer: QueuedAnswer) -> None:
        """Keep ``answer`` beside a runnable turn, after those already queued, without a new version (a running
        worker's writes go on). ``VersionConflictError`` when the turn is not runnable any more, or an answer to
        the same action is queued already (unless it is this very one, ``answer.nonce``: a retried write)."""
        ...

    def claim(self, turn_id: str, worker_id: str, lease_seconds: float) -> Lease | None:
        """Take a lease on a runnable turn whose lease is absent or expired; ``None`` if not possible."""
        ...

    def renew(self, lease: Lease, lease_seconds: float) -> Lease:
        """Extend a lease still held; ``LeaseLostError`` otherwise."""
        ...

    def release(self, lease: Lease) -> bool:
        """Drop a lease still held by this claim; ``False`` if it was no longer ours."""
        ...

    def request_cancel(self, turn_id: str) -> None:
        """Set the monotonic cancel flag: no save, stale or not, can clear it."""
        ...

    def find_runnable(self, *, idle_seconds: float, limit: int = 100) -> list[RunnableTurn]:
        """Runnable turns without a live lease whose last write is older than ``idle_seconds``, and that are
        due: not in the backoff of a failed attempt (:func:`backoff_until`) or of an unreadable snapshot
        (``not_before`` of :meth:`mark_unreadable`)."""
        ...

    def delete(self, turn_id: str, *, expected_version: int) -> None:
        """Remove a turn that lost the race for its conversation (never a turn that ran)."""
        ...

    def find_overdue(self, *, limit: int = 100) -> list[RunnableTurn]:
        """Blocked turns the sweeper must act on, earliest first: a wait has expired (the earliest
        ``expires_at`` of their pending decisions is past) or they carry the cancel flag (see :func:`wait_deadline`)."""
        ...

    def mark_unreadable(
        self,
        turn_id: str,
        *,
        version: int,
        attempts: int,
        fail: bool,
        not_before: float | None = None,
        message: str = "",
        retain_until: float | None = None,
    ) -> bool:
        """Record failed attempt number ``attempts`` on a turn whose snapshot cannot be read, without reading it.

        Conditional: the turn is still at ``version``, not terminal, without a live lease, and has
        ``attempts - 1`` unreadable attempts recorded (so two workers never count one attempt twice). Without
        ``fail`` it records the count and ``not_before`` (when the next attempt is due) and changes nothing
        else. With ``fail`` the turn ends: status FAILED with error :data:`SNAPSHOT_UNREADABLE` and
        ``message``, version + 1, out of the runnable and overdue indexes, retained until ``retain_until``
        like any terminal turn; the body stays as it was, for an operator. Loads then raise
        :class:`~agentturn.errors.SnapshotUnreadableError` carrying that state. Returns whether this call's
        write is what the store holds (``False``: someone else changed the turn first; nothing written).
        """
        ...


#: ``error.type`` of a turn ended because its stored snapshot cannot be read.
SNAPSHOT_UNREADABLE: Final = "snapshot_unreadable"


#: The "deadline" of a blocked turn whose cancel was requested: due at once, before every real deadline.
CANCEL_DUE: Final = 0.0


def wait_deadline(turn: Turn) -> float | None:
    """What an overdue index keys on: when the sweeper must act on a blocked turn, if ever.

    That is the deadline of its wait, or at once (:data:`CANCEL_DUE`) when the turn carries the cancel flag:
    a blocked turn with the flag is a cancel that did not finish (its process died between the write that
    blocked it and the one that cancels it), and the sweeper finishes it.
    """
    if not turn.status.is_blocked:
        return None
    if turn.cancel_requested:
        return CANCEL_DUE
    deadlines = [s.expires_at for s in turn.suspensions if s.expires_at is not None]
    # A reminder or an escalation due before the deadline moves the turn earlier in the index: the sweeper that
    # finds it acts on the people (engine.reminders) and the write re-keys it on what is due next.
    deadlines += [due for s in turn.suspensions if s.people is not None and (due := s.people.next_due()) is not None]
    return min(deadlines) if deadlines else None


def backoff_until(turn: Turn) -> float | None:
    """When a runnable turn in the backoff of a failed attempt is due again (``None``: not in a backoff).

    ``find_runnable`` leaves such a turn out until then: a worker would only drop the message as early
    (:meth:`Turn.is_due`), and a sweep that sent it anyway would send it again at every sweep of the backoff.
    """
    if not turn.status.is_runnable or turn.retry is None:
        return None
    return turn.retry.not_before


def new_lease_id() -> str:
    """A fresh fencing token: 64 random bits (two leases of one turn never meet them twice), and 16 bytes
    fewer than a whole uuid on every leased write of a turn item, which is billed per started KB."""
    return uuid.uuid4().hex[:16]


def as_written(turn: Turn, *, version: int, cancel_requested: bool) -> Turn:
    """``turn`` as a store writes it and hands it back: at ``version``, with the stored cancel flag, in this
    code's schema version (a loaded older snapshot is written back in the current shape).

    A store returns this copy instead of decoding the text it wrote once more: the serializer's round trip is
    exact, which a store built with ``check_round_trip`` proves on every write (the in-memory store by
    default, so every test that runs a turn checks it), and decoding again was a sixth of a form cycle's CPU.
    The copy is shallow: its caller replaces the turn it saved with it and keeps no use of the old one.
    """
    # A turn of a newer schema (code from the future) is refused before anything is written: its shape is not
    # this code's to write back.
    check_schema_version(turn)
    update = {
        "version": version,
        "cancel_requested": cancel_requested,
        "schema_version": SCHEMA_VERSION,
        "queued_answers": [],
        "answers_taken": 0,
    }
    return turn.model_copy(update=update)


def check_round_trip(turn: Turn, text: str, serializer: Serializer) -> None:
    """Refuse a write whose ``text`` does not read back as ``turn`` (``SnapshotRoundTripError``), before it is
    stored: what a turn holds in memory is what a reload after a crash would see."""
    read = serializer.loads(text, _TURN)
    if read == turn:
        return
    differing = next((name for name in Turn.model_fields if getattr(read, name) != getattr(turn, name)), "?")
    raise SnapshotRoundTripError(turn.id, differing)


def check_schema_version(turn: Turn) -> Turn:
    if turn.schema_version > SCHEMA_VERSION:
        raise ValueError(
            f"turn {turn.id!r} has schemaVersion {turn.schema_version}; this code reads up to {SCHEMA_VERSION}"
        )
    return turn


@dataclass
class _Record:
    body: str
    version: int
    status: TurnStatus
    updated_at: float
    conversation_id: str
    cancel_requested: bool = False
    lease: Lease | None = None
    wait_expires_at: float | None = None
    #: what :meth:`TurnStore.mark_unreadable` records, beside the body it cannot read
    unreadable_attempts: int = 0
    not_before: float | None = None
    #: the saved turn's backoff (:func:`backoff_until`)
    backoff_until: float | None = None
    error_type: str | None = None
    error_message: str | None = None
    retain_until: float | None = None
    queued: list[QueuedAnswer] = field(default_factory=list)


def check_taken_answers(turn: Turn, queued: list[QueuedAnswer]) -> None:
    """The queued-answer condition of :meth:`TurnStore.save` (see there), on what the store holds."""
    if turn.answers_taken == 0 and turn.status.is_runnable:
        return
    if len(queued) != turn.answers_taken:
        raise AnswersQueuedError(turn.id, list(queued))


class InMemoryTurnStore:
    """A thread-safe TurnStore for tests and single-process use.

    Snapshots are kept as text made by ``serializer`` (JSON by default), as a real store keeps them, and with
    ``check_round_trip`` (the default) every write first checks that its text reads back as the turn it
    returns, so nothing that would not survive serialisation goes unnoticed here.
    """

    def __init__(
        self, clock: Clock = time.time, *, serializer: Serializer = JSON, check_round_trip: bool = True
    ) -> None:
        self._clock = clock
        self.serializer = serializer
        self._check_round_trip = check_round_trip
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}

    def _live(self, lease: Lease | None) -> bool:
        return lease is not None and lease.expires_at > self._clock()

    def _encode(self, turn: Turn) -> str:
        text = self.serializer.dumps(turn)
        if self._check_round_trip:
            check_round_trip(turn, text, self.serializer)
        return text

    def _decode(self, turn_id: str, record: _Record) -> Turn:
        try:
            turn = check_schema_version(self.serializer.loads(record.body, _TURN))
        except (ValidationError, ValueError) as exc:
            raise SnapshotUnreadableError(
                turn_id,
                str(exc).splitlines()[0],
                status=record.status.value,
                version=record.version,
                conversation_id=record.conversation_id,
                attempts=record.unreadable_attempts,
                not_before=record.not_before,
                error_type=record.error_type,
            ) from exc
        # Freshly decoded, so nobody else holds it: set in place rather than copied.
        turn.version = record.version
        turn.cancel_requested = record.cancel_requested
        turn.queued_answers = list(record.queued)
        return turn

    def create(self, turn: Turn, *, lease: Lease | None = None) -> Turn:
        with self._lock:
            if turn.id in self._records:
                existing = self._records[turn.id]
                raise VersionConflictError(turn.id, None, existing.version)
            stored = as_written(turn, version=1, cancel_requested=turn.cancel_requested)
            self._records[turn.id] = _Record(
                body=self._encode(stored),
                version=1,
                status=stored.status,
                updated_at=self._clock(),
                conversation_id=stored.conversation_id,
                cancel_requested=stored.cancel_requested,
                lease=replace(lease, turn=None) if lease is not None else None,
                wait_expires_at=wait_deadline(stored),
                backoff_until=backoff_until(stored),
            )
            return stored

    def load(self, turn_id: str) -> Turn:
        with self._lock:
            record = self._records.get(turn_id)
            if record is None:
                raise TurnNotFoundError(turn_id)
            return self._decode(turn_id, record)

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        with self._lock:
            record = self._records.get(turn.id)
            if record is None:
                raise TurnNotFoundError(turn.id)
            if lease_id is not None and (record.lease is None or record.lease.lease_id != lease_id):
                raise LeaseLostError(turn.id, lease_id)
            if lease_id is None and self._live(record.lease):
                raise VersionConflictError(turn.id, expected_version, record.version)
            if record.version != expected_version:
                raise VersionConflictError(turn.id, expected_version, record.version)
            check_taken_answers(turn, record.queued)
            if turn.answers_taken:
                record.queued = []
            version = expected_version + 1
            # The flag is monotonic: the stored turn carries it even when this writer had not seen it.
            cancel = record.cancel_requested or turn.cancel_requested
            stored = as_written(turn, version=version, cancel_requested=cancel)
            record.body = self._encode(stored)
            record.version = version
            record.status = stored.status
            record.updated_at = self._clock()
            record.cancel_requested = cancel
            record.wait_expires_at = wait_deadline(stored)
            record.backoff_until = backoff_until(stored)
            record.not_before = None  # as DynamoDB's save removes it: a readable save ends an unreadable backoff
            if not stored.status.is_runnable:
                # A blocked or finished turn has nothing left to run: its lease ends with this write.
                record.lease = None
            return stored

    def claim(self, turn_id: str, worker_id: str, lease_seconds: float) -> Lease | None:
        with self._lock:
            record = self._records.get(turn_id)
            if record is None or not record.status.is_runnable or self._live(record.lease):
                return None
            # Read before the lease is taken: a snapshot that cannot be read is claimed by nobody.
            turn = self._decode(turn_id, record)
            record.lease = Lease(turn_id, worker_id, new_lease_id(), self._clock() + lease_seconds)
            return replace(record.lease, turn=turn)

    def renew(self, lease: Lease, lease_seconds: float) -> Lease:
        with self._lock:
            record = self._records.get(lease.turn_id)
            if record is None or record.lease is None or record.lease.lease_id != lease.lease_id:
                raise LeaseLostError(lease.turn_id, lease.lease_id)
            record.lease = replace(lease, expires_at=self._clock() + lease_seconds, turn=None)
            return record.lease

    def release(self, lease: Lease) -> bool:
        with self._lock:
            record = self._records.get(lease.turn_id)
            if record is None or record.lease is None or record.lease.lease_id != lease.lease_id:
                return False
            record.lease = None
            return True

    def request_cancel(self, turn_id: str) -> None:
        with self._lock:
            record = self._records.get(turn_id)
            if record is None:
                raise TurnNotFoundError(turn_id)
            record.cancel_requested = True

    def queue_answer(self, turn_id: str, answer: QueuedAnswer) -> None:
        with self._lock:
            record = self._records.get(turn_id)
            if record is None:
                raise TurnNotFoundError(turn_id)
            if any(q.nonce == answer.nonce for q in record.queued):
                return
            if not record.status.is_runnable or any(
                q.command.action_id == answer.command.action_id for q in record.queued
            ):
                raise VersionConflictError(turn_id, None, record.version)
            record.queued.append(answer)

    def find_runnable(self, *, idle_seconds: float, limit: int = 100) -> list[RunnableTurn]:
        with self._lock:
            horizon = self._clock() - idle_seconds
            found = [
                RunnableTurn(turn_id, record.version, record.updated_at)
                for turn_id, record in self._records.items()
                if record.status.is_runnable
                and not self._live(record.lease)
                and record.updated_at <= horizon
                and self._due(record)
            ]
        found.sort(key=lambda r: r.updated_at)
        return found[:limit]

    def _due(self, record: _Record) -> bool:
        now = self._clock()
        return all(at is None or at <= now for at in (record.backoff_until, record.not_before))

    def find_overdue(self, *, limit: int = 100) -> list[RunnableTurn]:
        with self._lock:
            now = self._clock()
            found = [
                (record.wait_expires_at, RunnableTurn(turn_id, record.version, record.updated_at))
                for turn_id, record in self._records.items()
                if record.wait_expires_at is not None and record.wait_expires_at <= now
            ]
        found.sort(key=lambda pair: pair[0])
        return [turn for _, turn in found[:limit]]

    def mark_unreadable(
        self,
        turn_id: str,
        *,
        version: int,
        attempts: int,
        fail: bool,
        not_before: float | None = None,
        message: str = "",
        retain_until: float | None = None,
    ) -> bool:
        with self._lock:
            record = self._records.get(turn_id)
            if (
                record is None
                or record.version != version
                or record.status.is_terminal
                or self._live(record.lease)
                or record.unreadable_attempts != attempts - 1
            ):
                return False
            record.unreadable_attempts = attempts
            if not fail:
                record.not_before = not_before
                return True
            # The body stays as it was (an operator may want it); the error is kept beside it.
            record.status = TurnStatus.FAILED
            record.version = version + 1
            record.updated_at = self._clock()
            record.lease = None
            record.wait_expires_at = None
            record.not_before = None
            record.error_type = SNAPSHOT_UNREADABLE
            record.error_message = message
            record.retain_until = retain_until
            return True

    def delete(self, turn_id: str, *, expected_version: int) -> None:
        with self._lock:
            record = self._records.get(turn_id)
            if record is None:
                return
            if record.version != expected_version:
                raise VersionConflictError(turn_id, expected_version, record.version)
            del self._records[turn_id]
