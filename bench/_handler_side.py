"""The support-ticket cycle in agentturn through the deployed Lambda handlers: the production path.

Each handler is its own container (a fresh import of ``functions/<name>/app.py``, its own boto3 clients, built
from the environment by the handler's own wiring), invoked with the events API Gateway and SQS would send:

1. ``POST /conversations/{id}/turns`` → the run handler → ``WAITING_FOR_USER`` with the form;
2. ``POST /turns/{turnId}/actions/{actionId}/submit`` → the submit handler → 202 (it enqueues the resume
   message, with the projection receipt production passes);
3. what the worker's SQS event source mapping does: ``ReceiveMessage``, the worker handler on the SQS event,
   then ``DeleteMessage`` of the message it handled (billed SQS requests, so counted);
4. ``GET /turns/{turnId}`` → the run handler → ``COMPLETED`` with the answer: what the client needs to read it.

On the emulator every client of every container is attached to the same counter; in memory
(:func:`in_memory_handler_cycle`) the same handlers run on the in-memory store, timeline and queue, for the CPU
of the whole Lambda code path.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from agentturn import InMemoryResumeQueue
from agentturn.api.ownership import conversation_key
from agentturn.ports.chat_model import ScriptedChatModel
from bench._aws_counter import AwsCounter
from bench._aws_setup import OursResources
from bench._handlers import (
    DATA,
    SUB,
    get_turn_event,
    lambda_context,
    load_app,
    quiet_stdout,
    sqs_event,
    start_turn_event,
    submit_event,
)

if TYPE_CHECKING:
    from agentturn.api.services import Services

#: The handlers a cycle invokes, in order (the run handler twice: the start and the final GET).
INVOCATIONS_PER_CYCLE = 4


class QueueSide(Protocol):
    """What the worker's SQS event source mapping does with the resume queue."""

    queue_url: str

    def receive(self) -> list[dict[str, Any]]: ...

    def delete(self, message: dict[str, Any]) -> None: ...


class HandlerCycle:
    """One form cycle through the run, submit and worker handlers; ``services`` builds one container's services
    (called once per container)."""

    def __init__(self, services: Callable[[], Services], queue: QueueSide, *, name: str) -> None:
        os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "agentturn-bench")
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        self.queue = queue
        number = sum(name.encode()) * 1000 + len(name)
        with quiet_stdout():
            self.run_app = load_app("run", number)
            self.submit_app = load_app("submit", number)
            self.worker_app = load_app("worker", number)
        self.run_app.api.use(services)
        self.submit_app.api.use(services)
        self.worker_app.services.use(services())
        self.last_phases: dict[str, float] = {}

    def _containers(self) -> list[Services]:
        return [self.run_app.api.services, self.submit_app.api.services, self.worker_app.services.get()]

    def __call__(self, conversation_id: str, text: str, data: dict[str, Any]) -> None:
        assert data == DATA, "the handler cycle submits the benchmark's form data"
        with quiet_stdout():
            started = time.perf_counter()
            event = start_turn_event(conversation_id)
            event["body"] = json.dumps({**json.loads(event["body"]), "input": text}, ensure_ascii=False)
            event["headers"]["content-length"] = str(len(event["body"].encode()))
            response = self.run_app.handler(event, lambda_context("run", 29_000))
            waiting = json.loads(response["body"])
            assert response["statusCode"] == 200 and waiting["status"] == "WAITING_FOR_USER", response
            turn_id, action_id = waiting["turnId"], waiting["suspension"]["actionId"]
            asked = time.perf_counter()
            response = self.submit_app.handler(submit_event(turn_id, action_id), lambda_context("submit", 15_000))
            assert response["statusCode"] == 202, response
            submitted = time.perf_counter()
            messages = self.queue.receive()
            assert len(messages) == 1, messages
            event = sqs_event(messages, self.queue.queue_url)
            result = self.worker_app.handler(event, lambda_context("worker", 900_000))
            assert result == {"batchItemFailures": []}, result
            self.queue.delete(messages[0])
            resumed = time.perf_counter()
            response = self.run_app.handler(get_turn_event(turn_id), lambda_context("run", 29_000))
            done = json.loads(response["body"])
            assert response["statusCode"] == 200 and done["status"] == "COMPLETED", response
            assert "created" in str(done["finalOutput"]), done
            finished = time.perf_counter()
        #: wall seconds of the stretches: until the form is up, the submit, the resumed run, reading the answer
        self.last_phases = {
            "ask": asked - started,
            "submit": submitted - asked,
            "resume": resumed - submitted,
            "read": finished - resumed,
        }
        # The demo's ScriptedChatModel keeps every request it was given (a test aid): cleared after each cycle,
        # or the growing list would be measured as garbage-collector time.
        for services in self._containers():
            model = services.agents.for_new_turn("support-agent").chat_model
            if isinstance(model, ScriptedChatModel):
                model.requests.clear()

    def recover(self, conversation_id: str) -> None:
        """After a failed cycle: cancel the conversation's active turn and empty the queue."""
        services = self.worker_app.services.get()
        active = services.chat_memory(conversation_key(SUB, conversation_id)).get_active_turn()
        if active is not None:
            services.runner().cancel(active)
        for message in self.queue.receive():
            self.queue.delete(message)


class SqsSide:
    def __init__(self, sqs: Any, queue_url: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url

    def receive(self) -> list[dict[str, Any]]:
        received = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10)
        messages: list[dict[str, Any]] = received.get("Messages", [])
        return messages

    def delete(self, message: dict[str, Any]) -> None:
        self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


def aws_handler_cycle(resources: OursResources, endpoint_url: str, counter: AwsCounter) -> HandlerCycle:
    """On the emulator: each container's services built by the handlers' own wiring from the environment
    (``services_from_env``), with its own clients, every client attached to ``counter``."""
    from agentturn.api.wiring import AwsClients, services_from_env
    from agentturn.aws._support import client_config
    from bench._aws_setup import client

    os.environ.update(resources.env())
    os.environ["AWS_ENDPOINT_URL"] = endpoint_url
    os.environ["AGENTTURN_DEFAULT_AGENT"] = "support-agent"
    # As deployed: the submit seals the snapshot its message carries (the construct's secret holds the key).
    os.environ["AGENTTURN_HANDOFF_KEY"] = "bench-handoff-key-" + "0" * 32

    def container_services() -> Services:
        # The adapters' own client configuration, one set of clients per container, as the wiring makes them.
        config = client_config()
        clients = AwsClients(
            dynamodb=counter.attach(client("dynamodb", endpoint_url, config=config)),
            sqs=counter.attach(client("sqs", endpoint_url, config=config)),
            s3=counter.attach(client("s3", endpoint_url, config=config)),
        )
        return services_from_env(clients=clients)

    queue = SqsSide(counter.attach(client("sqs", endpoint_url)), resources.queue_url)
    return HandlerCycle(container_services, queue, name="aws")


class InMemorySide:
    """The in-memory resume queue, read the way the event source mapping reads SQS."""

    queue_url = "https://sqs.us-east-1.amazonaws.com/123456789012/agentturn-resume-in-memory"

    def __init__(self, queue: InMemoryResumeQueue) -> None:
        self._queue = queue

    def receive(self) -> list[dict[str, Any]]:
        messages = []
        for message in self._queue.drain():
            body = message.model_dump_json(by_alias=True, exclude_defaults=True)
            messages.append(
                {
                    "MessageId": str(uuid.uuid4()),
                    "ReceiptHandle": uuid.uuid4().hex,
                    "Body": body,
                    "MD5OfBody": hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
                }
            )
        return messages

    def delete(self, message: dict[str, Any]) -> None:
        return None


def in_memory_handler_cycle() -> HandlerCycle:
    """The same handlers on one in-memory store, timeline and queue (shared by the three containers, as the
    tables and the queue are): the CPU of the whole Lambda code path, with no I/O."""
    from agentturn import InMemoryChatMemory, InMemoryTurnStore
    from agentturn.api.agents import AgentCatalog
    from agentturn.api.services import Services
    from agentturn.api.settings import Settings

    settings = Settings.from_env({"AGENTTURN_DEFAULT_AGENT": "support-agent"})
    queue = InMemoryResumeQueue()
    shared = Services(
        # As the DynamoDB store runs in production: no second decode of each write to check it.
        store=InMemoryTurnStore(check_round_trip=False),
        chat_memory=InMemoryChatMemory(),
        queue=queue,
        agents=AgentCatalog.from_spec(settings.agents, default_agent=settings.default_agent),
        settings=settings,
        # As deployed: the submit seals the snapshot its message carries.
        handoff_key=lambda: b"bench-handoff-key-" + b"0" * 32,
    )
    return HandlerCycle(lambda: shared, InMemorySide(queue), name="memory")
