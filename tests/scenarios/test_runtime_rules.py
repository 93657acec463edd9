"""Limits, events, the timeline projection, conversations and leases."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, cast

import pytest

from agentturn import (
    Agent,
    AiMessage,
    ApprovalMessage,
    ChatMemory,
    ChatRequest,
    ConversationBusyError,
    EventType,
    ExecutionPolicy,
    FormMessage,
    FormStatus,
    ResumeCommand,
    Runner,
    ScriptedChatModel,
    Tool,
    ToolContext,
    ToolMessage,
    Turn,
    TurnStatus,
    UserInputTool,
    UserMessage,
    Worker,
    WorkOutcome,
)
from agentturn.ports.store import Lease
from agentturn.state.messages import TimelineMessage
from agentturn.testing import DelegatingTurnStore
from agentturn.timeline.repair import reconcile
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import (
    SUPPORT_DATA,
    ai_calls,
    final_from_last_tool,
    form_asking_agent,
    reply_after_tools,
    support_form,
)


def looping_agent(policy: ExecutionPolicy) -> Agent:
    """A model that calls a tool forever."""

    def model(request: ChatRequest) -> AiMessage:
        number = sum(1 for m in request.messages if isinstance(m, AiMessage))
        return ai_calls((f"c{number}", "noop", {}))

    return Agent(
        id="loop",
        instructions="",
        chat_model=ScriptedChatModel(model),
        tools=[Tool("noop", "", lambda a: "ok")],
        policy=policy,
    )


@pytest.mark.parametrize(
    ("policy", "status", "iterations"),
    [
        (ExecutionPolicy(max_iterations=3), TurnStatus.MAX_ITERATIONS_REACHED, 3),
        (ExecutionPolicy(max_steps=5), TurnStatus.MAX_STEPS_REACHED, 3),
        (ExecutionPolicy(max_tool_calls=2), TurnStatus.BUDGET_EXCEEDED, 3),
    ],
    ids=["max_iterations", "max_steps", "max_tool_calls"],
)
def test_each_limit_ends_the_turn_with_its_own_status(
    backend: Backend, policy: ExecutionPolicy, status: TurnStatus, iterations: int
) -> None:
    # GIVEN a model that never stops calling tools, under one limit
    agent = looping_agent(policy)
    # WHEN it runs
    done = backend.runner([agent]).run(agent, "conv", "go")
    # THEN the limit stops it with its status, and the counts show where
    assert done.status is status
    assert done.status.is_terminal
    assert done.iteration_count == iterations
    assert done.error is not None
    assert done.step_count <= policy.max_steps


def test_a_listener_that_raises_breaks_neither_the_turn_nor_other_listeners(backend: Backend) -> None:
    # GIVEN a listener that always raises, before one that records
    recorded: list[EventType] = []

    def broken(event: object) -> None:
        raise RuntimeError("listener bug")

    agent = Agent(id="a", instructions="", chat_model=ScriptedChatModel([AiMessage(content="hi")]))
    runner = backend.runner([agent], listeners=[broken, lambda e: recorded.append(e.type)])
    # WHEN a turn runs
    done = runner.run(agent, "conv", "hello")
    # THEN the turn completed and the other listener saw every event, the terminal one last
    assert done.status is TurnStatus.COMPLETED
    assert recorded[-1] is EventType.TURN_COMPLETED
    assert EventType.STEP_COMPLETED in recorded
    assert recorded.index(EventType.STEP_COMPLETED) < recorded.index(EventType.TURN_COMPLETED)


def test_event_data_is_frozen(backend: Backend) -> None:
    agent = Agent(id="a", instructions="", chat_model=ScriptedChatModel([AiMessage(content="hi")]))
    backend.runner([agent]).run(agent, "conv", "hello")
    event = backend.events[0]
    with pytest.raises(TypeError):
        event.data["x"] = 1  # type: ignore[index]


class FlakyMemory:
    """A ChatMemory whose batch appends and card writes fail while ``failing`` is set (a throttled table)."""

    def __init__(self, inner: ChatMemory) -> None:
        self.inner = inner
        self.conversation_id = inner.conversation_id
        self.failing = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def append_all(self, messages: Any) -> None:
        if self.failing:
            raise ConnectionError("throttled")
        self.inner.append_all(messages)

    def append(self, message: TimelineMessage) -> bool:
        if self.failing:
            raise ConnectionError("throttled")
        return self.inner.append(message)


class FlakyTimeline:
    """A ChatMemory provider over the backend's timeline: one wrapper (a FlakyMemory) per conversation."""

    def __init__(self, backend: Backend, wrapper: type[FlakyMemory] = FlakyMemory) -> None:
        self.backend, self.wrapper = backend, wrapper
        self.memories: dict[str, FlakyMemory] = {}

    def __call__(self, conversation_id: str) -> ChatMemory:
        return self[conversation_id]  # type: ignore[return-value]

    def __getitem__(self, conversation_id: str) -> FlakyMemory:
        if conversation_id not in self.memories:
            self.memories[conversation_id] = self.wrapper(self.backend.memory(conversation_id))
        return self.memories[conversation_id]


def test_a_failed_projection_is_repaired_on_the_next_save(backend: Backend) -> None:
    # GIVEN a timeline that fails while the turn suspends
    flaky = FlakyTimeline(backend)

    agent = form_asking_agent()
    runner = backend.runner([agent])
    runner.chat_memory = flaky
    flaky["conv"].failing = True
    waiting = runner.run(agent, "conv", "ticket")

    # THEN the snapshot is safe (the turn waits) even though the timeline has nothing of it
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    assert backend.memory("conv").get_messages() == []
    assert EventType.PROJECTION_FAILED in [e.type for e in backend.events]

    # WHEN the timeline recovers, the person answers (whose save writes what the failed projection did not)
    # and the turn runs on
    flaky["conv"].failing = False
    runner.submit_resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    assert [m.type for m in backend.memory("conv").get_messages()] == ["user", "ai", "agent_form", "tool"]
    done = runner.run_turn(waiting.id)

    # THEN every message and the card are there, the card at its latest state
    timeline = backend.memory("conv").get_messages()
    assert [m.type for m in timeline] == ["user", "ai", "agent_form", "tool", "ai"]
    card = timeline[2]
    assert isinstance(card, FormMessage) and card.status is FormStatus.SUBMITTED and card.version == 2
    assert [m.message_id for m in backend.memory("conv").get_model_messages()] == [m.message_id for m in done.messages]
    # ... and projecting the stored snapshot again changes nothing
    reconcile(runner.restore(done.id), backend.memory("conv"))
    assert backend.memory("conv").get_messages() == timeline


def test_the_timeline_converges_to_the_snapshot_with_cards_in_place(backend: Backend) -> None:
    # GIVEN a completed form cycle
    agent = form_asking_agent()
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    done = runner.resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))

    # THEN the model-visible timeline is exactly the snapshot's messages, and the card sits after its AI message
    memory = backend.memory("conv")
    assert [m.message_id for m in memory.get_model_messages()] == [m.message_id for m in done.messages]
    assert [m.type for m in memory.get_messages()] == ["user", "ai", "agent_form", "tool", "ai"]
    assert [m.type for m in memory.get_messages(limit=2)] == ["tool", "ai"]
    assert all(not isinstance(m, FormMessage | ApprovalMessage) for m in memory.get_model_messages())


def test_one_active_turn_per_conversation(backend: Backend) -> None:
    # GIVEN a conversation whose turn waits for a form
    agent = form_asking_agent()
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")

    # WHEN another turn is started in the same conversation
    with pytest.raises(ConversationBusyError) as busy:
        runner.run(agent, "conv", "and another one")
    # THEN it is refused, naming the active turn, and no turn was created for it
    assert busy.value.active_turn_id == waiting.id
    assert [m.turn_id for m in backend.memory("conv").get_messages()] == [waiting.id] * 3

    # WHEN the first turn finishes, a new one may start; another conversation was never blocked
    runner.resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    assert runner.run(agent, "other-conv", "ticket").status is TurnStatus.WAITING_FOR_USER
    assert runner.run(agent, "conv", "next").status is TurnStatus.WAITING_FOR_USER


class _CountingMemory:
    """A chat memory provider that counts the calls of each ChatMemory method, by name."""

    def __init__(self, inner: Callable[[str], ChatMemory]) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __call__(self, conversation_id: str) -> ChatMemory:
        memory = self.inner(conversation_id)
        calls = self.calls

        class Counted:
            def __getattr__(self, name: str) -> Any:
                calls[name] += 1
                return getattr(memory, name)

        return cast("ChatMemory", Counted())


class _CountingLoads(DelegatingTurnStore):
    """A store that records the id of every turn it was asked to load."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.loaded: list[str] = []

    def load(self, turn_id: str) -> Turn:
        self.loaded.append(turn_id)
        return self.inner.load(turn_id)


class _RecordingSaves(DelegatingTurnStore):
    """A store that keeps a copy of every turn it was asked to create or save."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.written: list[Turn] = []

    def create(self, turn: Turn, *, lease: Lease | None = None) -> Turn:
        self.written.append(turn.deep_copy())
        return self.inner.create(turn, lease=lease)

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        self.written.append(turn.deep_copy())
        return self.inner.save(turn, expected_version=expected_version, lease_id=lease_id)


def test_a_completed_turn_lets_go_of_its_conversation_and_the_next_start_takes_it_in_one_write(
    backend: Backend,
) -> None:
    # GIVEN a completed form cycle: its turn let go of the conversation, and its answer is in the timeline
    agent = form_asking_agent()
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    done = runner.resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    assert done.status is TurnStatus.COMPLETED
    assert backend.memory("conv").get_active_turn() is None
    assert backend.memory("conv").get_messages()[-1].message_id == done.messages[-1].message_id

    # WHEN the next turn starts
    memory, store = _CountingMemory(backend.memory), _CountingLoads(backend.store)
    nxt = Runner(store=store, chat_memory=memory, agents=[agent], clock=backend.clock).run(agent, "conv", "next")

    # THEN it took the conversation with one conditional write, without reading the completed turn or the
    # conversation's head, and with one read of the timeline (which its model's call used)
    assert nxt.status is TurnStatus.WAITING_FOR_USER
    assert backend.memory("conv").get_active_turn() == nxt.id
    assert memory.calls["set_active_turn"] == 1
    assert memory.calls["get_active_turn"] == 0
    assert memory.calls["get_model_messages"] == 1
    assert done.id not in store.loaded


def test_the_model_context_is_read_from_the_timeline_model_visible_only(backend: Backend) -> None:
    # GIVEN a conversation with an earlier completed turn that had a form
    def model(request: ChatRequest) -> AiMessage:
        last = request.messages[-1]
        if isinstance(last, UserMessage) and last.content == "ticket":
            return ai_calls(("call-1", "request_user_input", {"formKey": "support_ticket_details"}))
        if isinstance(last, ToolMessage):
            return AiMessage(content="ticket noted")
        return AiMessage(content=f"I remember {len(request.messages)} messages")

    scripted = ScriptedChatModel(model)
    agent = Agent(id="a", instructions="", chat_model=scripted, tools=[UserInputTool(forms=[support_form()])])
    runner = backend.runner([agent])
    first = runner.run(agent, "conv", "ticket")
    runner.resume(first.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))

    # WHEN the next turn starts
    second = runner.run(agent, "conv", "what did I ask?")

    # THEN the model saw the earlier turn's user, AI and tool messages and the new input, never a card
    request = scripted.requests[-1]
    assert [m.type for m in request.messages] == ["user", "ai", "tool", "ai", "user"]
    assert second.final_output == "I remember 5 messages"


def test_a_run_reads_the_conversation_history_once_for_all_its_model_calls(backend: Backend) -> None:
    # GIVEN a conversation with an earlier completed turn, and a model that calls a tool, then answers
    def model(request: ChatRequest) -> AiMessage:
        if isinstance(request.messages[-1], ToolMessage):
            return AiMessage(content=f"answered with {len(request.messages)} messages in view")
        return ai_calls((f"c{len(request.messages)}", "noop", {}))

    scripted = ScriptedChatModel(model)
    agent = Agent(id="a", instructions="", chat_model=scripted, tools=[Tool("noop", "", lambda a: "ok")])
    backend.runner([agent]).run(agent, "conv", "first")
    counting = _CountingMemory(backend.memory)
    runner = Runner(store=backend.store, chat_memory=counting, agents=[agent], clock=backend.clock)

    # WHEN the next turn runs both its model calls in one run
    second = runner.run(agent, "conv", "again")

    # THEN the history was read once, and both calls saw the earlier turn's four messages before this turn's
    assert second.status is TurnStatus.COMPLETED
    assert counting.calls["get_model_messages"] == 1
    earlier = [m.message_id for m in backend.memory("conv").get_model_messages()][:4]
    requests = [r for r in scripted.requests if any(m.content == "again" for m in r.messages)]
    assert len(requests) == 2
    assert all([m.message_id for m in r.messages[:4]] == earlier for r in requests)
    assert second.final_output == "answered with 7 messages in view"


def test_a_context_window_never_opens_on_a_tool_result(backend: Backend) -> None:
    # GIVEN an earlier turn of user, ai(call), tool, ai and a window of 2 earlier messages
    def model(request: ChatRequest) -> AiMessage:
        if isinstance(request.messages[-1], ToolMessage):
            return AiMessage(content="ok")
        if len(request.messages) == 1:
            return ai_calls(("c1", "noop", {}))
        return AiMessage(content="second")

    scripted = ScriptedChatModel(model)
    agent = Agent(
        id="a",
        instructions="",
        chat_model=scripted,
        tools=[Tool("noop", "", lambda a: "ok")],
        policy=ExecutionPolicy(context_window=2),
    )
    runner = backend.runner([agent])
    runner.run(agent, "conv", "first")
    # WHEN the next turn runs
    runner.run(agent, "conv", "again")
    # THEN the window ([tool, ai] of the earlier turn) was dropped rather than opened on a tool result
    second_turn_first_request = next(
        r for r in scripted.requests if isinstance(r.messages[-1], UserMessage) and r.messages[-1].content == "again"
    )
    assert [m.type for m in second_turn_first_request.messages] == ["user"]


def test_a_synchronous_run_holds_a_lease_no_worker_can_take(backend: Backend) -> None:
    # GIVEN a tool that, mid-run, lets a worker try to claim its own turn
    claims: list[object] = []
    holder: dict[str, Any] = {}

    def tool(arguments: dict[str, Any]) -> str:
        claims.append(backend.store.claim(ToolContext.current().turn_id, "intruder", 60))
        claims.append(Worker(holder["runner"]).process(ToolContext.current().turn_id).outcome)
        return "ok"

    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(ai_calls(("c1", "t", {})), final_from_last_tool)),
        tools=[Tool("t", "", tool)],
    )
    runner = backend.runner([agent])
    holder["runner"] = runner
    # WHEN the run goes on
    done = runner.run(agent, "conv", "go")
    # THEN the claim failed and the worker stood aside; the lease ended with the turn
    assert claims == [None, WorkOutcome.LEASE_HELD]
    assert done.status is TurnStatus.COMPLETED
    assert backend.store.claim(done.id, "later", 60) is None  # terminal: nothing to claim


def test_worker_outcomes_duplicate_delivery_and_yield(backend: Backend) -> None:
    # GIVEN a submitted form cycle waiting for a worker
    agent = form_asking_agent()
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "ticket")
    runner.submit_resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    worker = Worker(runner)

    # WHEN the worker must yield at once (no time left), the turn stays runnable for the next delivery
    yielded = worker.process(waiting.id, should_yield=lambda: True)
    assert yielded.outcome is WorkOutcome.ADVANCED and yielded.needs_more_work

    # WHEN the message is delivered, then delivered again
    first = worker.process(waiting.id)
    again = worker.process(waiting.id)
    # THEN the first delivery advanced the turn and the duplicate did nothing
    assert first.turn is not None and first.turn.status is TurnStatus.COMPLETED and not first.needs_more_work
    assert again.outcome is WorkOutcome.NOT_RUNNABLE
    assert backend.store.load(waiting.id).version == first.turn.version
    assert worker.process("no-such-turn").outcome is WorkOutcome.NOT_FOUND


def test_a_stale_worker_keeps_nothing_it_computed(backend: Backend) -> None:
    # GIVEN a worker whose lease expired mid-tool while another worker took the turn over
    holder: dict[str, Any] = {}
    effects: list[str] = []

    def slow(arguments: dict[str, Any]) -> str:
        if not holder.get("taken"):
            holder["taken"] = True
            backend.clock.advance(120)  # the first worker's 60 s lease has expired
            holder["other"] = Worker(holder["runner"], worker_id="w2").process(ToolContext.current().turn_id)
        effects.append(ToolContext.current().idempotency_key)
        return "ok"

    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(ai_calls(("c1", "slow", {})), final_from_last_tool)),
        tools=[Tool("slow", "", slow)],
    )
    # The first worker's process is frozen past its lease: no renewal of its heartbeat reaches the store
    # (otherwise the heartbeat, woken by the second worker's step, may renew the lapsed lease before the
    # second worker's claim, and the second worker would rightly find it held).
    runner = backend.runner([agent], store=_RenewalsNeverArrive(backend.store))
    holder["runner"] = runner
    turn = runner.start(agent, "conv", "go")

    # WHEN the first worker finishes its (now stale) step
    stale = Worker(runner, worker_id="w1").process(turn.id)

    # THEN its write was refused; the stored turn is the second worker's, completed once
    stored = backend.store.load(turn.id)
    assert holder["other"].turn.status is TurnStatus.COMPLETED
    assert stored.status is TurnStatus.COMPLETED
    assert stale.turn is not None and stale.turn.version == stored.version
    assert len([m for m in stored.messages if isinstance(m, ToolMessage)]) == 1
    # both executions used the same idempotency key, so an idempotent tool wrote once
    assert len(set(effects)) == 1


def test_an_orphaned_ready_turn_cannot_start_beside_the_active_one(backend: Backend) -> None:
    # GIVEN a conversation held by a waiting turn, and a READY turn of the same conversation that was
    # stored but never took the conversation (its process crashed between the two writes)
    agent = form_asking_agent()
    runner = backend.runner([agent])
    active = runner.run(agent, "conv", "ticket")
    orphan = backend.store.create(
        active.model_copy(
            update={"id": "orphan", "status": TurnStatus.READY, "messages": [], "cards": [], "suspension": None}
        )
    )

    # WHEN the sweeper hands the orphan to a worker
    result = Worker(runner).process(orphan.id)

    # THEN it fails clearly instead of running beside the active turn, which is untouched
    assert result.turn is not None and result.turn.status is TurnStatus.FAILED
    assert result.turn.error is not None and result.turn.error.type == "conversation_busy"
    assert backend.memory("conv").get_active_turn() == active.id
    assert backend.store.load(active.id).status is TurnStatus.WAITING_FOR_USER


def test_the_submit_writes_the_card_and_the_worker_does_not_write_it_again(backend: Backend) -> None:
    # GIVEN a waiting form cycle, and a timeline that counts card writes
    card_writes: list[str] = []

    class CountingMemory(FlakyMemory):
        def update_message(self, message: Any, expected_version: int) -> bool:
            card_writes.append(message.message_id)
            return self.inner.update_message(message, expected_version)

    provider = FlakyTimeline(backend, CountingMemory)
    agent = form_asking_agent()
    runner = backend.runner([agent])
    runner.chat_memory = provider
    waiting = runner.run(agent, "conv", "ticket")

    # WHEN the person submits (the seed's rule: the card shows SUBMITTED before the submit returns)
    runner.submit_resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    card = provider("conv").get_message(f"{waiting.id}:input:call-1")
    assert isinstance(card, FormMessage) and card.status is FormStatus.SUBMITTED
    assert card.submitted_values == SUPPORT_DATA
    writes_by_submit = len(card_writes)

    # ... and the worker runs the turn on
    done = Worker(runner).process(waiting.id).turn

    # THEN it finished without writing the card again (the saved record says the submit wrote it)
    assert done is not None and done.status is TurnStatus.COMPLETED
    assert len(card_writes) == writes_by_submit == 1
    assert [m.type for m in backend.memory("conv").get_messages()] == ["user", "ai", "agent_form", "tool", "ai"]


def test_a_read_repairs_a_card_whose_projection_was_lost(backend: Backend) -> None:
    # GIVEN a turn that suspended while the timeline was failing: the snapshot waits, the card is missing
    flaky = FlakyTimeline(backend)

    agent = form_asking_agent()
    runner = backend.runner([agent])
    runner.chat_memory = flaky
    flaky["conv"].failing = True
    waiting = runner.run(agent, "conv", "ticket")
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    flaky["conv"].failing = False
    seen = backend.memory("conv").get_messages()
    assert not [m for m in seen if isinstance(m, FormMessage)]

    # WHEN someone reads the timeline and asks for a repair of what they saw
    repaired = runner.repair_timeline("conv", seen, whole=True)

    # THEN the pending card (and the messages before it) are back, and a second read repairs nothing
    assert repaired
    timeline = backend.memory("conv").get_messages()
    assert [m.type for m in timeline] == ["user", "ai", "agent_form"]
    assert not runner.repair_timeline("conv", timeline)


def test_a_finished_turn_keeps_its_conversation_until_its_timeline_is_whole(backend: Backend) -> None:
    # GIVEN a turn whose final projection fails
    flaky = FlakyTimeline(backend)

    agent = form_asking_agent()
    runner = backend.runner([agent])
    runner.chat_memory = flaky
    waiting = runner.run(agent, "conv", "ticket")
    runner.submit_resume(waiting.id, ResumeCommand.user_input("call-1", SUPPORT_DATA))
    flaky["conv"].failing = True
    done = runner.run_turn(waiting.id)
    assert done.status is TurnStatus.COMPLETED
    flaky["conv"].failing = False

    # THEN it still names the conversation (the final answer is not in the timeline yet) ...
    assert backend.memory("conv").get_active_turn() == waiting.id
    assert backend.memory("conv").get_messages()[-1].type != "ai"
    # ... until a read repairs it: then the answer is there and the conversation is free
    assert runner.repair_timeline("conv", backend.memory("conv").get_messages())
    assert backend.memory("conv").get_messages()[-1].message_id == done.messages[-1].message_id
    assert backend.memory("conv").get_active_turn() is None


class _RenewalsNeverArrive(DelegatingTurnStore):
    """A store that no lease renewal reaches (the renewing process is frozen): the lease keeps its expiry."""

    def renew(self, lease: Lease, lease_seconds: float) -> Lease:
        return lease
