"""Tool-call ids are unique in a turn whatever ids the model sends (pure core: no store involved)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    InMemoryChatMemory,
    InMemoryTurnStore,
    Runner,
    ScriptedChatModel,
    Tool,
    ToolCall,
    ToolMessage,
    Turn,
    TurnStatus,
)
from agentturn.engine.runner import _unique_call_ids

# What a hostile or sloppy model may send: ids equal to the ones the runner generates, repeats, blanks,
# ids that cannot travel in a URL path, and very long ones.
ADVERSARIAL = st.sampled_from(
    ["call-1-1", "call-1-2", "call-1-2-2", "call-2-1", "a", "", " ", "x/y", "..", "%2F", "é", "k" * 300, "dup"]
)
SAFE_OR_GENERATED = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def reply(ids: list[str]) -> AiMessage:
    return AiMessage(tool_calls=[ToolCall(id=i, name="t", arguments={"n": n}) for n, i in enumerate(ids)])


def turn_with_history(previous: list[str]) -> Turn:
    turn = Turn(id="t1", conversation_id="c", agent_id="a", agent_version="1")
    if previous:
        turn.messages.append(reply(previous))
        turn.iteration_count = 1
    return turn


@settings(max_examples=300, deadline=None)
@given(previous=st.lists(ADVERSARIAL, max_size=4, unique=True), ids=st.lists(ADVERSARIAL, max_size=8))
def test_every_call_gets_an_id_no_other_call_of_the_turn_has(previous: list[str], ids: list[str]) -> None:
    # GIVEN a turn that already made calls, and a reply whose ids collide in every way we can think of
    turn = turn_with_history(previous)
    earlier = {c.id for m in turn.messages if isinstance(m, AiMessage) for c in m.tool_calls}

    # WHEN the runner makes its ids unique
    fixed = _unique_call_ids(turn, reply(ids))
    new = [c.id for c in fixed.tool_calls]

    # THEN every call is still there, in order, each with an id unique in the reply and new to the turn
    assert [c.arguments["n"] for c in fixed.tool_calls] == list(range(len(ids)))
    assert len(set(new)) == len(new)
    assert not set(new) & earlier
    # ... that a URL path and every provider carry as it is
    assert all(SAFE_OR_GENERATED.match(i) for i in new)
    # ... and a well-formed id the model gave first is kept as it was
    for position, original in enumerate(ids):
        if SAFE_OR_GENERATED.match(original) and original not in earlier and ids.index(original) == position:
            assert new[position] == original


def test_an_id_like_the_one_a_blank_call_would_get_does_not_swallow_that_call() -> None:
    # GIVEN a reply whose first call is named what the second (blank) one would be renamed to
    fixed = _unique_call_ids(turn_with_history([]), reply(["call-1-2", ""]))

    # THEN both keep distinct ids, the model's own kept
    assert [c.id for c in fixed.tool_calls] == ["call-1-2", "call-1-2-2"]


def test_each_call_of_an_adversarial_reply_runs_exactly_once() -> None:
    # GIVEN a model whose one reply repeats ids and names calls like the ids the runner would generate
    ran: Counter[int] = Counter()

    def tool(arguments: dict[str, Any]) -> str:
        ran[int(arguments["n"])] += 1
        return "ok"

    def model(request: ChatRequest) -> AiMessage:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return AiMessage(content="done")
        return reply(["call-1-2", "", "call-1-2", "call-1-3", "x/y", "call-1-3"])

    agent = Agent(id="a", instructions="", chat_model=ScriptedChatModel(model), tools=[Tool("t", "", tool)])
    runner = Runner(store=InMemoryTurnStore(), chat_memory=InMemoryChatMemory(), agents=[agent])

    # WHEN the turn runs
    done = runner.run(agent, "c", "go")

    # THEN every one of the six calls ran once, and each has its own result
    assert done.status is TurnStatus.COMPLETED
    assert ran == Counter(range(6))
    results = [m.tool_call_id for m in done.messages if isinstance(m, ToolMessage)]
    assert len(results) == len(set(results)) == 6
