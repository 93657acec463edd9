"""The support-ticket cycle in agentturn through the deployed Lambda handlers: the production path.

Each handler is its own container (a fresh import of ``functions/<name>/app.py``, its own boto3 clients, built
from the environment by the handler's own wiring), invoked with the events API Gateway and SQS would send:

1. ``POST /conversations/{id}/turns`` → the run handler → ``WAITING_FOR_USER`` with the form;
2. ``POST /turns/{turnId}/actions/{actionId}/submit`` → the submit handler → 202 (it enqueues the resume
   message, with the projection receipt production passes);
3. what the worker's SQS event source mapping does: ``ReceiveMessage``, the worker handler on the SQS event,
   then ``DeleteMessage`` of the message it handled (billed SQS requests, so counted);
4. ``GET /turns/{turnId}`` → the run handler → ``COMPLETED`` with the answer: what the client needs to read it.

Every client of every container is attached to the same counter. Lambda invocations are counted too (4 per
cycle), for the cost table.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

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

#: The handlers a cycle invokes, in order (the run handler twice: the start and the final GET).
INVOCATIONS_PER_CYCLE = 4


class HandlerCycle:
    def __init__(self, resources: OursResources, endpoint_url: str, counter: AwsCounter, *, name: str) -> None:
        os.environ.update(resources.env())
        os.environ["AWS_ENDPOINT_URL"] = endpoint_url
        os.environ["AGENTTURN_DEFAULT_AGENT"] = "support-agent"
        os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "agentturn-bench")
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        from agentturn.api.wiring import AwsClients, services_from_env
        from agentturn.aws._support import client_config
        from bench._aws_setup import client

        self.resources = resources
        self.counter = counter
        with quiet_stdout():
            self.run_app = load_app("run", hash(name) & 0xFFFF)
            self.submit_app = load_app("submit", hash(name) & 0xFFFF)
            self.worker_app = load_app("worker", hash(name) & 0xFFFF)

        def counted_clients() -> AwsClients:
            # The adapters' own client configuration, one set of clients per container, as the wiring makes them.
            config = client_config()
            return AwsClients(
                dynamodb=counter.attach(client("dynamodb", endpoint_url, config=config)),
                sqs=counter.attach(client("sqs", endpoint_url, config=config)),
                s3=counter.attach(client("s3", endpoint_url, config=config)),
            )

        self.run_app.api.use(lambda: services_from_env(clients=counted_clients()))
        self.submit_app.api.use(lambda: services_from_env(clients=counted_clients()))
        self.worker_app.services.use(services_from_env(clients=counted_clients()))
        #: the event source mapping's client
        self.sqs = counter.attach(client("sqs", endpoint_url))
        self.last_phases: dict[str, float] = {}
        self.invocations = 0

    def _invoke(self, app: Any, event: dict[str, Any], name: str, timeout_ms: int) -> dict[str, Any]:
        self.invocations += 1
        response: dict[str, Any] = app.handler(event, lambda_context(name, timeout_ms))
        return response

    def __call__(self, conversation_id: str, text: str, data: dict[str, Any]) -> None:
        assert data == DATA, "the handler cycle submits the benchmark's form data"
        with quiet_stdout():
            started = time.perf_counter()
            event = start_turn_event(conversation_id)
            body = json.loads(event["body"])
            event["body"] = json.dumps({**body, "input": text}, ensure_ascii=False)
            event["headers"]["content-length"] = str(len(event["body"].encode()))
            response = self._invoke(self.run_app, event, "run", 29_000)
            waiting = json.loads(response["body"])
            assert response["statusCode"] == 200 and waiting["status"] == "WAITING_FOR_USER", response
            turn_id, action_id = waiting["turnId"], waiting["suspension"]["actionId"]
            asked = time.perf_counter()
            response = self._invoke(self.submit_app, submit_event(turn_id, action_id), "submit", 15_000)
            assert response["statusCode"] == 202, response
            submitted = time.perf_counter()
            received = self.sqs.receive_message(QueueUrl=self.resources.queue_url, MaxNumberOfMessages=10)
            messages = received["Messages"]
            assert len(messages) == 1, messages
            result = self._invoke(self.worker_app, sqs_event(messages, self.resources.queue_url), "worker", 900_000)
            assert result == {"batchItemFailures": []}, result
            self.sqs.delete_message(QueueUrl=self.resources.queue_url, ReceiptHandle=messages[0]["ReceiptHandle"])
            resumed = time.perf_counter()
            response = self._invoke(self.run_app, get_turn_event(turn_id), "run", 29_000)
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

    def recover(self, conversation_id: str) -> None:
        """After a failed cycle: cancel the conversation's active turn and empty the queue."""
        from agentturn.api.ownership import conversation_key

        services = self.worker_app.services.get()
        active = services.chat_memory(conversation_key(SUB, conversation_id)).get_active_turn()
        if active is not None:
            services.runner().cancel(active)
        received = self.sqs.receive_message(QueueUrl=self.resources.queue_url, MaxNumberOfMessages=10)
        for message in received.get("Messages", []):
            self.sqs.delete_message(QueueUrl=self.resources.queue_url, ReceiptHandle=message["ReceiptHandle"])
