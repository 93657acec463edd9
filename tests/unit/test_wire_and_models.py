"""Wire formats, the turn state model, the scripted model and the import boundary."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentturn import (
    SCHEMA_VERSION,
    AiMessage,
    ChatRequest,
    FormMessage,
    InMemoryTurnStore,
    ResumeCommand,
    ResumeKind,
    ScriptedChatModel,
    ScriptExhaustedError,
    ToolCall,
    Turn,
    TurnStatus,
    UserMessage,
)


def test_importing_agentturn_loads_no_aws_sdk() -> None:
    # GIVEN a fresh interpreter WHEN it imports agentturn THEN neither boto3 nor botocore is loaded
    code = "import sys, agentturn; print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_form_message_wire_format_matches_the_seed() -> None:
    card = FormMessage(
        message_id="turn-123:input:call-456",
        turn_id="turn-123",
        action_id="call-456",
        form_key="support_ticket_details",
        schema={"type": "object"},
    )
    wire = card.to_wire()
    assert {
        k: wire[k] for k in ("type", "messageId", "turnId", "actionId", "formKey", "schema", "status", "actions")
    } == {
        "type": "agent_form",
        "messageId": "turn-123:input:call-456",
        "turnId": "turn-123",
        "actionId": "call-456",
        "formKey": "support_ticket_details",
        "schema": {"type": "object"},
        "status": "PENDING",
        "actions": ["SUBMIT"],
    }
    assert wire["modelVisible"] is False
    assert {"submittedValues", "submittedBy", "submittedAt", "version"} <= set(wire)
    assert FormMessage.model_validate(wire) == card


def test_turn_round_trips_through_json_with_a_schema_version() -> None:
    turn = Turn(id="t", conversation_id="c", agent_id="a", agent_version="1", messages=[UserMessage(content="hi")])
    wire = json.loads(turn.model_dump_json(by_alias=True))
    assert wire["schemaVersion"] == SCHEMA_VERSION
    assert wire["conversationId"] == "c"
    assert Turn.model_validate(wire) == turn


def test_a_turn_of_a_newer_schema_is_refused() -> None:
    # GIVEN a turn of a newer release's schema WHEN this code is asked to store it THEN it refuses instead of
    # writing a shape it does not know as its own
    store = InMemoryTurnStore()
    newer = Turn(id="t", conversation_id="c", agent_id="a", agent_version="1", schema_version=SCHEMA_VERSION + 1)
    with pytest.raises(ValueError, match=f"schemaVersion {SCHEMA_VERSION + 1}"):
        store.create(newer)


def test_status_properties() -> None:
    assert {s for s in TurnStatus if s.is_blocked} == {TurnStatus.WAITING_FOR_USER, TurnStatus.WAITING_FOR_APPROVAL}
    assert {s for s in TurnStatus if s.is_runnable} == {TurnStatus.READY, TurnStatus.RUNNING}
    assert all(s.is_terminal != (s.is_blocked or s.is_runnable) for s in TurnStatus)


def test_resume_commands() -> None:
    text = ResumeCommand.user_input("订单号是 O-1001")
    form = ResumeCommand.user_input("call-456", {"a": 1})
    assert (text.kind, text.content, text.action_id) == (ResumeKind.TEXT_INPUT, "订单号是 O-1001", None)
    assert (form.kind, form.action_id, form.data) == (ResumeKind.FORM_INPUT, "call-456", {"a": 1})
    tagged = form.with_metadata("submittedBy", "user-1001").with_metadata("requestId", "r-1")
    assert form.metadata == {}
    assert tagged.metadata == {"submittedBy": "user-1001", "requestId": "r-1"}
    # who sent it is not part of what makes two requests the same
    assert tagged.fingerprint() == form.fingerprint()
    assert ResumeCommand.user_input("call-456", {"a": 2}).fingerprint() != form.fingerprint()
    assert ResumeCommand.reject_tool("c", "no").reason == "no"


def test_scripted_model_from_a_list_is_a_function_of_the_conversation() -> None:
    # GIVEN a scripted list of two responses
    model = ScriptedChatModel([AiMessage(content="one"), AiMessage(content="two")])
    first = ChatRequest(system="", messages=[UserMessage(content="hi")])
    second = ChatRequest(
        system="",
        messages=[UserMessage(content="hi"), AiMessage(content="one", tool_calls=[ToolCall(id="c", name="t")])],
    )
    # WHEN asked twice about the same conversation THEN the answer depends only on that conversation
    assert model.chat(first).content == "one"
    assert model.chat(first).content == "one"
    assert model.chat(second).content == "two"
    with pytest.raises(ScriptExhaustedError):
        model.chat(ChatRequest(system="", messages=[*second.messages, AiMessage(content="two")]))
