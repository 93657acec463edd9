"""Entry point 1: the model calls request_user_input(formKey); the submission becomes that call's ToolMessage."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    FormDefinition,
    FormMessage,
    FormStatus,
    FormValidationError,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolMessage,
    TurnPhase,
    TurnStatus,
    UserInputTool,
    Worker,
)
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import (
    MEETING_DATA,
    MEETING_SCHEMA,
    SUPPORT_DATA,
    ai_calls,
    final_from_last_tool,
    meeting_form,
    support_form,
)


def meeting_model(request: ChatRequest) -> AiMessage:
    """Ask for the form first; once it is submitted, reserve the room with that data; then answer."""
    last = request.messages[-1]
    if isinstance(last, ToolMessage) and last.tool_name == "request_user_input":
        assert isinstance(last.content, dict)
        return ai_calls(("call-reserve", "reserve_meeting_room", last.content["data"]))
    if isinstance(last, ToolMessage):
        return final_from_last_tool(request)
    return ai_calls(("call-456", "request_user_input", {"formKey": "meeting_room_booking"}))


def meeting_agent(model: ScriptedChatModel, reservations: list[dict[str, Any]], version: str = "1") -> Agent:
    def reserve(arguments: dict[str, Any]) -> dict[str, Any]:
        reservations.append(arguments)
        return {"room": "A", **arguments}

    return Agent(
        id="meeting-agent",
        version=version,
        instructions="先调用 request_user_input 选择 meeting_room_booking；提交后执行 reserve_meeting_room。",
        chat_model=model,
        tools=[UserInputTool(forms=[meeting_form()]), Tool("reserve_meeting_room", "预定会议室", reserve)],
    )


def test_meeting_room_booking_end_to_end(backend: Backend) -> None:
    # GIVEN the seed's meeting-room agent and a model that asks for the booking form
    model = ScriptedChatModel(meeting_model)
    reservations: list[dict[str, Any]] = []
    agent = meeting_agent(model, reservations)
    runner = backend.runner([agent])

    # WHEN the user asks to book a room
    waiting = runner.run(agent, "conv-1", "帮我预定一个会议室")

    # THEN the turn waits for the form, with the original call still pending and its schema frozen
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    assert waiting.phase is TurnPhase.TOOLS
    assert waiting.suspension is not None
    assert waiting.suspension.correlation_id == "call-456"
    assert waiting.suspension.metadata["formKey"] == "meeting_room_booking"
    assert waiting.suspension.metadata["schema"] == MEETING_SCHEMA
    assert waiting.suspension.metadata["inputTarget"] == "MODEL"
    assert [c.id for c in waiting.pending_tool_calls] == ["call-456"]
    assert reservations == []
    card = backend.memory("conv-1").get_message(f"{waiting.id}:input:call-456")
    assert isinstance(card, FormMessage)
    assert card.status is FormStatus.PENDING
    assert card.actions == ["SUBMIT"]
    assert card.schema == MEETING_SCHEMA
    assert card.to_wire()["type"] == "agent_form"
    assert card.to_wire()["modelVisible"] is False

    # WHEN the person submits and a worker resumes the turn
    runnable = runner.submit_resume(
        waiting.id, ResumeCommand.user_input("call-456", MEETING_DATA).with_metadata("submittedBy", "user-1001")
    )
    assert runnable.status is TurnStatus.RUNNING
    assert reservations == [], "submit_resume only saves a runnable turn; it runs nothing"
    done = Worker(runner).process(waiting.id).turn

    # THEN the model reserved the room itself with the submitted data and answered
    assert done is not None
    assert done.status is TurnStatus.COMPLETED
    assert reservations == [MEETING_DATA]
    assert done.final_output is not None and "Sprint review" in done.final_output
    # ... and the one card was updated in place (no second form message), showing what was submitted
    timeline = backend.memory("conv-1").get_messages()
    cards = [m for m in timeline if isinstance(m, FormMessage)]
    assert len(cards) == 1
    assert cards[0].status is FormStatus.SUBMITTED
    assert cards[0].actions == []
    assert cards[0].submitted_values == MEETING_DATA
    assert cards[0].submitted_by == "user-1001"
    assert cards[0].submitted_at is not None


def test_the_submission_is_the_tool_message_of_the_original_call(backend: Backend) -> None:
    # GIVEN a turn waiting on request_user_input(call-456)
    model = ScriptedChatModel(meeting_model)
    agent = meeting_agent(model, [])
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv-1", "book a room")

    # WHEN the form is submitted and the turn resumed in this thread
    runner.resume(waiting.id, ResumeCommand.user_input("call-456", MEETING_DATA))

    # THEN the model's next request holds exactly the seed's ToolMessage for call-456, and no new user message
    after_submit = model.requests[1]
    tool_message = after_submit.messages[-1]
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.tool_call_id == "call-456"
    assert tool_message.content == {"status": "submitted", "formKey": "meeting_room_booking", "data": MEETING_DATA}
    assert [m.type for m in after_submit.messages] == ["user", "ai", "tool"]


def test_the_model_never_sees_a_schema(backend: Backend) -> None:
    # GIVEN a model whose requests are all recorded
    model = ScriptedChatModel(meeting_model)
    agent = meeting_agent(model, [])
    runner = backend.runner([agent])

    # WHEN a whole form cycle runs
    waiting = runner.run(agent, "conv-1", "book a room")
    runner.resume(waiting.id, ResumeCommand.user_input("call-456", MEETING_DATA))

    # THEN the tool definition offers only formKey (an enum of keys) and the forms' descriptions ...
    spec = next(t for t in model.requests[0].tools if t.name == "request_user_input")
    assert spec.parameters["properties"]["formKey"]["enum"] == ["meeting_room_booking"]
    assert "预定会议室时收集会议主题" in spec.description
    # ... and nothing the model was ever given contains the schema or a UI card
    for request in model.requests:
        seen = json.dumps(
            {"tools": [t.__dict__ for t in request.tools], "messages": [m.to_wire() for m in request.messages]},
            ensure_ascii=False,
        )
        assert "会议室预定" not in seen and '"minimum"' not in seen and "agent_form" not in seen


def test_unknown_form_key_is_an_error_tool_message_not_a_dead_turn(backend: Backend) -> None:
    # GIVEN a model that asks for a form that is not registered, then reacts to the error
    def model(request: ChatRequest) -> AiMessage:
        if isinstance(request.messages[-1], ToolMessage):
            return AiMessage(content="sorry, I cannot show that form")
        return ai_calls(("call-1", "request_user_input", {"formKey": "vacation_request"}))

    agent = meeting_agent(ScriptedChatModel(model), [])
    scripted = agent.chat_model
    runner = backend.runner([agent])

    # WHEN the turn runs
    done = runner.run(agent, "conv-1", "book a room")

    # THEN the model got an error naming the key and the allowed keys, and the turn completed normally
    assert done.status is TurnStatus.COMPLETED
    assert isinstance(scripted, ScriptedChatModel)
    error = scripted.requests[1].messages[-1]
    assert isinstance(error, ToolMessage) and error.tool_call_id == "call-1"
    assert isinstance(error.content, dict)
    assert error.content["status"] == "error"
    assert error.content["formKey"] == "vacation_request"
    assert error.content["allowedFormKeys"] == ["meeting_room_booking"]
    assert not [m for m in backend.memory("conv-1").get_messages() if isinstance(m, FormMessage)]


def test_form_and_other_tool_in_one_message_the_tool_runs_while_the_form_waits(backend: Backend) -> None:
    # GIVEN a model that asks for a form and calls a lookup tool in the same message
    lookups: list[str] = []

    def model(request: ChatRequest) -> AiMessage:
        if isinstance(request.messages[-1], ToolMessage):
            return AiMessage(content=f"saw {len([m for m in request.messages if isinstance(m, ToolMessage)])} results")
        return ai_calls(
            ("call-form", "request_user_input", {"formKey": "meeting_room_booking"}),
            ("call-lookup", "lookup_rooms", {}),
        )

    def lookup(arguments: dict[str, Any]) -> list[str]:
        lookups.append("called")
        return ["A", "B"]

    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(model),
        tools=[UserInputTool(forms=[meeting_form()]), Tool("lookup_rooms", "rooms", lookup)],
    )
    runner = backend.runner([agent])

    # WHEN the turn runs, the call that needs nobody runs, and the turn waits for the form
    waiting = runner.run(agent, "conv-1", "book")
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    assert [c.id for c in waiting.pending_tool_calls] == ["call-form"]
    assert lookups == ["called"]

    # THEN after the submission the model sees both results, and the lookup did not run again
    done = runner.resume(waiting.id, ResumeCommand.user_input("call-form", MEETING_DATA))
    assert lookups == ["called"]
    assert done.status is TurnStatus.COMPLETED
    assert [m.tool_call_id for m in done.messages if isinstance(m, ToolMessage)] == ["call-lookup", "call-form"]
    assert done.final_output == "saw 2 results"


def test_two_forms_in_one_message_get_a_card_each_at_once(backend: Backend) -> None:
    # GIVEN a model asking for two forms at once
    def model(request: ChatRequest) -> AiMessage:
        if isinstance(request.messages[-1], ToolMessage):
            return AiMessage(content="both")
        return ai_calls(
            ("call-a", "request_user_input", {"formKey": "meeting_room_booking"}),
            ("call-b", "request_user_input", {"formKey": "support_ticket_details"}),
        )

    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(model),
        tools=[UserInputTool(forms=[meeting_form(), support_form()])],
    )
    runner = backend.runner([agent])

    # WHEN the turn runs, both forms wait at once, each with its card
    first = runner.run(agent, "conv-1", "both please")
    assert [s.correlation_id for s in first.suspensions] == ["call-a", "call-b"]
    assert first.suspension is not None and first.suspension.correlation_id == "call-a"
    pending = [m for m in backend.memory("conv-1").get_messages() if isinstance(m, FormMessage)]
    assert [(c.action_id, c.status) for c in pending] == [("call-a", "PENDING"), ("call-b", "PENDING")]
    second = runner.resume(first.id, ResumeCommand.user_input("call-a", MEETING_DATA))

    # THEN after the first answer the turn still waits, now for the second form only
    assert second.status is TurnStatus.WAITING_FOR_USER
    assert [s.correlation_id for s in second.suspensions] == ["call-b"]
    assert second.suspension is not None and second.suspension.correlation_id == "call-b"
    assert second.suspension.metadata["formKey"] == "support_ticket_details"
    # ... and the first action id no longer resumes anything
    with pytest.raises(Exception, match="no longer pending"):
        runner.submit_resume(first.id, ResumeCommand.user_input("call-a", MEETING_DATA))
    done = runner.resume(first.id, ResumeCommand.user_input("call-b", SUPPORT_DATA))
    assert done.status is TurnStatus.COMPLETED
    cards = [m for m in backend.memory("conv-1").get_messages() if isinstance(m, FormMessage)]
    assert [(c.action_id, c.status) for c in cards] == [("call-a", "SUBMITTED"), ("call-b", "SUBMITTED")]


def test_schema_changed_after_suspension_keeps_the_frozen_copy(backend: Backend) -> None:
    # GIVEN a turn suspended on a form built from a schema dict the caller still holds
    schema: dict[str, Any] = json.loads(json.dumps(MEETING_SCHEMA))
    form = FormDefinition("meeting_room_booking", "book", schema)
    model = ScriptedChatModel(meeting_model)
    agent = Agent(
        id="meeting-agent",
        instructions="",
        chat_model=model,
        tools=[UserInputTool(forms=[form]), Tool("reserve_meeting_room", "", lambda a: a)],
    )
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv-1", "book")

    # WHEN the caller's dict is changed deep inside, and the agent is redefined with a stricter schema
    schema["properties"]["topic"]["title"] = "CHANGED"
    schema["required"].append("projector")
    stricter = json.loads(json.dumps(MEETING_SCHEMA))
    stricter["properties"]["projector"] = {"type": "boolean"}
    stricter["required"].append("projector")
    assert form.schema == MEETING_SCHEMA

    # THEN the waiting turn and its card still carry the schema as it was when it suspended ...
    stored = runner.restore(waiting.id)
    assert stored.suspension is not None
    assert stored.suspension.metadata["schema"] == MEETING_SCHEMA
    card = backend.memory("conv-1").get_message(f"{waiting.id}:input:call-456")
    assert isinstance(card, FormMessage) and card.schema == MEETING_SCHEMA
    # ... the submission is validated against that frozen copy (no "projector" required, none accepted)
    with pytest.raises(FormValidationError) as refused:
        runner.submit_resume(waiting.id, ResumeCommand.user_input("call-456", {**MEETING_DATA, "projector": True}))
    assert refused.value.errors == [{"path": "/projector", "message": "“projector” is not a field of this form."}]
    done = runner.resume(waiting.id, ResumeCommand.user_input("call-456", MEETING_DATA))
    assert done.status is TurnStatus.COMPLETED
