"""Streaming model calls: the runner tells each text piece as MODEL_TEXT_DELTA, and a turn ends in the same
state with a streaming model as with the same model answering whole."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agentturn import Agent, Event, InMemoryChatMemory, InMemoryTurnStore, ResumeCommand, Runner
from agentturn.demo import TicketLedger, demo_agents
from agentturn.demo.agents import demo_model
from agentturn.engine.events import EventType
from agentturn.ports.chat_model import ChatModel, ChatRequest, ScriptedChatModel, can_stream
from agentturn.state.messages import AiMessage
from agentturn.state.turn import Turn, TurnStatus
from tests.support.clock import FakeClock


class WholeAnswers:
    """The same model, without ``stream``: it answers each call whole."""

    def __init__(self, model: ChatModel) -> None:
        self._model = model

    def chat(self, request: ChatRequest) -> AiMessage:
        return self._model.chat(request)


#: (agent, what the person says, the form data or approval that resumes it, or None when it does not wait)
CYCLES = [
    (
        "support-agent",
        "create a high priority login incident ticket",
        {"affectedSystem": "SSO", "impactScope": "ALL_USERS"},
    ),
    (
        "meeting-agent",
        "book a meeting room",
        {"topic": "Q3", "date": "2026-12-03", "startTime": "10:00", "attendees": 4},
    ),
    ("refund-agent", "refund order O-1001", "approve"),
    ("support-agent", "hello there", None),
]


def _cycle(model: ChatModel, agent_id: str, text: str, answer: Any) -> tuple[list[Turn], list[Event]]:
    clock = FakeClock()
    events: list[Event] = []
    agents = demo_agents(TicketLedger(), chat_model=model)
    agent: Agent = next(a for a in agents if a.id == agent_id)
    runner = Runner(
        InMemoryTurnStore(clock=clock), InMemoryChatMemory(), agents, [events.append], clock=clock, worker_id="w"
    )
    turns = [runner.run(agent, "conversation-1", text)]
    waiting = turns[-1]
    if answer is not None and waiting.suspension is not None:
        action = waiting.suspension.action_id
        command = (
            ResumeCommand.approve_tool(action) if answer == "approve" else ResumeCommand.submit_form(action, answer)
        )
        turns.append(runner.resume(waiting.id, command))
    return turns, events


def _comparable(turn: Turn) -> dict[str, Any]:
    """What a turn is, without what differs between two runs (its id, the lease, event numbers, references)."""
    # The demo ledger names tickets, bookings and refunds after the turn id: volatile too.
    text = re.sub(r"\b[A-Z]{3,}-[0-9A-F]{8}\b", "<reference>", turn.model_dump_json().replace(turn.id, "<turn>"))
    # The fake clock moves a microsecond at every reading, and the lease heartbeat's thread reads it too, at
    # moments of its own: times are compared to the second (the clock does not move otherwise here).
    text = re.sub(r"(\d{2}:\d{2}:\d{2})\.\d{6}Z", r"\1Z", text)
    document = json.loads(text)
    for volatile in ("lease", "event_sequence"):
        document.pop(volatile, None)
    if isinstance(document.get("retain_until"), float):
        document["retain_until"] = int(document["retain_until"])
    return document


@pytest.mark.parametrize(("agent_id", "text", "answer"), CYCLES, ids=[c[0] + ":" + c[1] for c in CYCLES])
def test_a_turn_ends_in_the_same_state_streamed_or_whole(agent_id: str, text: str, answer: Any) -> None:
    # GIVEN the demo model, once streaming (in pieces of 3 characters) and once answering whole
    streaming = ScriptedChatModel(demo_model, chunk_chars=3)
    whole = WholeAnswers(ScriptedChatModel(demo_model))
    assert can_stream(streaming) and not can_stream(whole)

    # WHEN the same cycle runs on each
    streamed_turns, streamed_events = _cycle(streaming, agent_id, text, answer)
    whole_turns, whole_events = _cycle(whole, agent_id, text, answer)

    # THEN every state the turn was in (waiting, then terminal) is the same
    assert [_comparable(t) for t in streamed_turns] == [_comparable(t) for t in whole_turns]
    assert streamed_turns[-1].status in (TurnStatus.COMPLETED, TurnStatus.WAITING_FOR_USER)
    # AND only the streamed run told text pieces, which join to the text of the model's replies
    assert not [e for e in whole_events if e.type is EventType.MODEL_TEXT_DELTA]
    deltas = [e for e in streamed_events if e.type is EventType.MODEL_TEXT_DELTA]
    replies = [m.content for m in streamed_turns[-1].messages if isinstance(m, AiMessage) and m.content]
    by_call: dict[int, str] = {}
    for delta in deltas:
        by_call[delta.data["call"]] = by_call.get(delta.data["call"], "") + delta.data["text"]
    assert list(by_call.values()) == replies
    assert replies, "each cycle ends with a text answer"
    # AND the other events are the same, in the same order, with the same numbers
    assert [(e.type, e.sequence) for e in streamed_events if e.type is not EventType.MODEL_TEXT_DELTA] == [
        (e.type, e.sequence) for e in whole_events
    ]


def test_deltas_are_numbered_within_their_call_and_use_up_no_sequence() -> None:
    # GIVEN a model that answers "hello, world" in pieces of 5 characters
    model = ScriptedChatModel([AiMessage(content="hello, world")], chunk_chars=5)

    # WHEN a turn runs
    _, events = _cycle(model, "support-agent", "say hello", None)

    # THEN three deltas come between MODEL_STARTED and MODEL_COMPLETED, indexed 0..2, on MODEL_STARTED's sequence
    types = [e.type for e in events]
    started, completed = types.index(EventType.MODEL_STARTED), types.index(EventType.MODEL_COMPLETED)
    deltas = events[started + 1 : completed]
    assert [(d.type, d.data["text"], d.data["index"], d.data["call"]) for d in deltas] == [
        (EventType.MODEL_TEXT_DELTA, "hello", 0, 1),
        (EventType.MODEL_TEXT_DELTA, ", wor", 1, 1),
        (EventType.MODEL_TEXT_DELTA, "ld", 2, 1),
    ]
    assert {d.sequence for d in deltas} == {events[started].sequence}
    assert events[completed].sequence == events[started].sequence + 1
    # AND every event names the turn's conversation
    assert {e.conversation_id for e in events} == {"conversation-1"}


def test_the_scripted_model_waits_on_the_injected_sleeper() -> None:
    # GIVEN a scripted model with a first-token latency and a gap between pieces, on a fake sleeper
    slept: list[float] = []
    model = ScriptedChatModel(
        [AiMessage(content="abcdef")], chunk_chars=2, first_delay=0.5, delta_delay=0.05, sleep=slept.append
    )

    # WHEN it streams
    parts = list(model.stream(ChatRequest(system="", messages=[])))

    # THEN it waited 0.5 s before the first piece and 0.05 s before each later one, and ended with the reply
    assert slept == [0.5, 0.05, 0.05]
    assert parts[-1] == AiMessage(content="abcdef")
    assert "".join(p.text for p in parts[:-1]) == "abcdef"  # type: ignore[union-attr]
