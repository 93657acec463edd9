"""Which later version continues a turn (``Agent(continues=...)``), and the check that it can (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn import Agent, FormDefinition, ScriptedChatModel, Tool, ToolCall, Turn, UserInputTool
from agentturn.agents.continuation import continuation_problems
from agentturn.agents.registry import AgentRegistry
from agentturn.api.agents import AgentCatalog
from agentturn.errors import AgentChangedError, UnknownAgentError
from agentturn.state.messages import FormMessage
from agentturn.state.turn import Suspension, SuspensionType

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"orderId": {"type": "string"}}, "required": ["orderId"]}


def _refund(arguments: dict[str, Any]) -> dict[str, Any]:
    return arguments


def desk(version: str, continues: Any = (), *, schema: dict[str, Any] | None = None, refund: bool = True) -> Agent:
    tools: list[Tool] = [UserInputTool(forms=[FormDefinition("refund", "which order", schema or SCHEMA)])]
    if refund:
        tools.append(Tool("issue_refund", "refund", _refund))
    return Agent("desk", "", ScriptedChatModel([]), tools=tools, version=version, continues=continues)


def waiting_turn(version: str = "1") -> Turn:
    """A turn of ``version`` waiting for the refund form the model asked for and the approval of a refund."""
    turn = Turn(id="t1", conversation_id="c", agent_id="desk", agent_version=version)
    turn.pending_tool_calls = [
        ToolCall(id="ask", name="request_user_input", arguments={"formKey": "refund"}),
        ToolCall(id="pay", name="issue_refund", arguments={"orderId": "O-1"}),
    ]
    turn.suspensions = [
        Suspension(
            type=SuspensionType.USER_INPUT,
            correlation_id="ask",
            metadata={"formKey": "refund", "schema": SCHEMA, "toolName": "request_user_input", "inputTarget": "MODEL"},
        ),
        Suspension(type=SuspensionType.TOOL_APPROVAL, correlation_id="pay", metadata={"toolName": "issue_refund"}),
    ]
    return turn


def test_a_version_continues_only_the_versions_it_names_or_its_function_accepts() -> None:
    # GIVEN versions declaring what they continue, by list and by function
    listed = desk("3", continues=["1", "2"])
    by_function = desk("3", continues=lambda version: version.startswith("2."))

    # THEN they continue exactly those, never themselves (the exact version needs no continuing)
    assert [listed.continues(v) for v in ("1", "2", "3", "4")] == [True, True, False, False]
    assert [by_function.continues(v) for v in ("2.1", "2.9", "1", "3")] == [True, True, False, False]
    assert not desk("2").continues("1")


def test_a_lone_string_is_refused_rather_read_as_its_characters() -> None:
    # WHEN continues is given "12" (meaning version 12, or versions 1 and 2?) THEN it is refused, naming it
    with pytest.raises(TypeError, match="'12'"):
        desk("13", continues="12")


def test_a_version_with_everything_the_turn_waits_on_continues_it() -> None:
    # GIVEN a turn of version 1 waiting on the refund form and a refund's approval, and version 2 with both
    # THEN nothing stands in the way
    assert continuation_problems(desk("2", ["1"]), waiting_turn()) == []


def test_a_missing_tool_and_a_changed_form_are_each_named() -> None:
    # GIVEN a version without the refund tool, and one whose refund form asks for more than the frozen one
    changed = {**SCHEMA, "required": ["orderId", "reason"]}

    # THEN each problem is named in words a person can act on
    assert continuation_problems(desk("2", ["1"], refund=False), waiting_turn()) == ["tool 'issue_refund' is gone"]
    assert continuation_problems(desk("2", ["1"], schema=changed), waiting_turn()) == [
        "form 'refund' has another schema than the one the person was shown"
    ]


def test_a_form_already_answered_is_still_checked_through_its_card() -> None:
    # GIVEN a turn whose form was answered (its wait closed; its card keeps the frozen schema)
    turn = waiting_turn()
    turn.suspensions = turn.suspensions[1:]
    turn.pending_tool_calls = turn.pending_tool_calls[1:]
    turn.cards = [FormMessage(action_id="ask", form_key="refund", schema=SCHEMA, status="SUBMITTED")]

    # WHEN a version without that form would continue it THEN the form is named: the model reads its answer next
    no_form = Agent("desk", "", ScriptedChatModel([]), tools=[Tool("issue_refund", "refund", _refund)], version="2")
    assert continuation_problems(no_form, turn) == ["form 'refund' is gone"]


def test_the_registry_hands_a_turn_to_the_version_that_continues_it_or_says_why_not() -> None:
    # GIVEN only later versions registered: one continuing version 1 with what it needs, one without a tool
    able = AgentRegistry([desk("2", ["1"])])
    unable = AgentRegistry([desk("2", ["1"], refund=False)])
    silent = AgentRegistry([desk("2")])

    # THEN the first continues the turn; the second refuses, naming the versions and why; the third knows nothing
    assert able.agent_for(waiting_turn()).version == "2"
    with pytest.raises(AgentChangedError) as changed:
        unable.agent_for(waiting_turn())
    assert changed.value.problems == ["tool 'issue_refund' is gone"]
    assert "version '2' cannot continue a turn of version '1'" in str(changed.value)
    with pytest.raises(UnknownAgentError):
        silent.agent_for(waiting_turn())


def test_the_exact_version_still_wins_over_one_that_continues_it() -> None:
    # GIVEN versions 1 and 2 (continuing 1) both deployed
    old, new = desk("1"), desk("2", ["1"])

    # THEN a turn of version 1 resumes on version 1, in the registry and in the deployed catalog
    assert AgentRegistry([old, new]).agent_for(waiting_turn()) is old
    assert AgentCatalog.of([old, new]).resolve("desk", "1") is old


def test_the_deployed_catalog_resolves_the_last_version_that_continues() -> None:
    # GIVEN a deployment listing versions 2 and 3, both continuing version 1
    second, third = desk("2", ["1"]), desk("3", ["1", "2"])
    catalog = AgentCatalog.of([second, third])

    # THEN version 1's turns go to the last listed; an unknown version is still refused
    assert catalog.resolve("desk", "1") is third
    assert AgentRegistry(catalog.resolve).agent_for(waiting_turn()) is third
    with pytest.raises(UnknownAgentError):
        catalog.resolve("desk", "0")
