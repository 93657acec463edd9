"""Faults inside the AWS SDK, at random calls, over the whole system: nothing lost, unreadable, doubled or stuck.

Per seed, one flow of the seed's scenarios runs through the real entry points — the HTTP API (run and submit
routes), the SQS worker (``SqsWorker.handle`` on real messages of a moto queue) and the sweeper (``sweep``) —
with the DynamoDB adapters on DynamoDB Local and S3 + SQS on moto's server. A seeded plan
(tests/support/sdk_faults.py) fails random DynamoDB, S3 and SQS calls of the system inside botocore: before
sending, after the service applied the request (response lost, botocore retries), throttled — once (the
SDK's retry absorbs it) or on every attempt (the caller gets the error). Recovery is driven the way
production does: the client retries a 5xx with the same Idempotency-Key (and looks for its turn before
starting another), SQS redelivers what the worker failed, the sweeper ticks when nothing is in flight.

Flows: the tool-requested form (support ticket), the model-requested form (meeting room), cancel, decline,
approval (refund), expiry (a wait nobody answers) and a mixed batch (one model message whose four calls each
need a person: two approvals, a form the model asks for, a form a tool asks for; every card answered), and the
support ticket through AG-UI (the message and the resume as runs of ``POST /ag-ui/support-agent``, retried after
a ``RUN_ERROR`` the way a careful client does: a reload first). An MCP flow runs on seeds of its own (a FastMCP
server's question through ``input_required``, answered, and the call retried with its kept ``requestState``),
so that the seeds of the other flows keep their meaning. For every seed:

* 0 lost: every answer the client got a 2xx for is applied; the turn ends as a fault-free run ends;
* 0 unreadable: every turn loads, GET /turns/{id} and GET .../messages answer 200, the timeline converges;
* 0 doubled: each tool side effect is done once (counted by ``ToolContext.idempotency_key``);
* 0 stuck: every turn ends terminal, or waiting with its card in the timeline for a person to answer.

Seeds: ``AGENTTURN_FAULT_SEEDS`` (default 40, about a minute; 1000 for the long mode, seeds beyond the
default marked ``slow``); one seed: ``AGENTTURN_FAULT_SEED=17``; the MCP flow: ``AGENTTURN_MCP_FAULT_SEEDS``
(default 20; 200 for the long mode). Figures are printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import boto3
import pytest

from agentturn import (
    Agent,
    Approvers,
    AtDeadline,
    ExecutionPolicy,
    MCPServer,
    ScriptedChatModel,
    ToolApprovalDecision,
    TurnStatus,
)
from agentturn.api.ownership import conversation_key
from agentturn.api.sweeper import sweep
from agentturn.api.telemetry import NullTelemetry
from agentturn.api.worker import SqsWorker
from agentturn.aws.chat_memory import DynamoDBChatMemory
from agentturn.aws.resume_queue import SqsResumeQueue
from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.demo import TicketLedger, demo_agents
from agentturn.errors import StorageError
from agentturn.mcp.calls import IDEMPOTENCY_META_KEY
from agentturn.state.approvers import DEADLINE_SUBJECT
from agentturn.state.messages import ApprovalMessage, FormMessage, ToolMessage
from agentturn.state.turn import Turn
from agentturn.timeline.repair import reconcile
from tests.contract.aws_adapters import CLIENT_CONFIG, AwsSession, aws_session, unique
from tests.functional.harness import FakeLambdaContext, HttpResponse, http_event, sqs_event
from tests.reliability.figures import FIGURES, record
from tests.reliability.kit import VALID_TICKET, Stack, quiet_logs
from tests.scenarios.scripts import ai_calls, final_from_last_tool, reply_after_tools
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator, boto3_session_kwargs
from tests.support.mcp_server import RunningServer
from tests.support.sdk_faults import FAULT_KINDS, SdkFaultInjector, SeededPlan, no_backoff

pytestmark = pytest.mark.integration

DEFAULT_SEEDS: Final = 40
SEEDS: Final = int(os.environ.get("AGENTTURN_FAULT_SEEDS", str(DEFAULT_SEEDS)))
ONLY: Final = os.environ.get("AGENTTURN_FAULT_SEED")
MCP_SEEDS: Final = int(os.environ.get("AGENTTURN_MCP_FAULT_SEEDS", "20"))
#: Client attempts per request (one answer, six tries: a plan fails at most three calls).
CLIENT_TRIES: Final = 6
ROUNDS: Final = 40
#: A wait in the expiry flow lasts this long; a sweeper tick advances the clock past lease and idle time.
INPUT_TIMEOUT: Final = 300.0
GROUP: Final = "sdk fault seeds"

Flow = Literal[
    "form_tool", "form_model", "cancel", "decline", "approval", "expiry", "mixed", "agui", "mcp", "quorum", "deadline"
]
FLOWS: Final[tuple[Flow, ...]] = (
    "form_tool",
    "form_model",
    "cancel",
    "decline",
    "approval",
    "expiry",
    "mixed",
    "agui",
)
MEETING: Final = {"topic": "Incident review", "date": "2026-12-02", "startTime": "10:30", "attendees": 6}
_INPUTS: Final[dict[Flow, tuple[str, str]]] = {
    "form_tool": ("support-agent", "create a high priority login incident ticket"),
    "form_model": ("meeting-agent", "book a meeting room"),
    "cancel": ("support-agent", "create a high priority login incident ticket"),
    "decline": ("support-agent", "create a high priority login incident ticket"),
    "approval": ("refund-agent", "refund order O-1001"),
    "expiry": ("support-timeout", "create a high priority login incident ticket"),
    # One message, four cards: two refunds to approve, the meeting form, the ticket tool's form.
    "mixed": ("assistant", "do these at once please"),
    # The support ticket through AG-UI: the message and the resume are runs of POST /ag-ui/support-agent.
    "agui": ("support-agent", "create a high priority login incident ticket"),
    # The desk server's ticket tool asks which system is affected (input_required); the retry completes it.
    "mcp": ("mcp-agent", "open a ticket about the login"),
    # A refund two people of finance approve, each with their own token (seeds of their own: QUORUM_SEEDS).
    "quorum": ("quorum-refund", "refund order O-1001"),
    # The same refund, approved by one of finance and then by its deadline's default answer (the sweeper's).
    "deadline": ("deadline-refund", "refund order O-1001"),
}
MCP_ANSWER: Final = {"system": "SSO", "urgent": True}
QUORUM_SEEDS: Final = int(os.environ.get("AGENTTURN_QUORUM_FAULT_SEEDS", "12"))
APPROVERS: Final = ("ann-sub", "ben-sub")
#: RUN_ERROR codes a careful AG-UI client tries again after (the others are answers, not failures).
AGUI_RETRYABLE: Final = frozenset({"agentturn:unavailable", "agentturn:internal", "agentturn:continuing"})
SUB: Final = "8f5e1c2a-7d3b-4a6e-9c1f-2b7d4e6a8c10"


def _answered_and_running_elsewhere(events: list[dict[str, Any]], interrupts: list[dict[str, Any]]) -> bool:
    """Whether an AG-UI resume ended ``continuing`` with none of ``interrupts`` still pending (the answer applied)."""
    last = events[-1]
    state = next((e for e in events if e["type"] == "STATE_SNAPSHOT"), None)
    if last["type"] != "RUN_ERROR" or last.get("code") != "agentturn:continuing" or state is None:
        return False
    pending = set(state["snapshot"]["agentturn"]["pending"])
    return not pending & {i["metadata"]["agentturn"]["actionId"] for i in interrupts}


def _seed_params() -> list[Any]:
    if ONLY is not None:
        return [pytest.param(int(ONLY), id=f"seed_{int(ONLY)}")]
    return [
        pytest.param(seed, id=f"seed_{seed}", marks=[pytest.mark.slow] if seed >= DEFAULT_SEEDS else [])
        for seed in range(SEEDS)
    ]


def _mcp_agent(url: str) -> Agent:
    return Agent(
        id="mcp-agent",
        instructions="Use the desk server's tools.",
        chat_model=ScriptedChatModel(
            reply_after_tools(ai_calls(("call-1", "desk__create_ticket", {"title": "login"})), final_from_last_tool)
        ),
        mcp_servers=[MCPServer(url, name="desk", approve="none")],
    )


def _agents(ledger: TicketLedger, mcp_url: str | None = None) -> list[Agent]:
    agents = demo_agents(ledger) + ([_mcp_agent(mcp_url)] if mcp_url is not None else [])
    support = next(a for a in agents if a.id == "support-agent")
    # The support agent once more, with a wait that expires (what the expiry flow starts).
    timing_out = Agent(
        "support-timeout",
        support.instructions,
        support.chat_model,
        tools=list(support.tools.values()),
        policy=ExecutionPolicy(input_timeout=INPUT_TIMEOUT),
    )
    refunds = next(a for a in agents if a.id == "refund-agent")
    # The refund agent once more, its refunds waiting for two people of finance who are not the requester.
    quorum = Agent(
        "quorum-refund",
        refunds.instructions,
        refunds.chat_model,
        tools=list(refunds.tools.values()),
        approval_policy=lambda turn, call, tool: ToolApprovalDecision.require_approval(
            "two of finance", approvers=Approvers(groups=("finance",), quorum=2, exclude_requester=True)
        ),
    )
    # ... and once more approved at its deadline by default, whoever has not approved by then.
    deadline = Agent(
        "deadline-refund",
        refunds.instructions,
        refunds.chat_model,
        tools=list(refunds.tools.values()),
        approval_policy=lambda turn, call, tool: ToolApprovalDecision.require_approval(
            "two of finance, or the deadline",
            approvers=Approvers(
                groups=("finance",),
                quorum=2,
                exclude_requester=True,
                deadline_after=INPUT_TIMEOUT,
                at_deadline=AtDeadline.approve(),
            ),
        ),
    )
    return [*agents, timing_out, quorum, deadline]


@dataclass
class Emulators:
    """What every seed shares: the emulators, one boto3 session (clients are cheap from it), the session's
    conversations table and bucket (each seed uses its own conversation, turns table and queue)."""

    aws: AwsSession
    dynamodb_url: str
    moto_url: str
    boto: boto3.Session = field(default_factory=lambda: boto3.Session(**boto3_session_kwargs()))

    def client(self, service: Literal["dynamodb", "s3", "sqs"]) -> Any:
        url = self.dynamodb_url if service == "dynamodb" else self.moto_url
        return self.boto.client(service, endpoint_url=url, config=CLIENT_CONFIG)  # type: ignore[call-overload]


@dataclass
class Outcome:
    """What a fault-free run of a flow ends with (the reference every seed is compared to)."""

    status: TurnStatus
    history: list[tuple[str, str]]
    side_effects: int
    cards: list[str]
    sweeps: int


class World:
    """One seed: a fresh turns table and queue, the system's clients with the seed's faults in them."""

    def __init__(
        self, emulators: Emulators, seed: int, flow: Flow, *, faults: bool = True, mcp_url: str | None = None
    ) -> None:
        self.seed, self.flow = seed, flow
        self.clock = FakeClock()
        aws = emulators.aws
        self.table = aws.fresh_turns_table()
        self.plan = SeededPlan(seed, rate=0.12 if faults else 0.0, max_faults=3)
        self.injector = SdkFaultInjector(self.plan)
        # The system's clients (faulty) and the checker's (the session's own, never faulty).
        dynamodb, s3, sqs = (self.injector.attach(emulators.client(s)) for s in ("dynamodb", "s3", "sqs"))
        self.sqs = aws_sqs = emulators.client("sqs")
        self.queue_url = aws_sqs.create_queue(QueueName=unique("faults"))["QueueUrl"]
        self.queue_arn = aws_sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        # Small inline limits: bodies of turns and cards go to S3 as well, so S3 calls are in the plan.
        spill = {"client": dynamodb, "s3_client": s3, "bucket": aws.bucket}
        store = DynamoDBTurnStore(self.table, clock=self.clock, inline_limit=2048, **spill)
        memory = DynamoDBChatMemory(aws.names.conversations_table, inline_limit=512, **spill)
        self.checker = DynamoDBTurnStore(
            self.table, client=aws.dynamodb, s3_client=aws.s3, bucket=aws.bucket, clock=self.clock
        )
        self.timeline = DynamoDBChatMemory(
            aws.names.conversations_table, client=aws.dynamodb, s3_client=aws.s3, bucket=aws.bucket
        )
        self.ledger = TicketLedger()
        self.stack = Stack(
            store,
            memory,
            self.clock,
            ledger=self.ledger,
            ports=(store, memory, SqsResumeQueue(self.queue_url, sqs)),
            agents=_agents(self.ledger, mcp_url),
        )
        self.conversation = f"faults-{seed}-{uuid.uuid4().hex[:8]}"
        self.accepted: list[str] = []
        self.client_errors = 0
        self.deliveries = self.redeliveries = self.sweeps = self.failed_sweeps = 0
        self.recovery_ticks: Counter[str] = Counter()
        self.acted = False

    # ------------------------------------------------------------------ the client

    def _send(self, route: Literal["run", "submit"], event: dict[str, Any]) -> HttpResponse:
        handler = self.stack.run if route == "run" else self.stack.submit
        return handler(event)

    def _retrying(self, route: Literal["run", "submit"], event: dict[str, Any]) -> HttpResponse | None:
        """A client retrying 5xx (same request, same Idempotency-Key); the last answer, or None if all failed."""
        for _ in range(CLIENT_TRIES):
            answer = self._send(route, event)
            if answer.status < 500:
                return answer
            self.client_errors += 1
        return None

    # ------------------------------------------------------------------ the AG-UI client

    def _ag_ui(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        event = http_event("http_start_turn.json", path="/ag-ui/support-agent", body=body, sub=SUB)
        answer = self._send("run", event)
        assert answer.status == 200, f"{self.where}: an AG-UI run answered {answer.status}: {answer.body}"
        frames = [f for f in answer.body.split("\n\n") if f]
        return [json.loads(f.removeprefix("data: ")) for f in frames]

    def _ag_ui_failed(self, events: list[dict[str, Any]]) -> bool:
        last = events[-1]
        if last["type"] == "RUN_ERROR" and last.get("code") in AGUI_RETRYABLE:
            self.client_errors += 1
            return True
        return False

    def _ag_ui_interrupts(self) -> list[dict[str, Any]]:
        """A reload: a run without input, until it answers (the thread's open interrupts, maybe none)."""
        for _ in range(CLIENT_TRIES):
            events = self._ag_ui({"threadId": self.conversation, "runId": uuid.uuid4().hex, "messages": []})
            if not self._ag_ui_failed(events):
                outcome = events[-1].get("outcome") or {}
                interrupts: list[dict[str, Any]] = outcome.get("interrupts", [])
                return interrupts
        raise AssertionError(f"{self.where}: the thread never answered a reload")

    def _ag_ui_start(self, text: str) -> None:
        message = {"id": "client-message-1", "role": "user", "content": text}
        for _ in range(CLIENT_TRIES):
            events = self._ag_ui({"threadId": self.conversation, "runId": uuid.uuid4().hex, "messages": [message]})
            if not self._ag_ui_failed(events):
                assert events[-1]["type"] == "RUN_FINISHED", f"{self.where}: the start ended {events[-1]}"
                return
            # A careful client looks at the thread before sending its message again: the turn may exist.
            for _ in range(CLIENT_TRIES):
                events = self._ag_ui({"threadId": self.conversation, "runId": uuid.uuid4().hex, "messages": []})
                if not self._ag_ui_failed(events):
                    break
            snapshot = next((e for e in events if e["type"] == "MESSAGES_SNAPSHOT"), None)
            if snapshot is not None and snapshot["messages"]:
                return
        raise AssertionError(f"{self.where}: the AG-UI start never answered")

    def _ag_ui_answer(self) -> None:
        interrupts = self._ag_ui_interrupts()
        if not interrupts:
            return  # not waiting yet (the turn still runs): the next round looks again
        resume = [{"interruptId": i["id"], "status": "resolved", "payload": VALID_TICKET} for i in interrupts]
        for _ in range(CLIENT_TRIES):
            events = self._ag_ui({"threadId": self.conversation, "runId": uuid.uuid4().hex, "resume": resume})
            if _answered_and_running_elsewhere(events, interrupts):
                # The answer is applied and the turn runs on elsewhere (this request lost its run to a fault): the
                # next round's reload, the worker or the sweeper see it through.
                self.accepted.extend(f"ag-ui:{i['id']}" for i in interrupts)
                self.acted = True
                return
            if not self._ag_ui_failed(events):
                last = events[-1]
                assert last["type"] == "RUN_FINISHED", f"{self.where}: the resume ended {last}"
                self.accepted.extend(f"ag-ui:{i['id']}" for i in interrupts)
                self.acted = True
                return
        raise AssertionError(f"{self.where}: the resume never answered")

    # ------------------------------------------------------------------ the HTTP client

    def start(self) -> None:
        agent_id, text = _INPUTS[self.flow]
        if self.flow == "agui":
            self._ag_ui_start(text)
            return
        event = http_event(
            "http_start_turn.json",
            path=f"/conversations/{self.conversation}/turns",
            body={"input": text, "agentId": agent_id},
            sub=SUB,
        )
        listing = http_event("http_list_messages.json", path=f"/conversations/{self.conversation}/messages", sub=SUB)
        for _ in range(CLIENT_TRIES):
            answer = self._send("run", event)
            if answer.status < 500:
                assert answer.status == 200, f"{self.where}: start answered {answer.status}: {answer.body}"
                return
            self.client_errors += 1
            # Starting takes no Idempotency-Key: a careful client looks for its turn before starting another.
            listed = self._retrying("run", listing)
            if listed is not None and listed.status == 200 and listed.json.get("activeTurnId"):
                return
        raise AssertionError(f"{self.where}: the start never answered")

    def act(self, turn: Turn) -> None:
        """The person's part of the flow, once the turn waits for it."""
        if self.flow == "expiry":
            self.acted = True  # nobody answers: the wait runs out while the sweeper ticks
            return
        if self.flow == "mixed":
            self._answer_every_card(turn)
            return
        if self.flow == "agui":
            self._ag_ui_answer()
            return
        if self.flow == "quorum":
            self._two_approvers(turn)
            return
        if self.flow == "deadline":
            self._two_approvers(turn, APPROVERS[:1])  # the second approval is the deadline's
            return
        suspension = turn.suspension
        assert suspension is not None
        action = suspension.correlation_id
        key = f"client-{turn.id}-{action}-{self.flow}"
        headers = {"idempotency-key": key}
        base = f"/turns/{turn.id}"
        if self.flow == "cancel":
            event = http_event("http_cancel.json", path=f"{base}/cancel", sub=SUB, headers=headers)
        elif self.flow == "decline":
            event = http_event(
                "http_decline.json",
                path=f"{base}/actions/{action}/decline",
                body={"reason": "not now"},
                sub=SUB,
                headers=headers,
            )
        elif self.flow == "approval":
            event = http_event("http_approve.json", path=f"{base}/actions/{action}/approve", sub=SUB, headers=headers)
        else:
            data = {"form_tool": VALID_TICKET, "mcp": MCP_ANSWER}.get(self.flow, MEETING)
            event = Stack.submit_event(turn.id, action, {"data": data}, key, sub=SUB)
        self._accepted(event, key, self.flow)
        self.acted = True

    def _two_approvers(self, turn: Turn, approvers: tuple[str, ...] = APPROVERS) -> None:
        """Two people of finance approve, one after the other, each with their own token and key."""
        for sub in approvers:
            key = f"client-{turn.id}-{sub}-quorum"
            event = http_event(
                "http_approve.json",
                path=f"/turns/{turn.id}/actions/{turn.suspensions[0].correlation_id}/approve",
                sub=sub,
                headers={"idempotency-key": key},
            )
            event["requestContext"]["authorizer"]["jwt"]["claims"]["cognito:groups"] = "[finance]"
            self._accepted(event, key, sub)
        self.acted = True

    def _answer_every_card(self, turn: Turn) -> None:
        """The mixed batch: each pending card answered through its own route, one after the other."""
        assert len(turn.suspensions) == 4, f"{self.where}: {turn.suspensions}"
        for suspension in turn.suspensions:
            action = suspension.correlation_id
            key = f"client-{turn.id}-{action}-mixed"
            path = f"/turns/{turn.id}/actions/{action}"
            if suspension.form_key is None:
                body = {"argumentsFingerprint": suspension.arguments_fingerprint}
                event = http_event(
                    "http_approve.json", path=f"{path}/approve", body=body, sub=SUB, headers={"idempotency-key": key}
                )
            else:
                data = VALID_TICKET if suspension.input_target == "TOOL" else MEETING
                event = Stack.submit_event(turn.id, action, {"data": data}, key, sub=SUB)
            self._accepted(event, key, action)
        self.acted = True

    def _accepted(self, event: dict[str, Any], key: str, what: str) -> None:
        """Send a person's answer until it is not a 5xx; it must be accepted (202), and is then counted."""
        answer = self._retrying("submit", event)
        assert answer is not None, f"{self.where}: the answer to {what} got only 5xx"
        assert answer.status == 202, f"{self.where}: {what} answered {answer.status}: {answer.body}"
        self.accepted.append(key)

    # ------------------------------------------------------------------ the platform

    @property
    def where(self) -> str:
        return (
            f"seed {self.seed} ({self.flow}, faults {self.injector.log}); reproduce: AGENTTURN_FAULT_SEED={self.seed}"
        )

    def turns(self) -> list[Turn]:
        pages = self.checker.client.get_paginator("scan").paginate(
            TableName=self.table, ProjectionExpression="turnId", ConsistentRead=True
        )
        return [self.checker.load(item["turnId"]["S"]) for page in pages for item in page["Items"]]

    def _receive(self) -> list[dict[str, Any]]:
        response = self.sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"], VisibilityTimeout=30
        )
        return list(response.get("Messages", []))

    def deliver(self, messages: list[dict[str, Any]]) -> None:
        """The event source mapping: invoke the worker, delete what succeeded, let failures come back."""
        self.deliveries += len(messages)
        result = SqsWorker(self.stack.services, NullTelemetry()).handle(
            sqs_event(messages, self.queue_arn), FakeLambdaContext()
        )
        failed = {f["itemIdentifier"] for f in result["batchItemFailures"]}
        for message in messages:
            if message["MessageId"] in failed:
                self.redeliveries += 1
                # Its visibility timeout lapses: SQS delivers it again.
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])

    def tick(self, turns: list[Turn]) -> None:
        """Nothing in flight: time passes (leases and idle time run out), the scheduled sweeper runs."""
        settings = self.stack.services.settings
        self.clock.advance(settings.lease_seconds + settings.sweep_idle_seconds + 2)
        for turn in turns:
            if turn.status.is_runnable:
                self.recovery_ticks[turn.id] += 1
        self.sweeps += 1
        try:
            sweep(self.stack.services, NullTelemetry())
        except StorageError:
            self.failed_sweeps += 1  # the sweeper Lambda failed this tick; the next one runs again

    def run(self) -> None:
        self.start()
        for _ in range(ROUNDS):
            turns = self.turns()
            messages = self._receive()
            if messages:
                self.deliver(messages)
                continue
            waiting = [t for t in turns if t.status.is_blocked and not t.cancel_requested]
            if waiting and not self.acted:
                self.act(waiting[0])
                continue
            if turns and all(t.status.is_terminal for t in turns):
                return
            # A cancelled turn still blocked is a cancel that did not finish: the sweeper must finish it.
            self.tick(turns)
        raise AssertionError(
            f"{self.where}: stuck: not done after {ROUNDS} rounds: {[(t.id, t.status) for t in turns]}"
        )


# ---------------------------------------------------------------------------------------------- checks


def _history(turn: Turn) -> list[tuple[str, str]]:
    """What happened in the turn, without ids and references that differ between runs."""
    return [
        (m.type, getattr(m, "tool_name", "") or ",".join(c.name for c in getattr(m, "tool_calls", [])))
        for m in turn.messages
    ]


def _reference(emulators: Emulators, flow: Flow, cache: dict[Flow, Outcome], mcp_url: str | None = None) -> Outcome:
    if flow not in cache:
        world = World(emulators, -1, flow, faults=False, mcp_url=mcp_url)
        world.run()
        (turn,) = world.turns()
        assert turn.status.is_terminal, f"the fault-free {flow} flow ended {turn.status}"
        cache[flow] = Outcome(
            status=turn.status,
            history=_history(turn),
            side_effects=len(world.ledger.entries),
            cards=[c.status.value for c in turn.cards],
            sweeps=world.sweeps,
        )
    return cache[flow]


def _divergence(turn: Turn, memory: Any) -> str | None:
    entries = [m for m in memory.get_messages() if m.turn_id == turn.id]
    ids = [m.message_id for m in entries]
    if len(ids) != len(set(ids)):
        return f"an entry is stored twice: {ids}"
    model_visible = [m for m in memory.get_model_messages() if m.turn_id == turn.id]
    if [m.model_dump(mode="json") for m in model_visible] != [m.model_dump(mode="json") for m in turn.messages]:
        return f"model messages {[m.message_id for m in model_visible]} != {[m.message_id for m in turn.messages]}"
    cards = {m.message_id: (m.status, m.version) for m in entries if isinstance(m, FormMessage | ApprovalMessage)}
    if cards != {c.message_id: (c.status, c.version) for c in turn.cards}:
        return f"cards {cards} != {[(c.message_id, c.status, c.version) for c in turn.cards]}"
    return None


def _check(world: World, reference: Outcome) -> dict[str, int]:
    """Every promise for one seed (an assertion names the seed); the seed's figures."""
    world.injector.enabled = False
    where = world.where
    turns = world.turns()
    # 0 unreadable: every turn loads (above) and answers over HTTP; the timeline answers and converges.
    for turn in turns:
        got = world.stack.run(http_event("http_get_turn.json", path=f"/turns/{turn.id}", sub=SUB))
        assert got.status == 200, f"{where}: GET /turns/{turn.id} answered {got.status}: {got.body}"
    listed = world.stack.run(
        http_event("http_list_messages.json", path=f"/conversations/{world.conversation}/messages", sub=SUB)
    )
    assert listed.status == 200, f"{where}: the timeline answered {listed.status}: {listed.body}"
    main = [t for t in turns if len(t.messages) > 1]
    assert len(main) == 1, f"{where}: expected one turn that ran, got {[(t.id, t.status) for t in turns]}"
    (turn,) = main
    for orphan in turns:
        if orphan is not turn:
            # A start that failed before it took the conversation: it never runs, and ends FAILED.
            assert orphan.status is TurnStatus.FAILED, f"{where}: orphan {orphan.id} is {orphan.status}"
    # 0 stuck and 0 lost: the turn ended as the fault-free run did (a cancel CANCELLED, never left waiting with
    # its flag), with every accepted answer applied.
    assert turn.status is reference.status, f"{where}: ended {turn.status} ({turn.error}), not {reference.status}"
    assert _history(turn) == reference.history, f"{where}: {_history(turn)} != {reference.history}"
    assert [c.status.value for c in turn.cards] == reference.cards, f"{where}: cards {turn.cards}"
    for key in world.accepted:
        assert key in turn.accepted_requests or world.flow == "cancel", f"{where}: accepted {key!r} is lost"
    # 0 doubled: each side effect once (the ledger is keyed by the tool's idempotency key).
    calls = [m.tool_call_id for m in turn.messages if isinstance(m, ToolMessage)]
    assert len(calls) == len(set(calls)), f"{where}: a tool result was applied twice: {calls}"
    assert len(world.ledger.entries) == reference.side_effects, f"{where}: side effects {world.ledger.entries}"
    memory = world.timeline(conversation_key(SUB, world.conversation))
    converged = _divergence(turn, memory) is None
    if turn.status.is_terminal:
        # Whatever failed, an ended turn left its conversation free, or the next start finds it ended, makes its
        # timeline whole and takes over.
        agent_id, text = _INPUTS[world.flow]
        path = f"/conversations/{world.conversation}/turns"
        following = world.stack.run(
            http_event("http_start_turn.json", path=path, body={"input": text, "agentId": agent_id}, sub=SUB)
        )
        assert following.status == 200, f"{where}: the next start answered {following.status}: {following.body}"
        assert memory.get_active_turn() == following.json["turnId"], f"{where}: the next turn does not hold it"
    # The snapshot is the truth: reconciling the timeline with it (what a read or the next start does) repairs
    # the rest.
    reconcile(world.checker.load(turn.id), memory, memory.get_messages(), whole=True)
    problem = _divergence(turn, memory)
    assert problem is None, f"{where}: the timeline does not converge to the snapshot: {problem}"
    if turn.status.is_blocked:
        # A person can move it on: the card they answer is in the timeline.
        pending = [m.message_id for m in memory.get_messages() if getattr(m, "status", None) == "PENDING"]
        assert pending, f"{where}: a waiting turn without a pending card"
    return {
        "faults": len(world.injector.log),
        "client_5xx": world.client_errors,
        "redeliveries": world.redeliveries,
        "sweeps": world.sweeps,
        "failed_sweeps": world.failed_sweeps,
        "orphan_starts": len(turns) - 1,
        "timeline_repaired_by_reprojection": 0 if converged else 1,
    }


# ---------------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def emulators(dynamodb_local: Emulator, moto_server: Emulator) -> Iterator[Emulators]:
    with quiet_logs("agentturn", "aws_lambda_powertools"), no_backoff():
        yield Emulators(aws_session(dynamodb_local, moto_server), dynamodb_local.endpoint_url, moto_server.endpoint_url)


_REFERENCES: dict[Flow, Outcome] = {}


@pytest.mark.parametrize("seed", _seed_params())
def test_sdk_faults_lose_double_and_strand_nothing(emulators: Emulators, seed: int) -> None:
    # GIVEN one flow (by seed) on DynamoDB Local + moto, random SDK calls of the system failing inside botocore
    flow = FLOWS[seed % len(FLOWS)]
    reference = _reference(emulators, flow, _REFERENCES)
    world = World(emulators, seed, flow)
    # WHEN a client drives it, retrying 5xx, while SQS redelivers failures and the sweeper ticks when idle
    world.run()
    # THEN nothing is lost, unreadable, doubled or stuck (any of them fails the seed: only passing seeds count)
    figures = _check(world, reference)
    record(GROUP, seeds=1, lost=0, unreadable=0, doubled=0, stuck=0, **figures)
    record(GROUP, **{f"flow_{flow}": 1})
    worst = max(world.recovery_ticks.values(), default=0)
    previous = FIGURES.get((GROUP, "worst_recovery_sweeper_ticks"), 0)
    FIGURES[(GROUP, "worst_recovery_sweeper_ticks")] = max(worst, int(previous))
    for name, count in world.injector.fired.items():
        record("sdk faults by kind", **{name.rsplit(":", 1)[1]: count})
        record("sdk faults by call", **{name: count})


@pytest.mark.parametrize("seed", range(QUORUM_SEEDS), ids=lambda seed: f"quorum_seed_{seed}")
def test_a_quorum_approval_under_sdk_faults_loses_doubles_and_strands_nothing(emulators: Emulators, seed: int) -> None:
    # GIVEN a refund waiting for two of finance, random SDK calls of the system failing inside botocore
    reference = _reference(emulators, "quorum", _REFERENCES)
    assert reference.cards == ["APPROVED"] and reference.side_effects == 1
    world = World(emulators, 10_000 + seed, "quorum")
    # WHEN both approvers answer (retrying 5xx with their own keys) while SQS redelivers and the sweeper ticks
    world.run()
    # THEN the refund ran once, after both approvals: nothing lost, doubled or stuck
    world.injector.enabled = False
    (turn,) = [t for t in world.turns() if len(t.messages) > 1]
    _check(world, reference)
    (card,) = turn.cards
    assert card.people is not None and sorted(d.subject for d in card.people.decisions) == sorted(APPROVERS)
    records = world.timeline.decisions(turn.conversation_id, turn.created_at, turn.id)
    assert sorted(r.subject for r in records) == sorted(APPROVERS), f"{world.where}: audit {records}"
    record("sdk fault seeds (quorum)", seeds=1, lost=0, doubled=0, stuck=0)


@pytest.mark.parametrize("seed", range(QUORUM_SEEDS), ids=lambda seed: f"deadline_seed_{seed}")
def test_a_default_answer_at_the_deadline_under_sdk_faults_loses_doubles_and_strands_nothing(
    emulators: Emulators, seed: int
) -> None:
    # GIVEN a refund waiting for two of finance or its deadline's approval, random SDK calls of the system failing
    reference = _reference(emulators, "deadline", _REFERENCES)
    assert reference.cards == ["APPROVED"] and reference.side_effects == 1
    world = World(emulators, 20_000 + seed, "deadline")
    # WHEN one approver answers (retrying 5xx) and the sweeper ticks past the deadline, faults and all
    world.run()
    # THEN the deadline's approval was applied once, through the answer path: the refund ran once
    world.injector.enabled = False
    (turn,) = [t for t in world.turns() if len(t.messages) > 1]
    _check(world, reference)
    (card,) = turn.cards
    assert card.people is not None, world.where
    assert [d.subject for d in card.people.decisions] == [APPROVERS[0], DEADLINE_SUBJECT], world.where
    records = world.timeline.decisions(turn.conversation_id, turn.created_at, turn.id)
    assert [r.subject for r in records] == [APPROVERS[0], DEADLINE_SUBJECT], f"{world.where}: audit {records}"
    record("sdk fault seeds (deadline)", seeds=1, lost=0, doubled=0, stuck=0)


def test_every_kind_of_fault_was_injected() -> None:
    # GIVEN the seeds of this session WHEN they have all run THEN each kind of fault fired at least once
    ran = FIGURES.get((GROUP, "seeds"), 0)
    if ONLY is not None or not isinstance(ran, int) or ran < DEFAULT_SEEDS:
        pytest.skip("needs the full seed range in this session")
    fired = {name for (group, name) in FIGURES if group == "sdk faults by kind"}
    assert fired == set(FAULT_KINDS), f"never fired: {set(FAULT_KINDS) - fired}"


# ---------------------------------------------------------------------------------------------- the MCP flow


def _mcp_seed_params() -> list[Any]:
    return [
        pytest.param(seed, id=f"mcp_seed_{seed}", marks=[pytest.mark.slow] if seed >= 20 else [])
        for seed in range(MCP_SEEDS)
    ]


@pytest.mark.parametrize("seed", _mcp_seed_params())
def test_sdk_faults_lose_double_and_strand_nothing_in_an_mcp_flow(
    emulators: Emulators, desk: RunningServer, seed: int
) -> None:
    # GIVEN the MCP flow on DynamoDB Local + moto (a FastMCP server's question, answered days later in effect:
    # the worker that asked is gone when the answer comes), random SDK calls of the system failing
    reference = _reference(emulators, "mcp", _REFERENCES, mcp_url=desk.url)
    world = World(emulators, seed, "mcp", mcp_url=desk.url)
    # WHEN a client drives it, retrying 5xx, while SQS redelivers failures and the sweeper ticks when idle
    world.run()
    # THEN nothing is lost, unreadable, doubled or stuck, as for every flow
    ran = [t.id for t in world.turns() if len(t.messages) > 1]
    figures = _check(world, reference)  # it asserts that exactly one turn ran (then it starts the next one)
    turn = world.checker.load(ran[0])
    (result,) = [m for m in turn.messages if isinstance(m, ToolMessage)]
    assert isinstance(result.content, dict), world.where
    assert result.content["text"].startswith("created 'login' for SSO (urgent=True"), f"{world.where}: {result}"
    # ... and every request the server saw for this call carried its one idempotency key, every retry the one
    # requestState the snapshot kept (a call repeated after a lost write is recognisable by the server)
    key = f"{turn.id}:call-1"
    exchanges = [
        e for e in desk.recorder.calls("create_ticket") if e.request["params"]["_meta"].get(IDEMPOTENCY_META_KEY) == key
    ]
    retries = [e.request["params"] for e in exchanges if "requestState" in e.request["params"]]
    assert retries, world.where
    asks = [e for e in exchanges if "requestState" not in e.request["params"]]
    states = {r["requestState"] for r in retries}
    assert len(states) == 1, f"{world.where}: retries carried {len(states)} different states"
    # byte for byte one the server gave (FastMCP seals its state: only the server can read it)
    assert states <= {json.loads(e.response)["result"].get("requestState") for e in asks}, world.where
    completed = [e for e in exchanges if json.loads(e.response)["result"].get("resultType", "complete") == "complete"]
    record(
        GROUP,
        mcp_seeds=1,
        mcp_lost=0,
        mcp_doubled=0,
        mcp_stuck=0,
        mcp_server_completions=len(completed),
        **{f"mcp_{name}": value for name, value in figures.items()},
    )
