"""The support-ticket cycle in agentturn's core, as the handlers call it (no HTTP, no Powertools).

``Runner.run`` (what the run Lambda calls) stops the demo ``support-agent`` when ``create_support_ticket``
raises ``FormRequired``; ``Runner.submit_resume`` (the submit Lambda) validates and saves the answer, then the
turn is enqueued with the projection receipt the submit handler passes; the worker takes the message from the
queue and ``Worker.process`` claims the turn with that receipt (as the worker handler does), replays the tool
with the submitted data and lets the model answer. Used in memory, for the runtime's own CPU
(``bench_cpu.py``); the cycle on the emulator goes through the handlers themselves (``_handler_side.py``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from agentturn import (
    InMemoryChatMemory,
    InMemoryResumeQueue,
    InMemoryTurnStore,
    ResumeCommand,
    Runner,
    TurnStatus,
    Worker,
)
from agentturn.demo import demo_agents
from agentturn.ports.chat_model import ScriptedChatModel
from agentturn.ports.memory import ChatMemoryProvider
from agentturn.ports.queue import ResumeMessage
from agentturn.ports.store import TurnStore

SUBMITTED_BY = "bench-user"


class OursCycle:
    """One form cycle; ``take`` gets the next resume message from the queue."""

    def __init__(
        self,
        store: TurnStore,
        memory: ChatMemoryProvider,
        queue: Any,
        take: Callable[[], ResumeMessage],
    ) -> None:
        agents = demo_agents()
        self.agent = next(a for a in agents if a.id == "support-agent")
        self.runner = Runner(store=store, chat_memory=memory, agents=agents)
        self.worker = Worker(self.runner)
        self.queue = queue
        self.take = take
        model = self.agent.chat_model
        # ScriptedChatModel keeps every request it was given (a test aid): clear it after each cycle, or the
        # growing list would be measured as garbage-collector time.
        self._requests = model.requests if isinstance(model, ScriptedChatModel) else None
        self.last_phases: dict[str, float] = {}

    def __call__(self, conversation_id: str, text: str, data: dict[str, Any]) -> None:
        started = time.perf_counter()
        waiting = self.runner.run(self.agent, conversation_id, text)
        assert waiting.status is TurnStatus.WAITING_FOR_USER and waiting.suspension is not None, waiting.status
        asked = time.perf_counter()
        command = (
            ResumeCommand.user_input(waiting.suspension.correlation_id, data)
            .with_metadata("requestId", uuid.uuid4().hex)
            .with_metadata("submittedBy", SUBMITTED_BY)
        )
        accepted = self.runner.submit_resume(waiting.id, command)
        self.queue.enqueue(accepted.id, accepted.version)
        submitted = time.perf_counter()
        message = self.take()
        done = self.worker.process(message.turn_id).turn
        assert done is not None and done.status is TurnStatus.COMPLETED, done
        finished = time.perf_counter()
        #: wall seconds of the three stretches: until the form is up, the submit, the resumed run
        self.last_phases = {"ask": asked - started, "submit": submitted - asked, "resume": finished - submitted}
        if self._requests is not None:
            self._requests.clear()


def in_memory_cycle() -> OursCycle:
    queue = InMemoryResumeQueue()

    def take() -> ResumeMessage:
        (message,) = queue.drain()
        return message

    # As the DynamoDB store runs in production: no second decode of each write to check it (a test's concern).
    return OursCycle(InMemoryTurnStore(check_round_trip=False), InMemoryChatMemory(), queue, take)
