"""``@tool`` / ``Tool.from_function``: the parameter schema comes from type hints and the docstring."""

from __future__ import annotations

import functools
import pickle
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from agentturn import (
    Agent,
    AiMessage,
    ChatRequest,
    Runner,
    ScriptedChatModel,
    Tool,
    ToolArgumentsError,
    ToolCall,
    ToolMessage,
    TurnStatus,
    tool,
)
from agentturn.agents.typed_tools import parse_docstring
from agentturn.forms.validation import validate_form_data

BOOKED: list[dict[str, Any]] = []


def reserve_meeting_room(
    topic: str, attendees: Annotated[int, Field(ge=1, le=200)], room: Literal["A-301", "B-12"] = "A-301"
) -> dict[str, Any]:
    """Book a meeting room.

    Args:
        topic: What the meeting is about.
        attendees: How many people come
            (the organiser included).
        room: Which room.

    Returns:
        The booking.
    """
    booking = {"topic": topic, "attendees": attendees, "room": room}
    BOOKED.append(booking)
    return booking


def test_the_schema_comes_from_the_type_hints_and_the_docstring() -> None:
    # GIVEN a typed, documented function WHEN it becomes a tool
    made = Tool.from_function(reserve_meeting_room)
    # THEN the model is told its name, its summary, and each parameter's type, constraint and text
    assert (made.name, made.description) == ("reserve_meeting_room", "Book a meeting room.")
    properties = made.parameters["properties"]
    assert properties["topic"] == {"type": "string", "description": "What the meeting is about."}
    assert properties["attendees"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 200,
        "description": "How many people come (the organiser included).",
    }
    assert properties["room"]["enum"] == ["A-301", "B-12"] and properties["room"]["default"] == "A-301"
    assert made.parameters["required"] == ["topic", "attendees"]
    assert made.parameters["additionalProperties"] is False
    # AND the schema is one the form validator accepts as JSON Schema 2020-12 (the model's arguments are checked)
    assert validate_form_data(made.parameters, {"topic": "Review", "attendees": 6}) == []


def test_the_decorator_and_from_function_make_the_same_tool() -> None:
    # GIVEN the decorator, bare and with options WHEN applied THEN it is Tool.from_function with those options
    bare = tool(reserve_meeting_room)
    named = tool(name="book", description="Book it", metadata={"team": "ops"})(reserve_meeting_room)
    assert isinstance(bare, Tool) and bare.parameters == Tool.from_function(reserve_meeting_room).parameters
    assert (named.name, named.description, named.metadata) == ("book", "Book it", {"team": "ops"})
    assert named.parameters == bare.parameters
    # AND a tool is not idempotent unless it says so, whichever way it was made
    assert not bare.idempotent and not named.idempotent
    assert tool(idempotent=True)(reserve_meeting_room).idempotent
    assert Tool.from_function(reserve_meeting_room, idempotent=True).idempotent


def test_the_function_gets_validated_typed_keyword_arguments() -> None:
    # GIVEN a typed tool WHEN the runtime calls it with the model's JSON arguments
    made = Tool.from_function(reserve_meeting_room)
    # THEN the function receives them as typed keyword arguments, defaults filled in
    assert made.function({"topic": "Review", "attendees": 6}) == {"topic": "Review", "attendees": 6, "room": "A-301"}


def test_refused_arguments_name_each_field_and_the_function_never_runs() -> None:
    # GIVEN a typed tool and arguments that break three of its rules
    made = Tool.from_function(reserve_meeting_room)
    before = len(BOOKED)
    # WHEN it is called THEN a typed error lists each problem by JSON Pointer, and nothing was booked
    with pytest.raises(ToolArgumentsError) as caught:
        made.function({"topic": 7, "attendees": 0, "floor": 3})
    assert {e["path"] for e in caught.value.errors} == {"/topic", "/attendees", "/floor"}
    assert len(BOOKED) == before
    # AND the error survives pickling (it may cross a process boundary)
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.tool, copy.errors, str(copy)) == (caught.value.tool, caught.value.errors, str(caught.value))


def _book_then_fix(request: ChatRequest) -> AiMessage:
    """A model as a function of the conversation: a bad call, then a corrected one after the error, then done."""
    results = [m for m in request.messages if isinstance(m, ToolMessage)]
    if not results:
        return AiMessage(tool_calls=[ToolCall(id="c1", name="reserve_meeting_room", arguments={"topic": "Review"})])
    if len(results) == 1:
        return AiMessage(
            tool_calls=[ToolCall(id="c2", name="reserve_meeting_room", arguments={"topic": "Review", "attendees": 6})]
        )
    return AiMessage(content=f"booked {results[-1].content}")


def test_the_model_sees_real_parameters_and_can_correct_a_refused_call() -> None:
    # GIVEN an agent with a typed tool, and a model that first forgets a required argument
    seen: list[ChatRequest] = []

    def model(request: ChatRequest) -> AiMessage:
        seen.append(request)
        return _book_then_fix(request)

    agent = Agent("a", "book rooms", ScriptedChatModel(model), tools=[tool(reserve_meeting_room)])
    # WHEN a turn runs
    turn = Runner(agents=[agent]).run(agent, "conv", "book a room for 6")
    # THEN the model was told the parameters, got the refusal as a tool error naming the field, and recovered
    assert seen[0].tools[0].parameters["required"] == ["topic", "attendees"]
    first = next(m for m in turn.messages if isinstance(m, ToolMessage) and m.tool_call_id == "c1")
    assert isinstance(first.content, dict) and first.content["status"] == "error"
    assert "/attendees" in str(first.content["message"])
    assert turn.status is TurnStatus.COMPLETED
    assert turn.final_output is not None and "'attendees': 6" in turn.final_output.replace('"', "'")


def test_functions_the_model_cannot_call_by_name_are_refused_when_the_tool_is_made() -> None:
    # GIVEN functions whose parameters a model could not fill in WHEN made into tools THEN a clear error at once
    def untyped(topic):  # type: ignore[no-untyped-def]
        """Untyped."""

    def variadic(*topics: str) -> None:
        """Variadic."""

    def undocumented(topic: str) -> None:
        pass

    with pytest.raises(TypeError, match=r"'topic'.*needs a type hint"):
        Tool.from_function(untyped)
    with pytest.raises(TypeError, match=r"'topics'.*nameable"):
        Tool.from_function(variadic)

    async def asynchronous(topic: str) -> None:
        """Async."""

    with pytest.raises(ValueError, match="description"):
        Tool.from_function(undocumented)
    with pytest.raises(TypeError, match="async functions are not supported"):
        Tool.from_function(asynchronous)
    with pytest.raises(TypeError, match="no __name__"):
        Tool.from_function(functools.partial(reserve_meeting_room, "Review"))
    assert Tool.from_function(undocumented, description="Say it").description == "Say it"


@pytest.mark.parametrize(
    "docstring",
    [
        "Book.\n\n    Args:\n        topic: The topic\n            of it.\n        n (int): How many.\n",
        "Book.\n\n    Parameters\n    ----------\n    topic : str\n        The topic\n        of it.\n    n : int\n"
        "        How many.\n\n    Returns\n    -------\n    topic\n        not a parameter text\n",
        "Book.\n\n    :param topic: The topic\n        of it.\n    :param int n: How many.\n    :returns: a booking\n",
    ],
    ids=["google", "numpy", "rest"],
)
def test_the_three_docstring_styles_give_the_same_texts(docstring: str) -> None:
    # GIVEN one docstring in a common style WHEN parsed THEN the summary and each parameter's text come out
    parsed = parse_docstring(docstring)
    assert parsed.description == "Book."
    assert dict(parsed.parameters) == {"topic": "The topic of it.", "n": "How many."}
