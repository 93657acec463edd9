"""What a handler works with: the ports (store, timeline, queue), the agents and the settings.

:class:`OwnerScopedStore` is how isolation is enforced for a request: every turn the request's Runner
reads passes the ownership check, and a turn owned by someone else is indistinguishable from a missing
one (``TurnNotFoundError`` with the id the caller gave). The check costs no request of its own: it
looks at the snapshot the Runner was reading anyway.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentturn.api.ownership import OWNER_KEY, owns
from agentturn.api.settings import Settings
from agentturn.engine.clock import Clock
from agentturn.errors import SnapshotUnreadableError, TurnNotFoundError

if TYPE_CHECKING:
    # Types only: the Runner (and through it the agents, the model step and the form machinery) is imported
    # by the first request that runs a turn, not by a handler that only reads or sweeps.
    from agentturn.api.agents import AgentCatalog
    from agentturn.engine.events import Listener
    from agentturn.engine.runner import Runner
    from agentturn.ports.memory import ChatMemoryProvider
    from agentturn.ports.queue import ResumeQueue
    from agentturn.ports.store import Lease, RunnableTurn, TurnStore
    from agentturn.state.approvers import Principal
    from agentturn.state.turn import QueuedAnswer, Turn


class OwnerScopedStore:
    """A TurnStore view that only shows ``owner``'s turns. One per request (it remembers what it checked)."""

    def __init__(self, inner: TurnStore, owner: str) -> None:
        self.inner = inner
        self.owner = owner
        self._checked: set[str] = set()

    def _admit(self, turn: Turn) -> Turn:
        if not owns(turn, self.owner):
            raise TurnNotFoundError(turn.id)
        self._checked.add(turn.id)
        return turn

    def _require(self, turn_id: str) -> None:
        if turn_id not in self._checked:
            self.load(turn_id)

    def create(self, turn: Turn, *, lease: Lease | None = None) -> Turn:
        if turn.metadata.get(OWNER_KEY) != self.owner or not owns(turn, self.owner):
            raise ValueError(f"turn {turn.id!r} is not created for owner {self.owner!r}")
        return self._admit(self.inner.create(turn, lease=lease))

    def load(self, turn_id: str) -> Turn:
        try:
            return self._admit(self.inner.load(turn_id))
        except SnapshotUnreadableError as exc:
            # The owner is in the body that cannot be read; the conversation id beside it is namespaced by
            # the owner (``<owner>/<conversation>``), which is enough to keep another caller out.
            if not (exc.conversation_id or "").startswith(f"{self.owner}/"):
                raise TurnNotFoundError(turn_id) from None
            self._checked.add(turn_id)
            raise

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        self._require(turn.id)
        return self.inner.save(turn, expected_version=expected_version, lease_id=lease_id)

    def claim(self, turn_id: str, worker_id: str, lease_seconds: float) -> Lease | None:
        self._require(turn_id)
        return self.inner.claim(turn_id, worker_id, lease_seconds)

    def renew(self, lease: Lease, lease_seconds: float) -> Lease:
        self._require(lease.turn_id)
        return self.inner.renew(lease, lease_seconds)

    def release(self, lease: Lease) -> bool:
        self._require(lease.turn_id)
        return self.inner.release(lease)

    def request_cancel(self, turn_id: str) -> None:
        self._require(turn_id)
        self.inner.request_cancel(turn_id)

    def queue_answer(self, turn_id: str, answer: QueuedAnswer) -> None:
        self._require(turn_id)
        self.inner.queue_answer(turn_id, answer)

    def find_runnable(self, *, idle_seconds: float, limit: int = 100) -> list[RunnableTurn]:
        raise TypeError("find_runnable is the sweeper's, never a caller's")

    def find_overdue(self, *, limit: int = 100) -> list[RunnableTurn]:
        raise TypeError("find_overdue is the sweeper's, never a caller's")

    def delete(self, turn_id: str, *, expected_version: int) -> None:
        self._require(turn_id)
        self.inner.delete(turn_id, expected_version=expected_version)

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
        # A caller ends its own unreadable turn by cancelling it; ownership as ``load`` decides it for such a turn.
        if turn_id not in self._checked:
            with contextlib.suppress(SnapshotUnreadableError):
                self.load(turn_id)
        return self.inner.mark_unreadable(
            turn_id,
            version=version,
            attempts=attempts,
            fail=fail,
            not_before=not_before,
            message=message,
            retain_until=retain_until,
        )


class AnswerScopedStore(OwnerScopedStore):
    """The store view of one answer: the owner's turns, and the turn whose action ``action_id`` the caller may
    answer as one of its approvers (``Approvers``). Anyone else gets the 404 of a missing turn, so a card never
    says it exists to someone who may not answer it."""

    def __init__(self, inner: TurnStore, principal: Principal, action_id: str, request_id: str) -> None:
        super().__init__(inner, principal.subject)
        self.principal = principal
        self.action_id = action_id
        self.request_id = request_id

    def _admit(self, turn: Turn) -> Turn:
        if owns(turn, self.owner) or self._answers(turn):
            self._checked.add(turn.id)
            return turn
        raise TurnNotFoundError(turn.id)

    def _answers(self, turn: Turn) -> bool:
        from agentturn.state.approvers import permitting_groups

        waited = turn.suspension_for(self.action_id)
        if waited is not None and waited.people is not None:
            people = waited.people
            return permitting_groups(people.approvers, people.requested_by, self.principal) is not None
        # A retry of this person's own answer, after it settled the card: the replay answers it as the first time.
        accepted = turn.accepted_requests.get(self.request_id)
        return accepted is not None and accepted.by == self.owner and accepted.action_id == self.action_id


def no_handoff_key() -> bytes | None:
    """No key: resume messages carry no snapshot (every worker claims)."""
    return None


@dataclass
class Services:
    store: TurnStore
    chat_memory: ChatMemoryProvider
    queue: ResumeQueue
    agents: AgentCatalog
    settings: Settings = field(default_factory=Settings)
    listeners: list[Listener] = field(default_factory=list)
    clock: Clock = time.time
    #: The key that seals the snapshot a resume message carries (:mod:`agentturn.engine.handoff`), read when
    #: first needed; ``None``: nothing is carried.
    handoff_key: Callable[[], bytes | None] = no_handoff_key

    def scoped_store(self, owner: str) -> OwnerScopedStore:
        return OwnerScopedStore(self.store, owner)

    def answer_store(self, principal: Principal, action_id: str, request_id: str) -> AnswerScopedStore:
        return AnswerScopedStore(self.store, principal, action_id, request_id)

    def runner(
        self,
        *,
        store: TurnStore | None = None,
        listeners: Iterable[Listener] = (),
        worker_id: str | None = None,
    ) -> Runner:
        """A Runner for one request or record (cheap: agents resolve lazily through the catalog)."""
        from agentturn.engine.retry import RetryPolicy
        from agentturn.engine.runner import Runner

        return Runner(
            store=store if store is not None else self.store,
            chat_memory=self.chat_memory,
            agents=self.agents.resolve,
            listeners=[*self.listeners, *listeners],
            clock=self.clock,
            worker_id=worker_id or f"runner-{uuid.uuid4().hex[:8]}",
            lease_seconds=float(self.settings.lease_seconds),
            retry=RetryPolicy(
                max_attempts=self.settings.max_attempts,
                base_delay=float(self.settings.retry_base_seconds),
                max_delay=float(self.settings.retry_max_seconds),
            ),
        )
