"""The loop: claim a runnable turn, step it while it is runnable and due, let go of it after."""

from __future__ import annotations

from collections.abc import Callable

from agentturn.agents.registry import AgentRegistry
from agentturn.engine.clock import Clock
from agentturn.engine.conversation_lock import holds
from agentturn.engine.lease_keeper import LeaseKeeper
from agentturn.engine.model_step import ModelStep
from agentturn.engine.tool_step import ToolStep
from agentturn.engine.turn_run import LeaseGone, Run, YieldProbe
from agentturn.engine.turn_writer import TurnWriter
from agentturn.errors import AgentChangedError, HandoffLostError, UnknownAgentError, VersionConflictError
from agentturn.ports.memory import ChatMemory
from agentturn.ports.store import Lease, TurnStore
from agentturn.state.messages import ModelMessage
from agentturn.state.turn import Turn, TurnPhase, TurnStatus


class TurnDriver:
    def __init__(
        self,
        store: TurnStore,
        clock: Clock,
        claim: Callable[[str], Lease | None],
        agents: AgentRegistry,
        writer: TurnWriter,
        leases: LeaseKeeper,
        steps: tuple[ModelStep, ToolStep],
        memory: Callable[[str], ChatMemory | None],
    ) -> None:
        self._store = store
        self._clock = clock
        self._claim = claim
        self._agents = agents
        self._writer = writer
        self._leases = leases
        self._model_step, self._tool_step = steps
        self._memory = memory

    def continue_turn(
        self,
        turn_id: str,
        *,
        lease: Lease | None,
        should_yield: YieldProbe | None,
        turn: Turn | None,
        created_here: bool,
        history: list[ModelMessage] | None = None,
        defer_claim: bool = False,
    ) -> Turn:
        """See :meth:`Runner.run_turn`; ``created_here``: the turn was just made (and took its conversation);
        ``history``: the model's view of the conversation before the turn, when the caller read it already."""
        if lease is None and not defer_claim:
            lease = self._claim(turn_id)
            if lease is None:
                return self._store.load(turn_id)
            turn = turn or lease.turn
        try:
            current = turn if turn is not None and turn.id == turn_id else self._store.load(turn_id)
            if not current.status.is_runnable or not current.is_due(self._clock()):
                self._let_go(lease)
                return current
            agent = self._agents.agent_for(current)
            if agent.version != current.agent_version:
                # Taken over by the version that continues it (Agent(continues=...)): its saves say so, and a
                # later deploy's version continues this one.
                current.metadata.setdefault("continuedFrom", current.agent_version)
                current.agent_version = agent.version
        except AgentChangedError as exc:
            # The deployed version says it continues this turn but lacks what it waits on: no later attempt can
            # do better, so the turn ends now, saying why (its cards close), rather than after every attempt.
            run = Run(turn=current, agent=None, lease=lease)
            self._writer.finish(run, TurnStatus.FAILED, "agent_changed", str(exc))
            return run.turn
        except UnknownAgentError as exc:
            # Not deployed here (yet, during a rollout; or any more): try again later, a bounded number of
            # times, then end the turn FAILED so that its conversation is free again.
            return self._writer.retry_later_now(Run(turn=current, agent=None, lease=lease), "agent_unavailable", exc)
        except Exception:
            self._let_go(lease)
            raise
        run = Run(
            turn=current,
            agent=agent,
            lease=lease,
            should_yield=should_yield,
            history=history,
            claim_deferred=lease is None,
        )
        if (
            current.status is TurnStatus.READY
            and not created_here
            and not holds(self._memory(current.conversation_id), current)
        ):
            message = "the turn does not hold its conversation (another turn does, or its start failed)"
            self._writer.finish(run, TurnStatus.FAILED, "conversation_busy", message)
            return run.turn
        if run.claim_deferred:
            return self._drive_unclaimed(run)
        return self.drive(run)

    def _let_go(self, lease: Lease | None) -> None:
        if lease is not None:
            self._store.release(lease)

    def _drive_unclaimed(self, run: Run) -> Turn:
        """Drive a run that started from its message's snapshot; ``HandoffLostError`` when another holder wrote
        or holds the turn (the caller learns that nothing was done, rather than being handed the stored turn)."""
        started_at = run.turn.version
        try:
            return self._step_while_runnable(run)
        except (LeaseGone, VersionConflictError):
            raise HandoffLostError(run.turn.id, started_at) from None
        finally:
            self._end(run)

    def drive(self, run: Run) -> Turn:
        """Step the turn while it is runnable and due, and this process still holds it."""
        try:
            return self._step_while_runnable(run)
        except (LeaseGone, VersionConflictError):
            # Someone else wrote the turn since this process read it: keep nothing computed since.
            return self._store.load(run.turn.id)
        finally:
            self._end(run)

    def _step_while_runnable(self, run: Run) -> Turn:
        while run.turn.status.is_runnable:
            if run.turn.cancel_requested:
                self._writer.finish(run, TurnStatus.CANCELLED)
                break
            if not run.turn.is_due(self._clock()):
                # In the backoff of a failed attempt: the caller hands it on with the remaining delay.
                break
            if run.should_yield is not None and run.should_yield():
                if run.unsaved:
                    # What the run holds unsaved (a model reply, an idempotent tool's result) is handed on.
                    self._writer.save(run, project_later=True)
                break
            self._leases.renew(run)
            if run.turn.phase is TurnPhase.TOOLS and run.turn.pending_tool_calls:
                self._tool_step(run)
            else:
                run.turn.phase = TurnPhase.MODEL
                self._model_step(run)
        # Stopped after a save (the loop breaks only between steps): the turn is as saved, so what that save
        # left to project is projected now. Not after an error: the turn may then hold unsaved work.
        self._writer.settle_projection(run)
        return run.turn

    def _end(self, run: Run) -> None:
        if run.heartbeat is not None:
            run.heartbeat.close()
        if run.lease is not None:
            self._store.release(run.lease)
            run.lease = None
