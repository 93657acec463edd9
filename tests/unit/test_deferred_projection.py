"""Fewer timeline writes, the same timeline.

The saves of a model's tool call and of the tool's result leave their projection to the run's next save (one
batch for the call, the result and the model's answer); the timeline still converges when the run stops or dies
in between; and an answered card found in the timeline vouches for the messages before its call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from tests.unit.conftest import Parts

from agentturn import (
    Agent,
    AiMessage,
    FormDefinition,
    FormRequired,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolCall,
    ToolContext,
    TurnStatus,
    UserInputTool,
)
from agentturn.engine.driver import TurnDriver
from agentturn.engine.resume import apply_resume
from agentturn.engine.turn_run import Run
from agentturn.ports.chat_model import ChatRequest
from agentturn.ports.store import Lease
from agentturn.state.messages import FormMessage, TimelineMessage, ToolMessage


class Crash(BaseException):
    """The process dies (not an error any layer handles)."""


def driver(parts: Parts, worker: str = "w1") -> TurnDriver:
    def claim(turn_id: str) -> Lease | None:
        return parts.store.claim(turn_id, worker, parts.lease_seconds)

    steps = (parts.model_step, parts.tool_step)
    return TurnDriver(
        parts.store, parts.clock, claim, parts.agents, parts.writer, parts.leases, steps, parts.memory_for
    )


def lookup_then_answer(request: ChatRequest) -> AiMessage:
    """Calls ``lookup`` until the conversation holds its result, then answers with it."""
    results = [m for m in request.messages if isinstance(m, ToolMessage)]
    if results:
        return AiMessage(content=f"found {results[-1].content}")
    return AiMessage(tool_calls=[ToolCall(id="call-1", name="lookup", arguments={"q": "x"})])


def dies_on_the_answer(request: ChatRequest) -> AiMessage:
    """The model of a worker that dies in the model call after the tool's result."""
    if any(isinstance(m, ToolMessage) for m in request.messages):
        raise Crash
    return lookup_then_answer(request)


def agent_with_lookup(model: ScriptedChatModel, runs: list[dict[str, Any]]) -> Agent:
    def lookup(arguments: dict[str, Any]) -> str:
        runs.append(arguments)
        return "42"

    return Agent("a", "x", model, tools=[Tool("lookup", "looks up", lookup)])


def keyed_lookup_agent(model: ScriptedChatModel, effects: dict[str, int], *, idempotent: bool = True) -> Agent:
    """An agent whose ``lookup`` counts its runs per idempotency key (and says it is idempotent, by default)."""

    def lookup(arguments: dict[str, Any]) -> str:
        key = ToolContext.current().idempotency_key
        effects[key] = effects.get(key, 0) + 1
        return "42"

    return Agent("a", "x", model, tools=[Tool("lookup", "looks up", lookup, idempotent=idempotent)])


def record_batches(parts: Parts) -> list[list[str]]:
    """The timeline batches written to conversation ``c1``, each as its entries' types."""
    memory = parts.memory("c1")
    batches: list[list[str]] = []
    original: Callable[[Sequence[TimelineMessage]], None] = memory.append_all

    def append_all(messages: Sequence[TimelineMessage]) -> None:
        batches.append([m.type for m in messages])
        original(messages)

    memory.append_all = append_all  # type: ignore[method-assign]
    return batches


def timeline(parts: Parts) -> list[str]:
    return [m.type for m in parts.memory("c1").get_messages()]


def test_the_tool_result_and_the_final_answer_reach_the_timeline_in_one_batch(parts: Parts) -> None:
    # GIVEN a turn whose model calls a tool, then answers with its result
    runs: list[dict[str, Any]] = []
    run = parts.new_run(agent_with_lookup(ScriptedChatModel(lookup_then_answer), runs), leased=False)
    batches = record_batches(parts)

    # WHEN a worker runs it to its end
    done = driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)

    # THEN the tool ran once, and the timeline holds the whole turn in order
    assert done.status is TurnStatus.COMPLETED
    assert runs == [{"q": "x"}]
    assert timeline(parts) == ["ai", "tool", "ai"]
    # AND neither the save of the model's call nor the one after the tool wrote to the timeline: the call and
    # its result went with the final answer, in one batch
    assert batches == [["ai", "tool", "ai"]]


@pytest.mark.parametrize("idempotent", [False, True], ids=["tool", "idempotent_tool"])
def test_a_run_that_stops_after_a_tool_result_still_projects_it(parts: Parts, idempotent: bool) -> None:
    # GIVEN a turn whose model calls a tool, and a worker told to yield once the tool step is done (an idempotent
    # tool's result is not saved on its own: the yield saves it first)
    effects: dict[str, int] = {}
    model = ScriptedChatModel(lookup_then_answer)
    run = parts.new_run(keyed_lookup_agent(model, effects, idempotent=idempotent), leased=False)
    probes = iter([False, False, True])

    # WHEN the worker runs it
    left = driver(parts).continue_turn(
        run.turn.id, lease=None, should_yield=lambda: next(probes), turn=None, created_here=False
    )

    # THEN it stopped runnable after the tool, with the result saved (the next worker does not run the tool
    # again), and the timeline already holds it
    assert left.status.is_runnable
    assert len(model.requests) == 1
    assert list(effects.values()) == [1]
    assert timeline(parts) == ["ai", "tool"]
    assert parts.store.load(run.turn.id).messages[-1].type == "tool"


def test_a_worker_that_dies_after_a_tool_result_leaves_it_to_the_next_one(parts: Parts) -> None:
    # GIVEN a turn whose tool ran and was saved, and a worker that dies in the next model call
    runs: list[dict[str, Any]] = []

    run = parts.new_run(agent_with_lookup(ScriptedChatModel(dies_on_the_answer), runs), leased=False)
    with pytest.raises(Crash):
        driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)
    assert timeline(parts) == []
    assert [m.type for m in parts.store.load(run.turn.id).messages] == ["ai", "tool"]

    # WHEN its lease expires and another worker (with a healthy model) continues the turn
    parts.clock.advance(parts.lease_seconds + 1)
    parts.agents.register(agent_with_lookup(ScriptedChatModel(lookup_then_answer), runs))
    done = driver(parts, "w2").continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)

    # THEN the tool did not run again, and the timeline holds the whole turn in order
    assert done.status is TurnStatus.COMPLETED
    assert runs == [{"q": "x"}]
    assert timeline(parts) == ["ai", "tool", "ai"]


TICKET = FormDefinition("ticket", "ticket details", {"type": "object", "properties": {"title": {"type": "string"}}})


def blocked_on_a_tool_form(parts: Parts, runs: list[dict[str, Any]]) -> str:
    """A turn whose tool asked for the ticket form, suspended by a worker (that projected it): its id."""

    def create(arguments: dict[str, Any]) -> str:
        data = ToolContext.current().submitted_form_data
        if not data:
            raise FormRequired(TICKET)
        runs.append(data)
        return "T-1"

    def model(request: ChatRequest) -> AiMessage:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return AiMessage(content="created")
        return AiMessage(tool_calls=[ToolCall(id="call-1", name="create", arguments={})])

    agent = Agent("a", "x", ScriptedChatModel(model), tools=[Tool("create", "creates a ticket", create)])
    run = parts.new_run(agent, leased=False)
    waiting = driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    return waiting.id


def submit(parts: Parts, turn_id: str) -> None:
    """What the submit route does: the stored turn, the answer applied, one save (and its projection)."""
    stored = parts.store.load(turn_id)
    resumed = apply_resume(stored, ResumeCommand.submit_form("call-1", {"title": "login"}), parts.clock())
    parts.writer.save(Run(turn=resumed, agent=None, lease=None))


def test_a_saved_record_of_the_projection_spares_an_answer_writing_the_turns_messages_again(parts: Parts) -> None:
    # GIVEN a turn whose model asked for a form (the reply and the wait in one save, projected after it): the
    # stored snapshot records what that projection wrote
    ask = AiMessage(tool_calls=[ToolCall(id="call-1", name="request_user_input", arguments={"formKey": "ticket"})])
    agent = Agent("a", "x", ScriptedChatModel([ask]), tools=[UserInputTool(forms=[TICKET])])
    run = parts.new_run(agent, leased=False)
    waiting = driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    stored = parts.store.load(waiting.id)
    assert stored.projection.messages == len(stored.messages)
    batches = record_batches(parts)

    # WHEN the person submits the form
    submit(parts, waiting.id)

    # THEN the card was brought to SUBMITTED in place, and only the new tool result was written: not the
    # model's reply again
    assert batches == [["tool"]]
    entries = parts.memory("c1").get_messages()
    assert [m.type for m in entries] == ["ai", "agent_form", "tool"]
    assert isinstance(entries[1], FormMessage) and entries[1].status == "SUBMITTED"


def test_a_card_missing_from_the_timeline_is_written_when_the_guess_fails(parts: Parts) -> None:
    # GIVEN a turn blocked on a tool's form whose run died writing the card (after the save that suspended it)
    runs: list[dict[str, Any]] = []
    memory = parts.memory("c1")
    original = memory.append

    def dies_on_the_card(message: TimelineMessage) -> bool:
        if isinstance(message, FormMessage):
            raise Crash
        return original(message)

    memory.append = dies_on_the_card  # type: ignore[method-assign]
    with pytest.raises(Crash):
        blocked_on_a_tool_form(parts, runs)
    memory.append = original  # type: ignore[method-assign]
    turn_id = parts.created[-1]
    assert parts.store.load(turn_id).status is TurnStatus.WAITING_FOR_USER
    assert [m.type for m in memory.get_messages()] == ["ai"]

    # WHEN the person submits the form, and a worker runs the turn to its end
    submit(parts, turn_id)
    done = driver(parts).continue_turn(turn_id, lease=None, should_yield=None, turn=None, created_here=False)

    # THEN the card is in the timeline, SUBMITTED, the tool ran once, and the timeline is whole and in order
    assert done.status is TurnStatus.COMPLETED
    assert runs == [{"title": "login"}]
    entries = memory.get_messages()
    assert [m.type for m in entries] == ["ai", "agent_form", "tool", "ai"]
    assert isinstance(entries[1], FormMessage) and entries[1].status == "SUBMITTED"


def test_an_idempotent_tools_result_rides_on_the_next_save(parts: Parts) -> None:
    # GIVEN a turn whose model calls an idempotent tool, then answers
    effects: dict[str, int] = {}
    run = parts.new_run(keyed_lookup_agent(ScriptedChatModel(lookup_then_answer), effects), leased=False)
    before = parts.store.load(run.turn.id).version

    # WHEN a worker runs it
    done = driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)

    # THEN it ran once, and the turn was written twice: the call before the key was handed out, then the result
    # with the answer (a tool that is not idempotent costs a write more: the result on its own)
    assert done.status is TurnStatus.COMPLETED
    assert list(effects.values()) == [1]
    assert done.version == before + 2
    assert timeline(parts) == ["ai", "tool", "ai"]


def test_a_worker_that_dies_after_an_idempotent_tool_runs_it_again_with_the_same_key(parts: Parts) -> None:
    # GIVEN an idempotent tool that ran, and a worker that dies in the next model call (the result unsaved)
    effects: dict[str, int] = {}

    run = parts.new_run(keyed_lookup_agent(ScriptedChatModel(dies_on_the_answer), effects), leased=False)
    with pytest.raises(Crash):
        driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)
    assert [m.type for m in parts.store.load(run.turn.id).messages] == ["ai"]

    # WHEN its lease expires and another worker continues the turn
    parts.clock.advance(parts.lease_seconds + 1)
    parts.agents.register(keyed_lookup_agent(ScriptedChatModel(lookup_then_answer), effects))
    done = driver(parts, "w2").continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)

    # THEN the saved call ran again under its one key, and the turn completed whole
    assert done.status is TurnStatus.COMPLETED
    assert effects == {f"{run.turn.id}:call-1": 2}
    assert timeline(parts) == ["ai", "tool", "ai"]
