"""The sweeper leaves a turn in the backoff of a failed attempt alone until it is due, then sends it once.

A worker drops a message that comes before the turn is due (``WorkOutcome.NOT_DUE``), so a sweep that sent it
anyway would only cost a claim and a release, at every sweep of the backoff. Time is the backend's fake clock.
"""

from __future__ import annotations

from agentturn import Agent, InMemoryResumeQueue, ScriptedChatModel, Tool, TurnStatus, Worker, WorkOutcome
from agentturn.api.agents import AgentCatalog
from agentturn.api.services import Services
from agentturn.api.settings import Settings
from agentturn.api.sweeper import sweep
from agentturn.api.telemetry import NullTelemetry
from agentturn.engine.retry import RetryPolicy
from agentturn.errors import ModelError, ModelErrorKind
from agentturn.state.messages import AiMessage
from tests.scenarios.conftest import Backend

#: A backoff of several minutes (one attempt failed; the next is due between 300 and 600 s later).
POLICY = RetryPolicy(max_attempts=5, base_delay=600.0, max_delay=600.0)
IDLE = 60


class Throttled:
    """A provider that throttles the first call, then answers."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: object) -> AiMessage:
        self.calls += 1
        if self.calls == 1:
            raise ModelError(
                "throttled", kind=ModelErrorKind.THROTTLED, provider="test", model="m", status=429, retryable=True
            )
        return AiMessage(content="done")


def _services(backend: Backend, agent: Agent, queue: InMemoryResumeQueue) -> Services:
    return Services(
        store=backend.store,
        chat_memory=backend.memory,
        queue=queue,
        agents=AgentCatalog.of([agent]),
        settings=Settings(sweep_idle_seconds=IDLE),
        clock=backend.clock,
    )


def test_a_turn_in_backoff_is_not_swept_until_it_is_due_then_once(backend: Backend) -> None:
    # GIVEN a turn whose model call was throttled: runnable, due only after a backoff of minutes
    model = Throttled()
    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(model),
        tools=[Tool("noop", "", lambda arguments: {})],
    )
    runner = backend.runner([agent], retry=POLICY)
    first = runner.run(agent, "conv", "hello")
    assert first.status is TurnStatus.RUNNING and first.retry is not None and first.retry.not_before is not None
    due = first.retry.not_before
    assert due - backend.clock() > 4 * IDLE
    queue = InMemoryResumeQueue()
    services = _services(backend, agent, queue)

    # WHEN the sweeper runs every minute of the backoff, long after the turn became idle
    sent_early: list[str] = []
    while backend.clock() + IDLE < due:
        backend.clock.advance(IDLE)
        sweep(services, NullTelemetry())
        sent_early += [m.turn_id for m in queue.drain()]

    # THEN it sent nothing: a worker would only have dropped each message as early
    assert sent_early == []
    assert backend.store.load(first.id).version == first.version

    # WHEN the turn is due and the sweeper runs again
    backend.clock.advance(due - backend.clock() + 1)
    swept = sweep(services, NullTelemetry())

    # THEN it sends the turn once, and the worker that gets it runs it to its end
    messages = queue.drain()
    assert [m.turn_id for m in messages] == [first.id]
    assert swept.enqueued == 1
    result = Worker(services.runner()).process(first.id)
    assert result.outcome is WorkOutcome.ADVANCED
    assert result.turn is not None and result.turn.status is TurnStatus.COMPLETED
    assert model.calls == 2
