"""A deployment without Lambda's process model: the run/submit HTTP entry points and a worker over chosen
adapters (in memory, or DynamoDB Local), the demo agents writing to one :class:`TicketLedger`.

``HttpApi.handle`` is what each Lambda handler wraps (the Powertools decorators around it keep process-wide
state that one Lambda invocation at a time never shares), so threads may call it at once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agentturn import Agent, InMemoryChatMemory, InMemoryTurnStore, TurnStore, Worker
from agentturn.api.agents import AgentCatalog
from agentturn.api.http import HttpApi
from agentturn.api.routes import RUN_LAMBDA_GROUPS, SUBMIT_LAMBDA_GROUPS
from agentturn.api.services import Services
from agentturn.demo import TicketLedger, demo_agents
from agentturn.engine.handoff import serializer_of, unpack_snapshot
from agentturn.engine.worker import WorkOutcome
from agentturn.ports.memory import ChatMemoryProvider
from agentturn.ports.queue import InMemoryResumeQueue, ResumeMessage, ResumeQueue
from tests.functional.harness import DEFAULT_SUB, HttpResponse, http_event
from tests.support.clock import FakeClock

TICKET_INPUT = "create a high priority login incident ticket"
#: The key the kit's functions seal carried snapshots with (as a deployment's secret).
HANDOFF_KEY = b"reliability-handoff-key-" + b"0" * 32
VALID_TICKET = {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}


def response(raw: dict[str, Any]) -> HttpResponse:
    return HttpResponse(
        raw["statusCode"], {k.lower(): v for k, v in (raw.get("headers") or {}).items()}, raw["body"], raw
    )


@dataclass
class Stack:
    store: TurnStore
    memory: ChatMemoryProvider
    clock: FakeClock
    ledger: TicketLedger = field(default_factory=TicketLedger)
    queue: InMemoryResumeQueue = field(default_factory=InMemoryResumeQueue)
    #: What the handlers see, when not the stack's own ports (a fault injector wraps them).
    ports: tuple[TurnStore, ChatMemoryProvider, ResumeQueue] | None = None
    #: The deployed agents (default: the demo agents writing to ``ledger``).
    agents: list[Agent] | None = None

    def __post_init__(self) -> None:
        store, memory, queue = self.ports or (self.store, self.memory, self.queue)
        self.services = Services(
            store=store,
            chat_memory=memory,
            queue=queue,
            agents=AgentCatalog.of(
                self.agents or demo_agents(self.ledger), default_agent=None if self.agents else "support-agent"
            ),
            clock=self.clock,
            handoff_key=lambda: HANDOFF_KEY,
        )
        self.run_api = HttpApi(RUN_LAMBDA_GROUPS, services=self.services)
        self.submit_api = HttpApi(SUBMIT_LAMBDA_GROUPS, services=self.services)

    # ------------------------------------------------------------------ HTTP

    def run(self, event: dict[str, Any]) -> HttpResponse:
        return response(self.run_api.handle(event, None))

    def submit(self, event: dict[str, Any]) -> HttpResponse:
        return response(self.submit_api.handle(event, None))

    def start_ticket(
        self,
        conversation_id: str = "conv-1",
        *,
        sub: str = DEFAULT_SUB,
        agent_id: str = "support-agent",
        text: str = TICKET_INPUT,
    ) -> dict[str, Any]:
        """A turn waiting for its form (by default the support ticket's); returns the turn view."""
        started = self.run(
            http_event(
                "http_start_turn.json",
                path=f"/conversations/{conversation_id}/turns",
                body={"input": text, "agentId": agent_id},
                sub=sub,
            )
        )
        assert started.status == 200, started.body
        view: dict[str, Any] = started.json
        assert view["status"] == "WAITING_FOR_USER", view
        return view

    @staticmethod
    def submit_event(turn_id: str, action_id: str, body: Any, key: str, *, sub: str = DEFAULT_SUB) -> dict[str, Any]:
        return http_event(
            "http_submit_form.json",
            path=f"/turns/{turn_id}/actions/{action_id}/submit",
            body=body,
            sub=sub,
            headers={"idempotency-key": key},
        )

    # ------------------------------------------------------------------ worker

    def work(self, turn_id: str, *, worker_id: str | None = None, message: ResumeMessage | None = None) -> WorkOutcome:
        """One worker's processing of ``turn_id``; with ``message``, from the snapshot it carries (if any), as the
        worker Lambda does."""
        snapshot = None
        if message is not None and message.snapshot is not None:
            snapshot = unpack_snapshot(
                message.snapshot, message.seal, turn_id, message.version, serializer_of(self.store), HANDOFF_KEY
            )
        worker = Worker(self.services.runner(worker_id=worker_id), worker_id=worker_id)
        return worker.process(turn_id, snapshot=snapshot).outcome

    def stored(self, turn_id: str) -> str:
        """The stored snapshot and its conversation's timeline as comparable text (version included)."""
        turn = self.store.load(turn_id)
        timeline = [m.model_dump(mode="json") for m in self.memory(turn.conversation_id).get_messages()]
        return json.dumps([turn.model_dump(mode="json"), timeline], sort_keys=True)


def memory_stack() -> Stack:
    clock = FakeClock()
    return Stack(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), clock)


@contextmanager
def quiet_logs(*names: str) -> Iterator[None]:
    """Only CRITICAL lines from the loggers ``names`` (default: agentturn's) inside the block, and their levels put
    back after it: the code under test logs the injected faults, as it must, and thousands of tracebacks help no
    one; tests of the logs themselves must not depend on running before these."""
    loggers = [logging.getLogger(name) for name in names or ("agentturn",)]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
