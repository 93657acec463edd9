"""The public Python API of issue 15 item 5: names that read well, old names that keep working with a warning."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import warnings
from typing import Any

import pytest

import agentturn
from agentturn import (
    REQUEST_USER_INPUT,
    Agent,
    AiMessage,
    ChatRequest,
    ExecutionPolicy,
    FormDefinition,
    FormMessage,
    ResumeCommand,
    ResumeKind,
    Runner,
    ScriptedChatModel,
    Suspension,
    Tool,
    ToolCall,
    ToolMessage,
    Turn,
    TurnStatus,
    UserInputTool,
    errors,
)
from agentturn.api.models import SuspensionView
from agentturn.state.turn import SuspensionType

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}


def _card(**schema: Any) -> FormMessage:
    return FormMessage(action_id="call-1", form_key="meeting", **schema)


# ------------------------------------------------------------------------------------- FormMessage.schema


def test_form_message_schema_is_the_schema_dict_not_pydantics_method() -> None:
    # GIVEN a form card built with a schema
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation on the new name
        card = _card(schema=SCHEMA)
        # WHEN its schema is read THEN it is that dict, and the wire field keeps its name
        assert card.schema == SCHEMA
        assert card.to_wire()["schema"] == SCHEMA
        assert FormMessage.model_validate(card.to_wire()).schema == SCHEMA


def test_form_message_schema_underscore_still_reads_and_builds_with_a_deprecation_warning() -> None:
    # GIVEN code written against the old name
    with pytest.warns(DeprecationWarning, match="schema_") as built:
        card = FormMessage(action_id="call-1", form_key="meeting", schema_=SCHEMA)
    # WHEN it reads the old attribute THEN it gets the schema, and is told to move
    with pytest.warns(DeprecationWarning, match="use `schema`") as read:
        assert card.schema_ == SCHEMA
    # AND both warnings point at the caller's line, not at pydantic's or agentturn's insides
    assert [w.filename for w in (*built, *read)] == [__file__, __file__]
    assert card.schema == SCHEMA


def test_form_message_refuses_both_schema_names_at_once() -> None:
    # GIVEN both names WHEN the card is built THEN it is refused rather than one of them silently winning
    with pytest.warns(DeprecationWarning, match="schema_"), pytest.raises(ValueError, match="not both"):
        _card(schema=SCHEMA, schema_={"type": "object"})


def test_suspension_view_schema_is_the_schema_dict() -> None:
    # GIVEN the HTTP view of a form suspension WHEN its schema is read THEN it is the dict, on the wire too
    view = SuspensionView(type=SuspensionType.USER_INPUT, action_id="a", correlation_id="a", message="", schema=SCHEMA)
    assert view.schema == SCHEMA
    assert '"schema":{"type":"object"' in view.to_json()
    with pytest.warns(DeprecationWarning, match="schema_"):
        assert view.schema_ == SCHEMA


# ------------------------------------------------------------------------ Suspension and ResumeCommand


MEETING = FormDefinition("meeting", "Collect the meeting's topic", SCHEMA)


def _asks_for_the_form_then_answers(request: ChatRequest) -> AiMessage:
    """A scripted model as a function of the conversation: ask once, then report what came back."""
    results = [m for m in request.messages if isinstance(m, ToolMessage)]
    if not results:
        return AiMessage(tool_calls=[ToolCall(id="call-1", name=REQUEST_USER_INPUT, arguments={"formKey": "meeting"})])
    return AiMessage(content=f"got {results[-1].content}")


def _waiting_runner() -> tuple[Runner, Turn]:
    model = ScriptedChatModel(_asks_for_the_form_then_answers)
    agent = Agent("a", "ask", model, tools=[UserInputTool(forms=[MEETING])])
    runner = Runner(agents=[agent])
    return runner, runner.run(agent, "conv-1", "book a room")


def test_suspension_names_what_it_waits_for_with_typed_properties() -> None:
    # GIVEN a turn waiting for a model-requested form
    _, waiting = _waiting_runner()
    suspension = waiting.suspension
    assert suspension is not None
    # WHEN its properties are read THEN they are the metadata's values under one name each
    assert suspension.action_id == suspension.correlation_id == "call-1"
    assert suspension.form_key == "meeting"
    assert suspension.schema == SCHEMA
    assert suspension.tool_name == REQUEST_USER_INPUT
    # AND the schema handed out is a copy: editing it changes nothing frozen in the turn
    handed_out = suspension.schema
    assert handed_out is not None
    handed_out["required"] = []
    assert suspension.schema == SCHEMA


def test_plain_text_suspension_has_no_form_details() -> None:
    # GIVEN a plain-text wait point WHEN its form properties are read THEN they are None, not a KeyError
    suspension = Suspension.user_input("which room?")
    assert suspension.action_id == suspension.correlation_id
    assert (suspension.form_key, suspension.schema, suspension.tool_name) == (None, None, None)


def test_submit_form_resumes_the_form_it_names() -> None:
    # GIVEN a turn waiting for a form
    runner, waiting = _waiting_runner()
    assert waiting.suspension is not None
    # WHEN the person's data is submitted with submit_form
    done = runner.resume(waiting.id, ResumeCommand.submit_form(waiting.suspension.action_id, {"topic": "Review"}))
    # THEN the turn completes and the model got the data
    assert done.status is TurnStatus.COMPLETED
    assert done.final_output is not None and "Review" in done.final_output


def test_submit_form_and_the_two_argument_user_input_are_the_same_command() -> None:
    # GIVEN the seed's overloaded form and the explicit one WHEN both are built THEN they are equal, without warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        old = ResumeCommand.user_input("call-1", {"topic": "x"})
        text = ResumeCommand.user_input("just text")
    assert ResumeCommand.submit_form("call-1", {"topic": "x"}) == old
    assert old.kind is ResumeKind.FORM_INPUT and text.kind is ResumeKind.TEXT_INPUT
    with pytest.raises(TypeError, match="dict"):
        ResumeCommand.submit_form("call-1", ["not", "a", "dict"])  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ the package itself


def _fresh_interpreter(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_importing_agentturn_loads_none_of_the_runtime() -> None:
    # GIVEN a fresh interpreter WHEN it imports agentturn alone
    loaded = json.loads(_fresh_interpreter("import sys, json, agentturn; print(json.dumps(sorted(sys.modules)))"))
    # THEN no runtime module, no JSON Schema validator, no pydantic and no AWS SDK came with it
    heavy = ("jsonschema", "pydantic", "boto3", "botocore", "agentturn.engine.runner", "agentturn.forms.validation")
    assert [m for m in loaded if m.startswith(heavy)] == []


def test_a_public_name_loads_only_what_it_needs() -> None:
    # GIVEN a fresh interpreter WHEN it uses one light name THEN the runner and the validator stay unloaded
    code = "import sys, agentturn; agentturn.ResumeCommand; print('agentturn.engine.runner' in sys.modules)"
    assert _fresh_interpreter(code) == "False"


def test_every_exported_name_resolves_and_star_import_gives_all() -> None:
    # GIVEN the package's __all__ WHEN each name is read THEN it is the object its defining module holds
    for name in agentturn.__all__:
        defining = importlib.import_module(agentturn._LAZY[name])
        assert getattr(agentturn, name) is getattr(defining, name), name
    namespace: dict[str, Any] = {}
    exec("from agentturn import *", namespace)
    assert set(agentturn.__all__) <= set(namespace)
    assert set(agentturn.__all__) <= set(dir(agentturn))


def test_model_error_is_exported() -> None:
    # GIVEN the error every chat model adapter raises WHEN imported from the package THEN it is the same class
    from agentturn import ModelError, ModelErrorKind

    assert ModelError is errors.ModelError and ModelErrorKind is errors.ModelErrorKind
    assert "ModelError" in agentturn.__all__


def test_tool_protocol_error_is_no_longer_exported_but_still_resolves_with_a_warning() -> None:
    # GIVEN code that imported the never-raised ToolProtocolError from the package
    assert "ToolProtocolError" not in agentturn.__all__
    # WHEN it reads the name THEN it still gets the class, and a DeprecationWarning
    with pytest.warns(DeprecationWarning, match="ToolProtocolError"):
        value = agentturn.ToolProtocolError
    assert value is errors.ToolProtocolError


def test_an_unknown_name_is_an_attribute_error() -> None:
    # GIVEN a name the package never had WHEN it is read THEN AttributeError names it (hasattr keeps working)
    with pytest.raises(AttributeError, match="'NoSuchThing'"):
        _ = agentturn.NoSuchThing
    assert not hasattr(agentturn, "NoSuchThing")


# ------------------------------------------------------------------- keyword-only after the first few


def _echo(arguments: dict[str, Any]) -> dict[str, Any]:
    return arguments


PARAMETERS: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_the_documented_positional_calls_raise_no_warning() -> None:
    # GIVEN the calls DESIGN documents WHEN they are made THEN nothing warns
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tool = Tool("echo", "Echo", _echo, metadata={"m": 1})
        Tool("echo", "Echo", _echo, parameters=PARAMETERS)
        agent = Agent("a", "i", ScriptedChatModel([]), tools=[tool])
    assert agent.tools == {"echo": tool}


def test_tool_parameters_passed_positionally_still_work_with_a_deprecation_warning() -> None:
    # GIVEN a call written when every Tool parameter was positional
    with pytest.warns(DeprecationWarning, match=r"parameters, metadata to Tool\(\) positionally"):
        tool = Tool("echo", "Echo", _echo, PARAMETERS, {"m": 1})  # type: ignore[call-arg]
    # THEN each value landed where it always did
    assert (tool.parameters, tool.metadata) == (PARAMETERS, {"m": 1})


def test_agent_parameters_passed_positionally_still_work_with_a_deprecation_warning() -> None:
    # GIVEN a call written when every Agent parameter was positional
    tool = Tool("echo", "Echo", _echo)
    policy = ExecutionPolicy(max_iterations=3)
    with pytest.warns(DeprecationWarning, match=r"tools, version, approval_policy, policy to Agent\(\)"):
        agent = Agent("a", "i", ScriptedChatModel([]), [tool], "7", None, policy)  # type: ignore[call-arg]
    # THEN each value landed where it always did
    assert (agent.tools, agent.version, agent.approval_policy, agent.policy) == ({"echo": tool}, "7", None, policy)


def test_too_many_or_duplicated_positionals_are_type_errors() -> None:
    # GIVEN more positional values than there are parameters, or one given twice WHEN called THEN TypeError
    with pytest.raises(TypeError, match="at most 5 positional"):
        Tool("echo", "Echo", _echo, None, None, "extra")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'parameters'"):
        Tool("echo", "Echo", _echo, PARAMETERS, parameters=PARAMETERS)  # type: ignore[misc]


#: Every name importable from ``agentturn`` before the package was laid out by concern (issue 28): other
#: people's code imports these, so each one stays, whatever module now defines it.
PUBLIC_NAMES_OF_ROUND_TWO = (
    "Agent",
    "AgentTurnError",
    "AiMessage",
    "ApprovalMessage",
    "ApprovalPolicy",
    "ApprovalStatus",
    "ApprovalVerdict",
    "CardAction",
    "ChatMemory",
    "ChatMemoryProvider",
    "ChatModel",
    "ChatRequest",
    "ConversationBusyError",
    "Event",
    "EventType",
    "ExecutionPolicy",
    "FormDefinition",
    "FormMessage",
    "FormRequired",
    "FormStatus",
    "FormValidationError",
    "HandoffLostError",
    "IdempotencyConflictError",
    "InMemoryChatMemory",
    "InMemoryResumeQueue",
    "InMemoryTurnStore",
    "InvalidResumeError",
    "Lease",
    "LeaseLostError",
    "Listener",
    "ModelError",
    "ModelErrorKind",
    "ModelMessage",
    "REQUEST_USER_INPUT",
    "ResumeCommand",
    "ResumeKind",
    "ResumeMessage",
    "ResumeQueue",
    "RunnableTurn",
    "Runner",
    "SCHEMA_VERSION",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "SnapshotUnreadableError",
    "Suspension",
    "SuspensionType",
    "TimelineMessage",
    "Tool",
    "ToolApprovalDecision",
    "ToolArgumentsError",
    "ToolCall",
    "ToolContext",
    "ToolMessage",
    "ToolSpec",
    "Turn",
    "TurnNotFoundError",
    "TurnPhase",
    "TurnStatus",
    "TurnStore",
    "UnknownAgentError",
    "UserInputTool",
    "UserMessage",
    "VersionConflictError",
    "WorkOutcome",
    "WorkResult",
    "Worker",
    "require_form",
    "tool",
    "validate_form_data",
)


@pytest.mark.parametrize("name", PUBLIC_NAMES_OF_ROUND_TWO)
def test_every_name_of_the_flat_package_is_still_importable_from_agentturn(name: str) -> None:
    # GIVEN a name the flat package exported WHEN it is imported from agentturn THEN it resolves and is exported
    namespace: dict[str, Any] = {}
    exec(f"from agentturn import {name}", namespace)
    assert namespace[name] is getattr(agentturn, name)
    assert name in agentturn.__all__
