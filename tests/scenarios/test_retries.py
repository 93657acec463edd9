"""Failures that may pass: a retryable model error, an agent version not deployed here, an unexpected error.
The turn stays runnable with an exponential backoff for a bounded number of attempts, then ends FAILED;
a non-retryable model error fails it at once. Time is the backend's fake clock: nothing sleeps."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    EventType,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolMessage,
    TurnStatus,
    Worker,
    WorkOutcome,
)
from agentturn.api.telemetry import metrics_listener
from agentturn.engine.retry import RetryPolicy, handoff_delay
from agentturn.errors import ModelError, ModelErrorKind
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import SUPPORT_DATA, Ledger, ai_calls, form_asking_agent

POLICY = RetryPolicy(max_attempts=3, base_delay=2.0, max_delay=60.0)


class Outage:
    """The provider's side: the next ``failures`` calls fail with ``error``; the answers are the script's."""

    def __init__(self, failures: int, error: ModelError) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    def model(self, request: ChatRequest) -> AiMessage:
        self.calls += 1
        if self.failures > 0:
            self.failures -= 1
            raise self.error
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return AiMessage(content="ticket created")
        return ai_calls(("t1", "create_ticket", {"title": "login"}))


def model_error(kind: ModelErrorKind, *, retryable: bool, retry_after: float | None = None) -> ModelError:
    return ModelError(
        f"{kind.value} from the provider",
        kind=kind,
        provider="test",
        model="m",
        status=429 if kind is ModelErrorKind.THROTTLED else 500,
        retryable=retryable,
        retry_after=retry_after,
    )


def ticket_agent(outage: Outage, ledger: Ledger) -> Agent:
    return Agent(
        id="tickets",
        instructions="",
        chat_model=ScriptedChatModel(outage.model),
        tools=[Tool("create_ticket", "", lambda arguments: ledger.write(dict(arguments)))],
    )


def events_of(backend: Backend, kind: EventType) -> list[dict[str, Any]]:
    return [dict(e.data) for e in backend.events if e.type is kind]


def test_a_throttled_model_is_retried_with_backoff_and_the_turn_completes(backend: Backend) -> None:
    # GIVEN a model throttled for its next two calls
    outage = Outage(2, model_error(ModelErrorKind.THROTTLED, retryable=True))
    ledger = Ledger()
    agent = ticket_agent(outage, ledger)
    runner = backend.runner([agent], retry=POLICY)
    worker = Worker(runner)

    # WHEN the turn runs
    first = runner.run(agent, "conv", "open a ticket")

    # THEN it is kept runnable, due after the first backoff (between half and all of 2 s), and the hand-off
    # to the queue carries that delay
    assert first.status is TurnStatus.RUNNING
    assert first.retry is not None and (first.retry.attempts, first.retry.reason) == (1, "model_error")
    assert first.retry.not_before is not None
    wait = first.retry.not_before - backend.clock()
    assert 1.0 <= wait <= 2.0
    assert handoff_delay(first, backend.clock()) == 2

    # WHEN a message comes before it is due
    early = worker.process(first.id)
    # THEN it is acknowledged as not due, and nothing is written
    assert early.outcome is WorkOutcome.NOT_DUE
    assert backend.store.load(first.id).version == first.version

    # WHEN time passes and the worker tries again: throttled once more, the next backoff is longer
    backend.clock.advance(wait)
    second = worker.process(first.id).turn
    assert second is not None and second.retry is not None and second.retry.attempts == 2
    assert second.retry.not_before is not None
    wait = second.retry.not_before - backend.clock()
    assert 2.0 <= wait <= 4.0

    # WHEN it is due again: the model answers
    backend.clock.advance(wait)
    done = worker.process(first.id).turn

    # THEN the turn completes, its tool ran once, the retry state is gone
    assert done is not None and done.status is TurnStatus.COMPLETED
    assert done.retry is None
    assert len(ledger.effects) == 1
    # ... and each failure was an event, with whether and when it is retried
    failed = events_of(backend, EventType.MODEL_FAILED)
    assert [(f["kind"], f["retryable"], f["attempt"]) for f in failed] == [
        ("throttled", True, 1),
        ("throttled", True, 2),
    ]
    scheduled = events_of(backend, EventType.RETRY_SCHEDULED)
    assert [(s["reason"], s["attempt"], s["maxAttempts"]) for s in scheduled] == [
        ("model_error", 1, 3),
        ("model_error", 2, 3),
    ]


def test_a_model_still_failing_after_the_last_attempt_fails_the_turn_and_frees_the_conversation(
    backend: Backend,
) -> None:
    # GIVEN a model whose 5xx outage outlasts the attempts allowed
    outage = Outage(10, model_error(ModelErrorKind.SERVER_ERROR, retryable=True))
    agent = ticket_agent(outage, Ledger())
    runner = backend.runner([agent], retry=POLICY)
    worker = Worker(runner)
    turn = runner.run(agent, "conv", "open a ticket")

    # WHEN the worker tries each time it is due
    while turn.status.is_runnable:
        assert turn.retry is not None and turn.retry.not_before is not None
        backend.clock.advance(turn.retry.not_before - backend.clock())
        result = worker.process(turn.id)
        assert result.turn is not None
        turn = result.turn

    # THEN the model was called exactly max_attempts times, and the turn ended FAILED with a clear code
    assert outage.calls == POLICY.max_attempts
    assert turn.status is TurnStatus.FAILED
    assert turn.error is not None and turn.error.type == "model_retries_exhausted"
    assert "after 3 attempts" in turn.error.message
    assert backend.memory("conv").get_active_turn() is None
    assert [e.type for e in backend.events][-1] is EventType.TURN_FAILED


def test_a_non_retryable_model_error_fails_the_turn_at_once(backend: Backend) -> None:
    # GIVEN a model refusing the credentials
    outage = Outage(1, model_error(ModelErrorKind.AUTH, retryable=False))
    agent = ticket_agent(outage, Ledger())
    runner = backend.runner([agent], retry=POLICY)

    # WHEN the turn runs
    done = runner.run(agent, "conv", "open a ticket")

    # THEN it failed on the first call, nothing is scheduled, and the failure is an event
    assert done.status is TurnStatus.FAILED
    assert done.error is not None and done.error.type == "model_error"
    assert outage.calls == 1
    assert events_of(backend, EventType.RETRY_SCHEDULED) == []
    assert [(f["kind"], f["retryable"]) for f in events_of(backend, EventType.MODEL_FAILED)] == [("auth", False)]
    assert backend.memory("conv").get_active_turn() is None


def test_a_providers_retry_after_is_respected(backend: Backend) -> None:
    # GIVEN a throttled model whose provider says to wait 30 s
    outage = Outage(1, model_error(ModelErrorKind.THROTTLED, retryable=True, retry_after=30.0))
    agent = ticket_agent(outage, Ledger())
    runner = backend.runner([agent], retry=POLICY)

    # WHEN the turn runs
    turn = runner.run(agent, "conv", "open a ticket")

    # THEN it is not due for 30 s, even though its own first backoff is shorter
    assert turn.retry is not None and turn.retry.not_before is not None
    assert turn.retry.not_before - backend.clock() >= 29.9
    assert Worker(runner).process(turn.id).outcome is WorkOutcome.NOT_DUE


def test_a_cancel_during_the_backoff_ends_the_turn(backend: Backend) -> None:
    # GIVEN a turn waiting out a backoff
    outage = Outage(1, model_error(ModelErrorKind.TIMEOUT, retryable=True))
    agent = ticket_agent(outage, Ledger())
    runner = backend.runner([agent], retry=POLICY)
    turn = runner.run(agent, "conv", "open a ticket")

    # WHEN it is cancelled
    cancelled = runner.cancel(turn.id)

    # THEN it is CANCELLED at once (nobody holds it), and the model is not called again
    assert cancelled.status is TurnStatus.CANCELLED
    backend.clock.advance(3600)
    assert Worker(runner).process(turn.id).outcome is WorkOutcome.NOT_RUNNABLE
    assert outage.calls == 1


def submitted_turn(backend: Backend) -> tuple[Agent, str]:
    agent = form_asking_agent()
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket please")
    runner.submit_resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    return agent, waiting.id


def test_an_agent_version_not_deployed_is_retried_and_runs_once_it_is(backend: Backend) -> None:
    # GIVEN a submitted turn, and a worker deployment that does not have its agent (yet)
    agent, turn_id = submitted_turn(backend)
    old = Worker(backend.runner([], retry=POLICY))

    # WHEN the worker picks it up
    first = old.process(turn_id).turn

    # THEN the turn is kept runnable with a failed attempt, never run with another agent
    assert first is not None and first.status is TurnStatus.RUNNING
    assert first.retry is not None and first.retry.reason == "agent_unavailable"

    # WHEN the agent is deployed and the retry is due
    assert first.retry.not_before is not None
    backend.clock.advance(first.retry.not_before - backend.clock())
    done = Worker(backend.runner([agent], retry=POLICY)).process(turn_id).turn

    # THEN it runs from where it stopped
    assert done is not None and done.status is TurnStatus.COMPLETED and done.retry is None


@pytest.mark.parametrize("reason", ["agent_unavailable", "cannot_run"])
def test_a_turn_that_cannot_run_ends_failed_after_its_attempts(backend: Backend, reason: str) -> None:
    # GIVEN a submitted turn that fails every attempt: its agent is gone, or its run raises unexpectedly
    _, turn_id = submitted_turn(backend)
    runner = backend.runner([], retry=POLICY)
    worker = Worker(runner)

    def attempt() -> Any:
        if reason == "agent_unavailable":
            return worker.process(turn_id).turn
        return runner.record_failure(turn_id, RuntimeError("snapshot too large to save"))

    # WHEN it is tried each time it is due
    turn = attempt()
    tries = 1
    while turn.status.is_runnable:
        backend.clock.advance(turn.retry.not_before - backend.clock())
        turn = attempt()
        tries += 1

    # THEN after exactly max_attempts it ended FAILED with its code, its card closed, its conversation free
    assert tries == POLICY.max_attempts
    assert turn.status is TurnStatus.FAILED
    assert turn.error.type == reason
    assert all(card.status.value == "SUBMITTED" for card in turn.cards)
    assert backend.memory("conv").get_active_turn() is None
    # ... and nothing is left for the sweeper to re-enqueue
    assert backend.store.find_runnable(idle_seconds=0) == []


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    # GIVEN a policy WHEN the delays of successive attempts are computed THEN each lies in [half, all] of the
    # doubled base, never above the cap, and the same turn and attempt always get the same delay
    policy = RetryPolicy(max_attempts=10, base_delay=2.0, max_delay=60.0)
    for attempt in range(1, 10):
        ceiling = min(60.0, 2.0 * 2 ** (attempt - 1))
        delays = [policy.delay(f"turn-{n}", attempt) for n in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1
        assert policy.delay("turn-1", attempt) == policy.delay("turn-1", attempt)
    assert policy.delay("t", 1, at_least=600.0) == 60.0


class CountingTelemetry:
    """The telemetry port, counting what the metrics listener emits."""

    def __init__(self) -> None:
        self.counts: dict[str, float] = {}

    def count(self, name: str, value: float = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + value

    def milliseconds(self, name: str, value: float) -> None:
        return None

    def bind(self, **keys: str) -> None:
        return None

    def unbind(self, *keys: str) -> None:
        return None


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            model_error(ModelErrorKind.THROTTLED, retryable=True),
            {"ModelCallsFailed": 3, "TurnRetriesScheduled": 2, "TurnsFailed": 1, "ModelRetriesExhausted": 1},
        ),
        (
            model_error(ModelErrorKind.INVALID_REQUEST, retryable=False),
            {"ModelCallsFailed": 1, "TurnsFailed": 1, "ModelErrorsFatal": 1},
        ),
    ],
    ids=["retryable", "not_retryable"],
)
def test_model_failures_are_counted_as_metrics(backend: Backend, error: ModelError, expected: dict[str, int]) -> None:
    # GIVEN a model that keeps failing, and a runner whose events feed the telemetry port
    telemetry = CountingTelemetry()
    agent = ticket_agent(Outage(10, error), Ledger())
    runner = backend.runner([agent], retry=POLICY, listeners=[metrics_listener(telemetry)])
    worker = Worker(runner)

    # WHEN the turn runs until it ends
    turn = runner.run(agent, "conv", "open a ticket")
    while turn.status.is_runnable:
        assert turn.retry is not None and turn.retry.not_before is not None
        backend.clock.advance(turn.retry.not_before - backend.clock())
        result = worker.process(turn.id).turn
        assert result is not None
        turn = result

    # THEN each failed call, each scheduled retry and the final failure (with its cause) were counted
    assert {name: telemetry.counts.get(name, 0) for name in expected} == expected
    assert telemetry.counts.get("TurnsUnrunnable", 0) == 0
