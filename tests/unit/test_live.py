"""The live feed: a runner listener that publishes a turn's progress on its conversation's channel."""

from __future__ import annotations

from collections.abc import Sequence

from tests.support.clock import FakeClock

from agentturn import Agent, InMemoryChatMemory, InMemoryTurnStore, Runner
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
from agentturn.state.messages import AiMessage
from agentturn.state.turn import TurnStatus

ANSWER = "The quick brown fox jumps over the lazy dog, and then it naps in the afternoon sun."


def _run(publisher: RecordingPublisher | LiveFeed, clock: FakeClock, *, piece_delay: float) -> tuple[Runner, str]:
    model = ScriptedChatModel([AiMessage(content=ANSWER)], chunk_chars=4, delta_delay=piece_delay, sleep=clock.advance)
    agent = Agent(id="writer", instructions="write", chat_model=model)
    listener = publisher if isinstance(publisher, LiveFeed) else LiveFeed(publisher, channel_of, clock=clock)
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), [agent], [listener], clock=clock)
    turn = runner.run(agent, "alice/chat-1", "write a sentence")
    assert turn.status is TurnStatus.COMPLETED
    return runner, turn.id


def test_a_turn_is_told_as_status_text_and_timeline_notices_on_its_channel() -> None:
    # GIVEN a model that streams 4 characters every 30 ms, and a feed that publishes at most every 100 ms
    clock = FakeClock()
    publisher = RecordingPublisher()

    # WHEN alice's turn runs in her conversation "chat-1"
    _, turn_id = _run(publisher, clock, piece_delay=0.03)

    # THEN everything went to alice's channel of that conversation, naming the conversation as she does
    assert {channel for channel, _ in publisher.published} == {f"/agentturn/alice/{conversation_segment('chat-1')}"}
    messages = publisher.messages()
    assert {m.conversation_id for m in messages} == {"chat-1"}
    assert {m.turn_id for m in messages} == {turn_id}
    # AND it was told queued (the first save, READY), then thinking, then ended (the last save, COMPLETED)
    assert isinstance(messages[0], TimelineChanged)
    assert messages[0].status == "READY"
    statuses = [m.phase for m in messages if isinstance(m, StatusChanged)]
    assert statuses == ["thinking"]
    # AND the text pieces join to the answer, each starting where the last one ended
    deltas = [m for m in messages if isinstance(m, TextStreamed)]
    assert "".join(d.text for d in deltas) == ANSWER
    assert [d.offset for d in deltas] == [sum(len(d.text) for d in deltas[:i]) for i in range(len(deltas))]
    # AND they were coalesced: 21 pieces over ~0.6 s became at most one publish per 100 ms (+ the last flush)
    assert len(deltas) <= 0.03 * 21 / 0.1 + 2
    assert len(deltas) < 21
    # AND each save was told by version, with the status it was saved in, the last one the end, last of all
    notices = [m for m in messages if isinstance(m, TimelineChanged)]
    assert [n.version for n in notices] == sorted({n.version for n in notices})
    assert notices[-1].status == "COMPLETED"
    assert messages[-1] == notices[-1]
    # AND no message carries the conversation's content but the streamed text itself
    assert all(ANSWER not in str(m.model_dump()) for m in messages if not isinstance(m, TextStreamed))


def test_pieces_slower_than_the_interval_are_each_published() -> None:
    # GIVEN a model that streams a piece every 150 ms (slower than 10 a second)
    clock = FakeClock()
    publisher = RecordingPublisher()

    # WHEN the turn runs
    _run(publisher, clock, piece_delay=0.15)

    # THEN each piece was published on its own, as it came
    deltas = [m for m in publisher.messages() if isinstance(m, TextStreamed)]
    assert [d.text for d in deltas] == [ANSWER[i : i + 4] for i in range(0, len(ANSWER), 4)]


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
    feed = LiveFeed(failing, channel_of, clock=clock)

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
