"""The conversation's history is read by a turn's start; a later run of a turn that found it empty reads it only
as a receipt that the timeline holds the turn's own messages, and not at all once that is known."""

from __future__ import annotations

from typing import Any

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    FormDefinition,
    ResumeCommand,
    Runner,
    ScriptedChatModel,
    ToolCall,
    ToolMessage,
    TurnStatus,
    UserInputTool,
)
from agentturn.ports.memory import ChatMemory, InMemoryChatMemory
from agentturn.ports.serializer import JSON
from agentturn.ports.store import InMemoryTurnStore
from agentturn.timeline.projection import project

FORM = FormDefinition("ticket", "ticket details", {"type": "object", "properties": {"title": {"type": "string"}}})


class CountingMemory:
    """A chat memory provider that counts the history reads of every conversation."""

    def __init__(self) -> None:
        self._memory = InMemoryChatMemory()
        self.history_reads = 0
        #: the message ids of every batch appended, in order
        self.batches: list[list[str]] = []

    def __call__(self, conversation_id: str) -> ChatMemory:
        memory = self._memory(conversation_id)
        outer = self

        class Counted:
            def get_model_messages(self, limit: int | None = None) -> Any:
                outer.history_reads += 1
                return memory.get_model_messages(limit)

            def append_all(self, messages: Any) -> None:
                outer.batches.append([m.message_id for m in messages])
                memory.append_all(messages)

            def __getattr__(self, name: str) -> Any:
                return getattr(memory, name)

        return Counted()  # type: ignore[return-value]


def asks_for_the_form_then_answers(request: ChatRequest) -> AiMessage:
    if isinstance(request.messages[-1], ToolMessage):
        return AiMessage(content=f"done after {len(request.messages)} messages")
    return AiMessage(tool_calls=[ToolCall(id="c1", name="request_user_input", arguments={"formKey": "ticket"})])


def agent(model: ScriptedChatModel) -> Agent:
    return Agent("desk", "help", model, tools=[UserInputTool([FORM])])


def test_a_turn_that_found_its_conversation_empty_reads_it_when_resumed_only_as_a_receipt() -> None:
    # GIVEN a start in a new conversation that stops for a form, and a worker (another runner) to resume it
    store, memory = InMemoryTurnStore(), CountingMemory()
    model = ScriptedChatModel(asks_for_the_form_then_answers)
    waiting = Runner(store, memory, [agent(model)]).run(agent(model), "c1", "hello")
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    assert memory.history_reads == 1 and waiting.history_empty
    worker = Runner(store, memory, [agent(model)])

    # WHEN the form is answered and the worker runs the turn on
    worker.submit_resume(waiting.id, ResumeCommand.submit_form("c1", {"title": "x"}))
    written_before = len(memory.batches)
    done = worker.run_turn(waiting.id)

    # THEN the worker read the conversation once, and its model call got the turn's own messages only
    assert done.status is TurnStatus.COMPLETED
    assert memory.history_reads == 2
    assert [m.turn_id for m in model.requests[-1].messages] == [done.id] * 3
    # ... and that read was its receipt: one batch, the answered card with the new messages, not the input again
    card_id = done.cards[0].message_id
    assert memory.batches[written_before:] == [[card_id, *(m.message_id for m in done.messages[2:])]]


def test_a_turn_that_found_its_conversation_empty_reads_nothing_once_its_timeline_is_known_whole() -> None:
    # GIVEN the same answered turn, whose saved version was projected by whoever hands it on (the receipt)
    store, memory = InMemoryTurnStore(), CountingMemory()
    model = ScriptedChatModel(asks_for_the_form_then_answers)
    waiting = Runner(store, memory, [agent(model)]).run(agent(model), "c1", "hello")
    worker = Runner(store, memory, [agent(model)])
    answered = worker.submit_resume(waiting.id, ResumeCommand.submit_form("c1", {"title": "x"}))
    project(answered, memory("c1"))

    # WHEN the worker runs it with that receipt
    done = worker.run_turn(waiting.id, projected_version=answered.version)

    # THEN it read nothing: the history is known empty and the timeline known to hold the turn
    assert done.status is TurnStatus.COMPLETED
    assert memory.history_reads == 1


def test_a_turn_after_earlier_ones_reads_the_history_in_each_run() -> None:
    # GIVEN a conversation whose earlier turn completed, and a new turn that stops for a form
    store, memory = InMemoryTurnStore(), CountingMemory()
    model = ScriptedChatModel(asks_for_the_form_then_answers)
    runner = Runner(store, memory, [agent(model)])
    first = runner.run(agent(model), "c1", "hello")
    runner.resume(first.id, ResumeCommand.submit_form("c1", {"title": "x"}))
    waiting = runner.run(agent(model), "c1", "again")
    reads = memory.history_reads

    # WHEN another runner resumes it
    worker = Runner(store, memory, [agent(model)])
    worker.submit_resume(waiting.id, ResumeCommand.submit_form("c1", {"title": "y"}))
    done = worker.run_turn(waiting.id)

    # THEN the turn did not take itself for the first, and the worker read the history to give the model
    # the earlier turn's messages
    assert not waiting.history_empty
    assert memory.history_reads == reads + 1
    assert first.id in {m.turn_id for m in model.requests[-1].messages}
    assert done.status is TurnStatus.COMPLETED


def test_the_flag_is_stored_only_when_true() -> None:
    # GIVEN a turn with and without the flag
    store, memory = InMemoryTurnStore(), CountingMemory()
    model = ScriptedChatModel(asks_for_the_form_then_answers)
    waiting = Runner(store, memory, [agent(model)]).run(agent(model), "c1", "hello")

    # WHEN each is serialized THEN only the set flag takes bytes, and both read back as they were
    flagged = JSON.dumps(waiting)
    plain = JSON.dumps(waiting.model_copy(update={"history_empty": False}))
    assert '"historyEmpty":true' in flagged and "historyEmpty" not in plain
    assert store.load(waiting.id).history_empty
