"""The ChatMemory conformance suite: every adapter behaves as the in-memory reference does.

Run it on your memory by subclassing :class:`ChatMemorySuite` and providing a ``memory_kit`` fixture (any
object with ``name``, ``memory`` (conversation id -> ChatMemory) and ``capabilities``; a
:class:`~agentturn.testing.StoreKit` is one). Races of 8 writers run only when the kit declares
``atomic_conditional_writes``.
"""

from __future__ import annotations

import base64
import json
import random

import pytest

from agentturn.state.messages import (
    AiMessage,
    ApprovalMessage,
    ApprovalStatus,
    FormMessage,
    FormStatus,
    TimelineMessage,
    ToolMessage,
    UserMessage,
)
from agentturn.testing._suite import THREADS, require
from agentturn.testing.builders import ai, form, new_conversation_id, race, submitted, user
from agentturn.testing.kits import ChatMemoryKit
from agentturn.timeline.conversation_list import ConversationDirectory, ConversationListing, InvalidCursorError


def directory_of(memory_kit: ChatMemoryKit) -> ConversationDirectory:
    provider = memory_kit.memory
    if not isinstance(provider, ConversationDirectory):
        pytest.skip(f"{memory_kit.name} lists no conversations (its provider is no ConversationDirectory)")
    return provider


def _owner() -> str:
    return f"owner-{random.getrandbits(48):012x}"


__all__ = ["ChatMemorySuite"]


def _result(index: int, *, turn: str = "turn-1", call: str = "call-1") -> ToolMessage:
    """The result of ``call``, message number ``index`` of ``turn``."""
    return ToolMessage(
        message_id=f"{turn}:m:{index:05d}",
        turn_id=turn,
        sort_key=f"2026#{turn}#{index:05d}",
        tool_call_id=call,
        content={"status": "ok"},
    )


def ids(messages: list[TimelineMessage] | list[UserMessage | AiMessage | ToolMessage]) -> list[str]:
    return [m.message_id for m in messages]


class ChatMemorySuite:
    """The ChatMemory contract; subclass it as ``Test...`` and provide the ``memory_kit`` fixture."""

    # ----------------------------------------------------------------------------------------------- append

    def test_append_stores_an_entry_once(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN an empty conversation
        memory = memory_kit.memory(new_conversation_id())
        message = user(0)

        # WHEN the same entry is appended twice (a re-projection)
        first, second = memory.append(message), memory.append(message)

        # THEN the first adds it, the second reports it present; there is one entry, equal to the appended one
        assert (first, second) == (True, False)
        assert memory.get_messages() == [message]
        assert memory.get_message(message.message_id) == message

    def test_append_all_twice_leaves_no_duplicates(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN a turn's messages and card
        memory = memory_kit.memory(new_conversation_id())
        batch: list[TimelineMessage] = [
            user(0),
            ai(1, call="call-1"),
            form(1),
            ToolMessage(
                message_id="turn-1:m:00002",
                turn_id="turn-1",
                sort_key="2026#turn-1#00002",
                tool_call_id="call-1",
                content={"status": "ok"},
            ),
        ]

        # WHEN the whole batch is appended twice (the projection ran again after a crash)
        memory.append_all(batch)
        memory.append_all(batch)

        # THEN each entry is there once, in timeline order
        assert ids(memory.get_messages()) == [
            "turn-1:m:00000",
            "turn-1:m:00001",
            "turn-1:input:call-1",
            "turn-1:m:00002",
        ]
        assert memory.get_messages() == batch

    def test_append_all_leaves_an_updated_card_as_it_is(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN a card appended and then submitted (version 2)
        memory = memory_kit.memory(new_conversation_id())
        card = form(1)
        memory.append(card)
        assert memory.update_message(submitted(card), expected_version=1)

        # WHEN an old projection appends the version-1 card again, alone and in a batch
        assert memory.append(card) is False
        memory.append_all([user(0), card])

        # THEN the stored card is still the submitted one
        stored = memory.get_message(card.message_id)
        assert isinstance(stored, FormMessage)
        assert (stored.status, stored.version) == (FormStatus.SUBMITTED, 2)

    def test_append_all_stores_a_settled_card_whose_pending_version_never_arrived(
        self, memory_kit: ChatMemoryKit
    ) -> None:
        # GIVEN a timeline that holds the turn's input and call but not its card (that write was lost)
        memory = memory_kit.memory(new_conversation_id())
        memory.append_all([user(0), ai(1, call="call-1")])
        answered = submitted(form(1))

        # WHEN the answered card is appended with the messages after it, or alone (a cancel adds no message)
        memory.append_all([answered, _result(2)])
        other = submitted(form(3, call="call-2"))
        memory.append_all([other])

        # THEN both cards are there at their versions, in their places
        assert memory.get_messages() == [user(0), ai(1, call="call-1"), answered, _result(2), other]
        assert memory.get_message(other.message_id) == other

    def test_append_all_handles_more_entries_than_one_batch_request(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN 60 messages (more than DynamoDB's 25 per BatchWriteItem), in shuffled order
        memory = memory_kit.memory(new_conversation_id())
        messages = [user(i) if i % 2 == 0 else ai(i) for i in range(60)]
        shuffled = random.Random(7).sample(messages, len(messages))

        # WHEN they are appended as one batch
        memory.append_all(shuffled)

        # THEN all are there, in sort-key order
        assert memory.get_messages() == messages

    def test_overlapping_batches_keep_each_message_once_in_order(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN a turn's first four messages appended, then batches from other projection marks: a stale one
        # inside the first, one that overlaps its end and goes on
        memory = memory_kit.memory(new_conversation_id())
        messages: list[TimelineMessage] = [user(i) if i % 2 == 0 else ai(i) for i in range(6)]
        memory.append_all(messages[:4])

        # WHEN they are appended
        memory.append_all(messages[2:4])
        memory.append_all(messages[2:6])

        # THEN every message is there once, in order, the latest ones by any limit, and each found by id
        assert memory.get_messages() == messages
        assert memory.get_messages(3) == messages[3:]
        assert memory.get_model_messages(1) == messages[5:]
        assert [memory.get_message(m.message_id) for m in messages] == messages

    def test_an_entry_needs_a_message_id(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN a message without timeline identity
        memory = memory_kit.memory(new_conversation_id())

        # WHEN it is appended
        # THEN it is refused and nothing is stored
        with pytest.raises(ValueError, match="message_id"):
            memory.append(UserMessage(content="anonymous"))
        assert memory.get_messages() == []
        with pytest.raises(ValueError, match="message_id"):
            memory.append_all([user(0), UserMessage(content="anonymous")])
        assert all(m.message_id for m in memory.get_messages())

    # ------------------------------------------------------------------------------------------------ reads

    def test_get_messages_is_ordered_by_sort_key_and_limit_takes_the_latest(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN entries of two turns appended out of order, cards included
        memory = memory_kit.memory(new_conversation_id())
        timeline: list[TimelineMessage] = [
            user(0, turn="t1"),
            ai(1, turn="t1", call="c1"),
            form(1, turn="t1", call="c1"),
            ai(2, turn="t1"),
            user(0, turn="t2"),
            ai(1, turn="t2"),
        ]
        for message in random.Random(3).sample(timeline, len(timeline)):
            memory.append(message)

        # WHEN the timeline is read whole and in part
        # THEN it is oldest first; a limit gives the latest N, still oldest first
        assert memory.get_messages() == timeline
        assert memory.get_messages(limit=None) == timeline
        assert memory.get_messages(limit=3) == timeline[-3:]
        assert memory.get_messages(limit=100) == timeline
        assert memory.get_messages(limit=0) == []

    def test_get_model_messages_never_returns_a_card(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN a timeline with a form card and an approval card between model messages
        memory = memory_kit.memory(new_conversation_id())
        approval = ApprovalMessage(
            message_id="turn-1:approval:call-2",
            turn_id="turn-1",
            sort_key="2026#turn-1#00003.00",
            action_id="call-2",
            tool_name="issue_refund",
            arguments={"amount": 42.5},
        )
        model: list[UserMessage | AiMessage] = [user(0), ai(1, call="call-1"), ai(3, call="call-2"), user(4)]
        memory.append_all([*model, form(1), approval])

        # WHEN the model's view is read
        # THEN it holds the model messages only, oldest first; a limit gives the latest N
        assert memory.get_model_messages() == model
        assert memory.get_model_messages(limit=2) == model[-2:]
        assert memory.get_model_messages(limit=0) == []
        assert len(memory.get_messages()) == 6

    def test_conversations_are_isolated(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN two conversations, each with an entry and an active turn
        left, right = memory_kit.memory(new_conversation_id()), memory_kit.memory(new_conversation_id())
        left.append(user(0))
        assert left.set_active_turn("turn-left", expected=None)

        # WHEN the other conversation is read
        # THEN it sees none of them
        assert right.get_messages() == []
        assert right.get_model_messages() == []
        assert right.get_message(user(0).message_id) is None
        assert right.get_active_turn() is None
        assert right.conversation_id != left.conversation_id

    def test_get_message_finds_any_entry_by_id(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN a conversation of 60 messages and a card
        memory = memory_kit.memory(new_conversation_id())
        messages = [user(i) if i % 2 == 0 else ai(i) for i in range(60)]
        card = form(30)
        memory.append_all([*messages, card])

        # WHEN entries are looked up by id: the oldest, one in the middle, the newest, the card
        # THEN each is found as it was stored
        for wanted in (messages[0], messages[31], messages[-1], card):
            assert memory.get_message(wanted.message_id) == wanted

    def test_get_message_of_an_unknown_id_is_none(self, memory_kit: ChatMemoryKit) -> None:
        memory = memory_kit.memory(new_conversation_id())
        # GIVEN a conversation with one entry
        memory.append(user(0))
        # WHEN an unknown id is looked up
        # THEN there is no such entry
        assert memory.get_message("turn-1:m:99999") is None

    # ---------------------------------------------------------------------------------------- card updates

    def test_update_message_is_a_compare_and_set_on_the_version(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN a pending card (version 1)
        memory = memory_kit.memory(new_conversation_id())
        card = form(1)
        memory.append_all([user(0), ai(1, call="call-1"), card])

        # WHEN it is updated at a wrong version, then at the right one, then at the old one again
        wrong = memory.update_message(submitted(card), expected_version=7)
        right = memory.update_message(submitted(card), expected_version=1)
        stale = memory.update_message(
            submitted(card).model_copy(update={"submitted_by": "intruder"}), expected_version=1
        )

        # THEN only the right one lands; the card keeps its place in the timeline
        assert (wrong, right, stale) == (False, True, False)
        stored = memory.get_message(card.message_id)
        assert isinstance(stored, FormMessage)
        assert (stored.version, stored.status, stored.submitted_by, stored.actions) == (
            2,
            FormStatus.SUBMITTED,
            "user-1",
            [],
        )
        assert ids(memory.get_messages())[-1] == card.message_id

    def test_update_message_of_a_missing_card_is_refused(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN a conversation without the card, and one with a model message of the same id
        memory = memory_kit.memory(new_conversation_id())
        card = form(1)
        memory.append(user(0))
        impostor = card.model_copy(update={"message_id": user(0).message_id, "sort_key": user(0).sort_key})

        # WHEN either is "updated"
        # THEN nothing is created or replaced
        assert memory.update_message(submitted(card), expected_version=1) is False
        assert memory.update_message(impostor, expected_version=1) is False
        assert memory.get_message(card.message_id) is None
        assert memory.get_messages() == [user(0)]

    def test_update_message_keeps_the_stored_position_when_the_card_names_another(
        self, memory_kit: ChatMemoryKit
    ) -> None:
        # GIVEN a stored card
        memory = memory_kit.memory(new_conversation_id())
        card = form(1)
        memory.append_all([user(0), ai(1, call="call-1"), card, ai(2)])

        # WHEN an update arrives with a different (wrong) sort key
        moved = submitted(card).model_copy(update={"sort_key": "9999#elsewhere"})
        assert memory.update_message(moved, expected_version=1) is True

        # THEN the card is updated where it was
        timeline = memory.get_messages()
        assert ids(timeline) == ["turn-1:m:00000", "turn-1:m:00001", "turn-1:input:call-1", "turn-1:m:00002"]
        stored = timeline[2]
        assert isinstance(stored, FormMessage)
        assert (stored.version, stored.sort_key) == (2, card.sort_key)

    def test_concurrent_card_updates_at_one_version_let_exactly_one_win(self, memory_kit: ChatMemoryKit) -> None:
        require(memory_kit, "atomic_conditional_writes")
        # GIVEN a pending card
        memory = memory_kit.memory(new_conversation_id())
        card = form(1)
        memory.append(card)

        # WHEN 8 submitters update it from version 1 at the same moment, each with its own values
        def submit(index: int) -> bool:
            update = submitted(card).model_copy(update={"submitted_by": f"user-{index}"})
            return memory.update_message(update, expected_version=1)

        outcomes = race(THREADS, submit)

        # THEN exactly one wins, and the stored card is the winner's
        assert outcomes.count(True) == 1
        stored = memory.get_message(card.message_id)
        assert isinstance(stored, FormMessage)
        assert stored.submitted_by == f"user-{outcomes.index(True)}"
        assert stored.version == 2

    def test_an_approval_card_round_trips_and_updates(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN an approval card
        memory = memory_kit.memory(new_conversation_id())
        card = ApprovalMessage(
            message_id="turn-1:approval:call-9",
            turn_id="turn-1",
            sort_key="2026#turn-1#00001.00",
            action_id="call-9",
            tool_name="issue_refund",
        )
        memory.append(card)

        # WHEN it is approved (compare-and-set)
        approved = card.model_copy(
            update={"status": ApprovalStatus.APPROVED, "actions": [], "decided_by": "boss", "version": 2}
        )
        assert memory.update_message(approved, expected_version=1)

        # THEN the stored card is the approved one, and a form-typed update of the same id is refused
        assert memory.get_message(card.message_id) == approved
        assert memory.get_messages() == [approved]
        as_form = form(1).model_copy(update={"message_id": card.message_id, "sort_key": card.sort_key, "version": 3})
        assert memory.update_message(as_form, expected_version=2) is False
        assert memory.get_message(card.message_id) == approved

    # ---------------------------------------------------------------------------------------- active turn

    def test_set_active_turn_is_a_compare_and_set(self, memory_kit: ChatMemoryKit) -> None:
        # GIVEN a conversation without an active turn
        memory = memory_kit.memory(new_conversation_id())
        assert memory.get_active_turn() is None

        # WHEN turns take and hand over the conversation
        # THEN each step succeeds only from the state it expects
        assert memory.set_active_turn("t1", expected=None) is True
        assert memory.set_active_turn("t2", expected=None) is False
        assert memory.get_active_turn() == "t1"
        assert memory.set_active_turn(None, expected="t2") is False
        assert memory.set_active_turn(None, expected="t1") is True
        assert memory.get_active_turn() is None
        assert memory.set_active_turn("t2", expected=None) is True
        assert memory.set_active_turn("t3", expected="t2") is True
        assert memory.get_active_turn() == "t3"

    def test_taking_the_conversation_again_for_the_turn_that_holds_it_is_idempotent(
        self, memory_kit: ChatMemoryKit
    ) -> None:
        # GIVEN a conversation that turn t1 has taken
        memory = memory_kit.memory(new_conversation_id())
        assert memory.set_active_turn("t1", expected=None) is True

        # WHEN the same take is repeated (a retry of a write whose answer was lost), and another turn tries
        # THEN the repeat succeeds without changing anything, and the other turn is still refused
        assert memory.set_active_turn("t1", expected=None) is True
        assert memory.set_active_turn("t1", expected="t0") is True
        assert memory.set_active_turn("t2", expected=None) is False
        assert memory.get_active_turn() == "t1"

    def test_concurrent_set_active_turn_lets_exactly_one_turn_take_the_conversation(
        self, memory_kit: ChatMemoryKit
    ) -> None:
        require(memory_kit, "atomic_conditional_writes")
        # GIVEN a free conversation
        memory = memory_kit.memory(new_conversation_id())

        # WHEN 8 new turns try to take it at the same moment
        outcomes = race(THREADS, lambda i: memory.set_active_turn(f"turn-{i}", expected=None))

        # THEN exactly one does, and the conversation points at it
        assert outcomes.count(True) == 1
        assert memory.get_active_turn() == f"turn-{outcomes.index(True)}"

    # ---------------------------------------------------------------------------------- conversations list

    def test_conversations_are_listed_newest_activity_first_with_the_first_title(
        self, memory_kit: ChatMemoryKit
    ) -> None:
        directory = directory_of(memory_kit)
        owner, other = _owner(), _owner()
        # GIVEN three conversations of one owner, each taken by a turn at a different time, and one of another
        names = [f"{owner}/c{i}" for i in range(3)]
        for i, name in enumerate(names):
            listing = ConversationListing(owner=owner, title=f"title {i}", at=f"2026-12-01T10:0{i}:00.000000Z")
            assert memory_kit.memory(name).set_active_turn(f"t{i}", expected=None, listing=listing)
        assert memory_kit.memory(f"{other}/x").set_active_turn(
            "tx", expected=None, listing=ConversationListing(owner=other, title="theirs", at="2026-12-01T11:00:00Z")
        )
        # WHEN the oldest one gets a new turn (after letting go of the first), whose input would be another title
        first = memory_kit.memory(names[0])
        assert first.set_active_turn(None, expected="t0")
        later = ConversationListing(owner=owner, title="ignored", at="2026-12-01T10:09:00.000000Z")
        assert first.set_active_turn("t0b", expected=None, listing=later)

        # THEN the owner's list is newest first, keeps the first title, and holds nothing of the other owner
        page = directory.list_conversations(owner, 10)
        assert [(c.conversation_id, c.title) for c in page.conversations] == [
            (names[0], "title 0"),
            (names[2], "title 2"),
            (names[1], "title 1"),
        ]
        assert page.conversations[0].last_activity_at == "2026-12-01T10:09:00.000000Z"
        assert page.cursor is None or directory.list_conversations(owner, 10, page.cursor).conversations == []

    def test_conversations_page_through_with_a_cursor_and_refuse_a_foreign_one(self, memory_kit: ChatMemoryKit) -> None:
        directory = directory_of(memory_kit)
        owner = _owner()
        # GIVEN five listed conversations
        for i in range(5):
            listing = ConversationListing(owner=owner, title=f"t{i}", at=f"2026-12-01T10:00:0{i}Z")
            assert memory_kit.memory(f"{owner}/c{i}").set_active_turn(f"turn-{i}", expected=None, listing=listing)

        # WHEN they are read two at a time
        seen: list[str] = []
        cursor: str | None = None
        for _ in range(5):
            page = directory.list_conversations(owner, 2, cursor)
            seen += [c.conversation_id for c in page.conversations]
            cursor = page.cursor
            if cursor is None:
                break

        # THEN every conversation comes once, newest first; another owner's cursor or a made-up one is refused
        assert seen == [f"{owner}/c{i}" for i in (4, 3, 2, 1, 0)]
        first_page = directory.list_conversations(owner, 2)
        assert first_page.cursor is not None
        with pytest.raises(InvalidCursorError):
            directory.list_conversations(_owner(), 2, first_page.cursor)
        with pytest.raises(InvalidCursorError):
            directory.list_conversations(owner, 2, "not-a-cursor")

    @pytest.mark.parametrize(
        "position",
        [
            {"a": "", "c": "x"},
            {"a": "2026-12-01T10:00:00Z", "c": ""},
            {"a": "2026-12-01T10:00:00Z" + "9" * 1100, "c": "x"},
            {"a": "2026-12-01T10:00:00Z", "c": "x" * 2100},
            {"a": "\ud800", "c": "x"},
            {"a": "2026-12-01T10:00:00Z", "c": "\udfff"},
            {"a": 1, "c": "x"},
            {"a": "2026-12-01T10:00:00Z", "c": None},
        ],
        ids=["empty-at", "empty-id", "long-at", "long-id", "surrogate-at", "surrogate-id", "number", "null"],
    )
    def test_a_forged_cursor_of_the_owner_is_refused_as_a_cursor(
        self, memory_kit: ChatMemoryKit, position: dict[str, object]
    ) -> None:
        directory = directory_of(memory_kit)
        owner = _owner()
        # GIVEN a listed conversation, and a cursor made up by a client: well-formed, the owner's, but naming a
        # position no listing hands out (a store would refuse it as a key)
        listing = ConversationListing(owner=owner, title="t", at="2026-12-01T10:00:00Z")
        assert memory_kit.memory(f"{owner}/c").set_active_turn("turn", expected=None, listing=listing)
        raw = json.dumps({"o": owner, **position}).encode()
        forged = base64.urlsafe_b64encode(raw).decode().rstrip("=")

        # WHEN it is used THEN it is refused as a cursor (the API's 422), never a storage failure
        with pytest.raises(InvalidCursorError):
            directory.list_conversations(owner, 2, forged)

    def test_a_take_without_a_listing_or_a_refused_take_lists_nothing(self, memory_kit: ChatMemoryKit) -> None:
        directory = directory_of(memory_kit)
        owner = _owner()
        memory = memory_kit.memory(f"{owner}/c")
        # GIVEN a conversation taken without a listing (a turn without an owner)
        assert memory.set_active_turn("t1", expected=None)
        # WHEN another turn's take, with a listing, is refused
        listing = ConversationListing(owner=owner, title="refused", at="2026-12-01T10:00:00Z")
        assert memory.set_active_turn("t2", expected=None, listing=listing) is False
        # THEN nothing is listed
        assert directory.list_conversations(owner, 10).conversations == []
