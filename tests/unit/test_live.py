"""The live feed: a runner listener that publishes a turn's progress on its conversation's channel."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tests.support.clock import FakeClock

from agentturn import (
    Agent,
    FormDefinition,
    InMemoryChatMemory,
    InMemoryTurnStore,
    Runner,
    Tool,
    ToolCall,
    UserInputTool,
)
from agentturn.api.live_channels import channel_for, channel_of, conversation_segment
from agentturn.listeners.live import (
    LiveFeed,
    LiveMessage,
    RecordingPublisher,
    StatusChanged,
    TextStreamed,
    TimelineChanged,
)
from agentturn.ports.chat_model import ScriptedChatModel
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import AiMessage
from agentturn.state.turn import TurnStatus

ANSWER = "The quick brown fox jumps over the lazy dog, and then it naps in the afternoon sun."


class ManualSchedule:
    """The feed's timers, fired by the test (the clock is fake too): what was scheduled, and when it is due."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.timers: list[_Timer] = []

    def __call__(self, delay: float, action: Callable[[], None]) -> _Timer:
        timer = _Timer(self.clock() + delay, action)
        self.timers.append(timer)
        return timer

    def fire_due(self) -> int:
        due = [t for t in self.timers if not t.cancelled and t.at <= self.clock()]
        self.timers = [t for t in self.timers if t not in due]
        for timer in due:
            timer.action()
        return len(due)


class _Timer:
    def __init__(self, at: float, action: Callable[[], None]) -> None:
        self.at, self.action, self.cancelled = at, action, False

    def cancel(self) -> None:
        self.cancelled = True


def _feed(publisher: RecordingPublisher, clock: FakeClock) -> LiveFeed:
    return LiveFeed(publisher, channel_of, clock=clock, schedule=ManualSchedule(clock))


def _run(
    publisher: RecordingPublisher | LiveFeed, clock: FakeClock, *, piece_delay: float, first_delay: float = 0.0
) -> tuple[Runner, str]:
    model = ScriptedChatModel(
        [AiMessage(content=ANSWER)],
        chunk_chars=4,
        first_delay=first_delay,
        delta_delay=piece_delay,
        sleep=clock.advance,
    )
    agent = Agent(id="writer", instructions="write", chat_model=model)
    listener = publisher if isinstance(publisher, LiveFeed) else _feed(publisher, clock)
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), [agent], [listener], clock=clock)
    turn = runner.run(agent, "alice/chat-1", "write a sentence")
    assert turn.status is TurnStatus.COMPLETED
    return runner, turn.id


def test_a_streamed_turn_is_told_as_coalesced_text_then_one_notice_on_its_channel() -> None:
    # GIVEN a model that streams 4 characters every 30 ms, and a feed that publishes text at most every 100 ms
    clock = FakeClock()
    publisher = RecordingPublisher()

    # WHEN alice's turn runs in her conversation "chat-1" (started by her request: it answers her the start)
    _, turn_id = _run(publisher, clock, piece_delay=0.03)

    # THEN everything went to alice's channel of that conversation, naming the conversation as she does
    assert {channel for channel, _ in publisher.published} == {f"/agentturn/alice/{conversation_segment('chat-1')}"}
    messages = publisher.messages()
    assert {m.conversation_id for m in messages} == {"chat-1"}
    assert {m.turn_id for m in messages} == {turn_id}
    # AND the start was not pushed (the request that started it answered the page), nor was "thinking" on its
    # own: the text says it
    assert not [m for m in messages if isinstance(m, StatusChanged)]
    # AND the text pieces continue each other, from the start of the answer
    deltas = [m for m in messages if isinstance(m, TextStreamed)]
    assert deltas
    assert [d.offset for d in deltas] == [sum(len(d.text) for d in deltas[:i]) for i in range(len(deltas))]
    assert ANSWER.startswith("".join(d.text for d in deltas))
    # AND they were coalesced: 21 pieces over ~0.63 s became at most one publish per 100 ms
    assert len(deltas) <= 0.03 * 21 / 0.1 + 1
    # AND the save that ended it was told once, last of all (it holds the rest of the text)
    notices = [m for m in messages if isinstance(m, TimelineChanged)]
    assert [(n.status, n is messages[-1]) for n in notices] == [("COMPLETED", True)]
    # AND no message carries the conversation's content but the streamed text itself
    assert all(ANSWER not in str(m.model_dump()) for m in messages if not isinstance(m, TextStreamed))


def test_pieces_slower_than_the_interval_are_each_published() -> None:
    # GIVEN a model that takes 150 ms to its first piece and streams a piece every 150 ms (slower than 10 a second)
    clock = FakeClock()
    publisher = RecordingPublisher()

    # WHEN the turn runs
    _run(publisher, clock, piece_delay=0.15, first_delay=0.15)

    # THEN each piece was published on its own, as it came (the first at once: the call had run 150 ms)
    deltas = [m for m in publisher.messages() if isinstance(m, TextStreamed)]
    assert [d.text for d in deltas] == [ANSWER[i : i + 4] for i in range(0, len(ANSWER), 4)]


def test_a_reply_whole_within_the_window_is_told_by_one_notice_only() -> None:
    # GIVEN a model that answers at once (a scripted model, or a cached answer)
    clock = FakeClock()
    publisher = RecordingPublisher()

    # WHEN the turn runs
    _run(publisher, clock, piece_delay=0.0)

    # THEN the channel got one message: the save that ended it (the page reads the reply from the timeline)
    assert [(type(m), getattr(m, "status", None)) for m in publisher.messages()] == [(TimelineChanged, "COMPLETED")]


def test_a_page_reading_the_timeline_on_a_notice_finds_what_that_save_added() -> None:
    # GIVEN a publisher that reads the conversation's timeline the moment a notice arrives, as a page does
    clock = FakeClock()
    memory = InMemoryChatMemory()
    seen: list[tuple[str, list[str]]] = []

    class ReadingPage(RecordingPublisher):
        def publish(self, channel: str, messages: Sequence[LiveMessage]) -> None:
            for message in messages:
                if isinstance(message, TimelineChanged):
                    timeline = memory("alice/desk").get_messages()
                    seen.append((message.status, [type(m).__name__ for m in timeline]))
            super().publish(channel, messages)

    form = FormDefinition("refund", "which order", {"type": "object", "properties": {"o": {"type": "string"}}})
    model = ScriptedChatModel(
        [
            AiMessage(
                content="", tool_calls=[ToolCall(id="ask", name="request_user_input", arguments={"formKey": "refund"})]
            ),
            AiMessage(content="refunded"),
        ]
    )
    agent = Agent(id="desk", instructions="", chat_model=model, tools=[UserInputTool(forms=[form])])
    runner = Runner(InMemoryTurnStore(clock=clock), memory, [agent], [_feed(ReadingPage(), clock)], clock=clock)

    # WHEN a turn asks for a form, and the answer lets it end
    turn = runner.run(agent, "alice/desk", "refund my order")
    assert turn.status is TurnStatus.WAITING_FOR_USER
    done = runner.resume(turn.id, ResumeCommand.submit_form("ask", {"o": "O-1"}))
    assert done.status is TurnStatus.COMPLETED

    # THEN the notice that the turn waits came when the timeline held the form card, and the one that it ended
    # when the timeline held the reply: never before the entries it announces
    assert [status for status, _ in seen] == ["WAITING_FOR_USER", "COMPLETED"]
    assert "FormMessage" in seen[0][1]
    assert seen[1][1][-1] == "AiMessage"


def test_a_phase_is_pushed_only_when_it_lasts_and_then_once() -> None:
    # GIVEN a tool that works for 2 s, and a feed whose timers the test fires
    clock = FakeClock()
    publisher = RecordingPublisher()
    schedule = ManualSchedule(clock)
    fired: list[int] = []

    def slow(arguments: dict[str, Any]) -> str:
        clock.advance(0.3)
        fired.append(schedule.fire_due())  # the held status's timer, while the tool still works
        clock.advance(1.7)
        fired.append(schedule.fire_due())
        return "done"

    model = ScriptedChatModel(
        [AiMessage(content="", tool_calls=[ToolCall(id="t", name="slow", arguments={})]), AiMessage(content="ok")]
    )
    agent = Agent(id="worker", instructions="", chat_model=model, tools=[Tool("slow", "slow", slow)])
    feed = LiveFeed(publisher, channel_of, clock=clock, schedule=schedule)
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), [agent], [feed], clock=clock)

    # WHEN the turn runs
    runner.run(agent, "alice/chat-1", "go")

    # THEN "thinking" (over within the window) was never pushed; "running slow" was, once, while the tool ran;
    # then the end
    told = [(m.type, getattr(m, "phase", None) or getattr(m, "status", None)) for m in publisher.messages()]
    assert told == [("status", "running"), ("timeline", "COMPLETED")]
    assert fired == [1, 0]


class FailingPublisher:
    def __init__(self) -> None:
        self.attempts = 0

    def publish(self, channel: str, messages: Sequence[LiveMessage]) -> None:
        self.attempts += 1
        raise ConnectionError("the push channel is down")


def test_a_publisher_that_fails_never_fails_the_turn() -> None:
    # GIVEN a feed whose publisher always fails
    clock = FakeClock()
    failing = FailingPublisher()
    feed = LiveFeed(failing, channel_of, clock=clock, schedule=ManualSchedule(clock))

    # WHEN a turn runs (the helper asserts it COMPLETED)
    _run(feed, clock, piece_delay=0.03)

    # THEN every publish was tried and the turn completed anyway
    assert failing.attempts > 3


def test_channels_are_per_owner_and_conversation_and_only_for_usable_subjects() -> None:
    # GIVEN / WHEN / THEN: two owners of the same conversation id get two channels
    assert channel_for("alice", "chat-1") != channel_for("bob", "chat-1")
    # AND a conversation id with characters a channel cannot hold still gets a segment of letters and digits
    assert channel_for("alice", "a.b:c_d") == f"/agentturn/alice/{conversation_segment('a.b:c_d')}"
    assert len(conversation_segment("x" * 128)) == 32
    # AND a subject that cannot be a channel segment gets none (its page polls)
    assert channel_for("auth0|12345", "chat-1") is None
    assert channel_of("auth0|12345/chat-1") is None
    # AND the runtime's conversation id splits at its last "/" (subjects may hold one; conversation ids not)
    assert channel_of("alice/chat-1") == (channel_for("alice", "chat-1"), "chat-1")
    assert channel_of("no-owner") is None


def test_a_form_cycle_is_two_messages_the_wait_and_the_end() -> None:
    # GIVEN a feed whose timers the test fires, and an agent that asks for a form at once
    clock = FakeClock()
    publisher = RecordingPublisher()
    schedule = ManualSchedule(clock)
    form = FormDefinition("refund", "which order", {"type": "object", "properties": {"o": {"type": "string"}}})
    ask = ToolCall(id="ask", name="request_user_input", arguments={"formKey": "refund"})
    model = ScriptedChatModel([AiMessage(content="", tool_calls=[ask]), AiMessage(content="refunded")])
    agent = Agent(id="desk", instructions="", chat_model=model, tools=[UserInputTool(forms=[form])])
    feed = LiveFeed(publisher, channel_of, clock=clock, schedule=schedule)
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), [agent], [feed], clock=clock)

    # WHEN the turn waits, the person's answer is saved (by their request), a second passes before a worker
    # takes it (every held timer fired), and the worker ends it
    waiting = runner.run(agent, "alice/desk", "refund my order")
    runner.submit_resume(waiting.id, ResumeCommand.submit_form("ask", {"o": "O-1"}))
    clock.advance(1.0)
    schedule.fire_due()
    assert runner.run_turn(waiting.id).status is TurnStatus.COMPLETED

    # THEN the channel got two messages: the save that made it wait, and the one that ended it (the start and
    # the answer were told by the requests that made them; the phases were over within the window)
    assert [(m.type, getattr(m, "status", None)) for m in publisher.messages()] == [
        ("timeline", "WAITING_FOR_USER"),
        ("timeline", "COMPLETED"),
    ]
