"""An AG-UI run in process (in-memory store, timeline and queue; scripted models): the events, the interrupts,
the resume rules. Every event sent is checked against the protocol's own models (``ag-ui-protocol``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from ag_ui.core import Event as ProtocolEvent
from ag_ui.core import RunAgentInput as ProtocolRunAgentInput
from pydantic import TypeAdapter

from agentturn.agui.encoder import encode
from agentturn.agui.events import AgUiEvent, RunErrorCode
from agentturn.agui.input import InputError, new_user_text, parse_input
from agentturn.agui.session import AgUiSession
from agentturn.api.agents import AgentCatalog
from agentturn.api.services import Services
from agentturn.api.telemetry import NullTelemetry
from agentturn.ports.memory import InMemoryChatMemory
from agentturn.ports.queue import InMemoryResumeQueue
from agentturn.ports.store import InMemoryTurnStore
from tests.agui.agents import (
    APPROVALS_AGENT,
    EACH_AGENT,
    EXPIRING_AGENT,
    FORM_AGENT,
    STEER_AGENT,
    TOOL_FORM_AGENT,
    agui_agents,
)

PROTOCOL_EVENT: TypeAdapter[Any] = TypeAdapter(ProtocolEvent)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def services(clock: Clock) -> Services:
    return Services(
        store=InMemoryTurnStore(clock=clock),
        chat_memory=InMemoryChatMemory(),
        queue=InMemoryResumeQueue(),
        agents=AgentCatalog.of(agui_agents()),
        clock=clock,
    )


Run = Callable[..., list[dict[str, Any]]]


@pytest.fixture
def run(services: Services) -> Run:
    counter = iter(range(1000))

    def run_once(
        agent: str | None,
        thread: str,
        *,
        text: str | None = None,
        resume: list[dict[str, Any]] | None = None,
        user: str = "alice",
        should_yield: Callable[[], bool] = lambda: False,
    ) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"threadId": thread, "runId": f"run-{next(counter)}", "messages": []}
        if text is not None:
            body["messages"] = [{"id": f"client-{text}", "role": "user", "content": text}]
        if resume is not None:
            body["resume"] = resume
        # What the official models accept as input, this server accepts too.
        ProtocolRunAgentInput.model_validate(body)
        session = AgUiSession(services, NullTelemetry(), user, agent, parse_input(body), should_yield)
        events: list[AgUiEvent] = session.events()
        wire = [event.wire() for event in events]
        for sent in wire:
            PROTOCOL_EVENT.validate_python(sent)
        return wire

    return run_once


def _turn_of(services: Services, thread: str, user: str = "alice") -> str | None:
    return services.chat_memory(f"{user}/{thread}").get_active_turn()


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def _interrupts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcome = events[-1].get("outcome") or {}
    interrupts: list[dict[str, Any]] = outcome.get("interrupts", [])
    return interrupts


def test_a_form_cycle_is_run_started_text_tool_call_state_messages_and_an_interrupt(run: Run) -> None:
    # GIVEN a model that writes a line and asks for a form
    # WHEN the user's first message arrives
    events = run(FORM_AGENT, "t1", text="book a trip")
    # THEN the events follow AG-UI's order, the interrupt comes last, after the state and the messages
    assert _types(events) == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * 4,
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "STATE_SNAPSHOT",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    [interrupt] = _interrupts(events)
    assert interrupt["reason"] == "input_required"
    assert interrupt["message"] == "Trip details"
    assert interrupt["toolCallId"] == "call-trip"
    assert interrupt["responseSchema"]["required"] == ["city", "nights"]
    about = interrupt["metadata"]["agentturn"]
    assert about["formKey"] == "trip_details" and about["actionId"] == "call-trip"
    assert interrupt["id"] == f"{about['turnId']}:input:call-trip"
    # the streamed reply has the id the timeline gives it
    streamed = events[2]["messageId"]
    assert streamed in [m["id"] for m in events[-2]["messages"]]


def test_three_approvals_are_three_interrupts_of_one_run_finished(run: Run) -> None:
    events = run(APPROVALS_AGENT, "t1", text="refund three")
    interrupts = _interrupts(events)
    assert [i["reason"] for i in interrupts] == ["tool_call"] * 3
    assert [i["toolCallId"] for i in interrupts] == ["call-r1", "call-r2", "call-r3"]
    schema = interrupts[0]["responseSchema"]
    assert schema["required"] == ["approved"]
    assert schema["properties"]["editedArgs"]["required"] == ["orderId", "amount"]
    assert interrupts[0]["message"] == "Refund 10 for order O-1?"


@pytest.mark.parametrize(
    ("resume", "code"),
    [
        (lambda ids: [{"interruptId": ids[0], "status": "cancelled"}], RunErrorCode.RESUME_INCOMPLETE),
        (
            lambda ids: [
                *({"interruptId": i, "status": "cancelled"} for i in ids),
                {"interruptId": "x", "status": "cancelled"},
            ],
            RunErrorCode.RESUME_UNKNOWN_INTERRUPT,
        ),
        (
            lambda ids: [
                {"interruptId": i, "status": "resolved", "payload": {"approved": True, "editedArgs": {"orderId": 1}}}
                for i in ids
            ],
            RunErrorCode.RESUME_INVALID_PAYLOAD,
        ),
        (
            lambda ids: [
                {"interruptId": i, "status": "resolved", "payload": {"approved": True, "respond": "x"}} for i in ids
            ],
            RunErrorCode.RESUME_INVALID_PAYLOAD,
        ),
    ],
    ids=["partial", "unknown", "edited-args-break-the-schema", "respond-with-approved"],
)
def test_a_refused_resume_is_a_run_error_and_stores_nothing(
    run: Run, services: Services, resume: Callable[[list[str]], list[dict[str, Any]]], code: RunErrorCode
) -> None:
    # GIVEN three open approvals
    asked = run(APPROVALS_AGENT, "t1", text="refund three")
    ids = [i["id"] for i in _interrupts(asked)]
    turn_id = _interrupts(asked)[0]["metadata"]["agentturn"]["turnId"]
    version = services.store.load(turn_id).version
    # WHEN a resume breaks a rule
    events = run(APPROVALS_AGENT, "t1", resume=resume(ids))
    # THEN RUN_ERROR with the rule's code, and the turn is as it was
    assert _types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1]["code"] == code.value
    assert services.store.load(turn_id).version == version
    assert [i["id"] for i in _interrupts(run(APPROVALS_AGENT, "t1"))] == ids


def test_a_resume_after_expires_at_is_refused_even_before_the_sweeper_closed_the_wait(
    run: Run, services: Services, clock: Clock
) -> None:
    asked = run(EXPIRING_AGENT, "t1", text="book")
    [interrupt] = _interrupts(asked)
    assert interrupt["expiresAt"].endswith("Z")
    clock.now += 2
    events = run(
        EXPIRING_AGENT,
        "t1",
        resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"city": "Lyon", "nights": 1}}],
    )
    assert events[-1]["code"] == RunErrorCode.RESUME_EXPIRED.value


def test_the_same_resume_twice_is_applied_once(run: Run, services: Services) -> None:
    asked = run(APPROVALS_AGENT, "t1", text="refund one")
    [interrupt] = _interrupts(asked)
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    first = run(APPROVALS_AGENT, "t1", resume=resume)
    again = run(APPROVALS_AGENT, "t1", resume=resume)
    assert first[-1]["outcome"] == again[-1]["outcome"] == {"type": "success"}
    assert _types(first).count("TOOL_CALL_RESULT") == 1
    assert "TOOL_CALL_RESULT" not in _types(again)
    turn = services.store.load(interrupt["metadata"]["agentturn"]["turnId"])
    assert [m.type for m in turn.messages].count("tool") == 1


def test_a_new_message_while_interrupts_wait_is_refused_unless_the_agent_steers_away(run: Run, clock: Clock) -> None:
    run(FORM_AGENT, "t1", text="book")
    refused = run(FORM_AGENT, "t1", text="something else")
    assert refused[-1]["code"] == RunErrorCode.INTERRUPTS_PENDING.value
    # An agent with ExecutionPolicy(steer_away=True): the old form is declined with a reason, the message runs.
    asked = run(STEER_AGENT, "t2", text="book")
    clock.now += 1  # the timeline orders turns by when they start
    steered = run(STEER_AGENT, "t2", text="book again")
    assert steered[-1]["type"] == "RUN_FINISHED"
    assert _interrupts(steered)[0]["id"] != _interrupts(asked)[0]["id"]
    messages = steered[-2]["messages"]
    declined = next(m for m in messages if m["role"] == "tool")
    assert "superseded" in declined["content"]
    assert [m["content"] for m in messages if m["role"] == "user"] == ["book", "book again"]


def test_a_run_out_of_time_hands_the_turn_to_the_queue_and_says_so(run: Run, services: Services) -> None:
    events = run(FORM_AGENT, "t1", text="book", should_yield=lambda: True)
    assert events[-1]["code"] == RunErrorCode.CONTINUING.value
    queue = services.queue
    assert isinstance(queue, InMemoryResumeQueue)
    [message] = queue.drain()
    assert message.turn_id == _turn_of(services, "t1")


def test_another_callers_thread_of_the_same_id_is_their_own(run: Run) -> None:
    run(FORM_AGENT, "t1", text="secret")
    peek = run(FORM_AGENT, "t1", user="bob")
    assert peek[-2] == {"type": "MESSAGES_SNAPSHOT", "messages": []}
    assert peek[-1]["outcome"] == {"type": "success"}


def test_input_takes_only_a_new_last_user_message() -> None:
    messages: list[dict[str, Any]] = [
        {"id": "turn:m:00000", "role": "user", "content": "old"},
        {"id": "turn:m:00001", "role": "assistant", "content": "answer"},
    ]
    body = {"threadId": "t", "runId": "r", "messages": messages}
    assert new_user_text(parse_input(body), {"turn:m:00000", "turn:m:00001"}) is None
    messages.append({"id": "new", "role": "user", "content": [{"type": "text", "text": "hi"}]})
    assert new_user_text(parse_input(body), {"turn:m:00000", "turn:m:00001"}) == "hi"
    assert new_user_text(parse_input(body), {"new"}) is None


def test_a_malformed_input_names_each_field() -> None:
    with pytest.raises(InputError) as refused:
        parse_input({"threadId": "a/b", "messages": "x", "resume": [{"interruptId": "i", "status": "maybe"}]})
    assert {e["path"] for e in refused.value.errors} == {"/threadId", "/runId", "/messages", "/resume/0/status"}


def test_each_event_is_one_sse_data_line() -> None:
    from agentturn.agui.events import TextMessageContent

    frame = encode(TextMessageContent(message_id="m", delta="two\nlines"))
    assert frame.startswith(b"data: ") and frame.endswith(b"\n\n") and frame.count(b"\n") == 2
    assert json.loads(frame[6:]) == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "two\nlines"}


def test_a_tool_result_comes_before_the_reply_it_leads_to_each_with_its_own_id(run: Run) -> None:
    # GIVEN a tool that asked for a form, and the form submitted
    asked = run(TOOL_FORM_AGENT, "t1", text="ship")
    [interrupt] = _interrupts(asked)
    # WHEN the tool runs again and the model answers (one save holds both)
    events = run(
        TOOL_FORM_AGENT,
        "t1",
        resume=[
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"street": "Main 1", "zip": "12345"}}
        ],
    )
    # THEN the result is told first, and the streamed reply has the id the timeline gives it (not the result's)
    types = _types(events)
    assert types.index("TOOL_CALL_RESULT") < types.index("TEXT_MESSAGE_START")
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    text = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    snapshot = [m["id"] for m in events[-2]["messages"]]
    assert snapshot.index(result["messageId"]) + 1 == snapshot.index(text["messageId"])


@pytest.mark.parametrize("agent", [APPROVALS_AGENT, EACH_AGENT])
def test_three_answers_in_one_resume_apply_whether_the_agent_continues_after_all_or_each(run: Run, agent: str) -> None:
    asked = run(agent, "t1", text="refund three")
    interrupts = _interrupts(asked)
    resume = [
        {"interruptId": interrupts[0]["id"], "status": "resolved", "payload": {"approved": True}},
        {"interruptId": interrupts[1]["id"], "status": "resolved", "payload": {"approved": True}},
        {"interruptId": interrupts[2]["id"], "status": "cancelled"},
    ]
    done = run(agent, "t1", resume=resume)
    assert done[-1]["type"] == "RUN_FINISHED" and done[-1]["outcome"] == {"type": "success"}, done[-1]
    results = {e["toolCallId"]: json.loads(e["content"]) for e in done if e["type"] == "TOOL_CALL_RESULT"}
    assert results["call-r1"] == {"refunded": "O-1", "amount": 10}
    assert results["call-r2"] == {"refunded": "O-2", "amount": 20}
    assert results["call-r3"]["status"] == "rejected"


def test_a_new_message_while_the_turn_runs_elsewhere_is_refused_and_a_run_without_input_reports_it(
    run: Run, services: Services
) -> None:
    # GIVEN a turn handed to the worker (the request ran out of time), nobody running it yet
    handed = run(FORM_AGENT, "t1", text="book", should_yield=lambda: True)
    assert handed[-1]["code"] == RunErrorCode.CONTINUING.value
    # WHEN another message comes THEN it is refused: the thread is busy, nothing starts
    busy = run(FORM_AGENT, "t1", text="and another thing")
    assert busy[-1]["code"] == RunErrorCode.THREAD_BUSY.value
    # AND a run without input (following it at most ag_ui_follow_seconds, here none) says it continues
    services.settings = replace(services.settings, ag_ui_follow_seconds=0)
    assert run(FORM_AGENT, "t1")[-1]["code"] == RunErrorCode.CONTINUING.value
