"""Which agent continues a turn: the exact id and version, never a fallback (pure)."""

from __future__ import annotations

import pytest

from agentturn import Agent, ScriptedChatModel, Turn
from agentturn.agents.registry import AgentRegistry
from agentturn.errors import UnknownAgentError


def agent(version: str, agent_id: str = "support") -> Agent:
    return Agent(agent_id, "help", ScriptedChatModel([]), version=version)


def turn_of(agent_id: str, version: str) -> Turn:
    return Turn(id="t1", conversation_id="c", agent_id=agent_id, agent_version=version)


def test_a_turn_continues_with_the_version_that_started_it() -> None:
    # GIVEN two versions of an agent registered
    old, new = agent("1"), agent("2")
    registry = AgentRegistry([old, new])

    # WHEN the agent of a turn started by version 1 is looked up
    found = registry.agent_for(turn_of("support", "1"))

    # THEN it is version 1, not the latest
    assert found is old


def test_a_missing_version_is_an_error_not_a_fallback() -> None:
    # GIVEN only version 2 registered
    registry = AgentRegistry([agent("2")])

    # WHEN a turn of version 1 is looked up THEN it is refused, naming what is missing
    with pytest.raises(UnknownAgentError) as raised:
        registry.agent_for(turn_of("support", "1"))
    assert "support" in str(raised.value)


def test_a_resolver_is_asked_only_for_what_is_not_registered() -> None:
    # GIVEN a registered version 1 and a resolver that can build any version
    asked: list[tuple[str, str]] = []

    def resolve(agent_id: str, version: str) -> Agent:
        asked.append((agent_id, version))
        return agent(version, agent_id)

    registry = AgentRegistry(resolve)
    registered = agent("1")
    registry.register(registered)

    # WHEN versions 1 and 3 are looked up
    first = registry.agent_for(turn_of("support", "1"))
    third = registry.agent_for(turn_of("support", "3"))

    # THEN the registered one is used as is, and the resolver was asked only for version 3
    assert first is registered
    assert third.version == "3"
    assert asked == [("support", "3")]


def test_a_resolver_that_answers_with_another_version_is_not_trusted() -> None:
    # GIVEN a resolver that always answers with its latest version
    registry = AgentRegistry(lambda agent_id, version: agent("9", agent_id))

    # WHEN a turn of version 1 is looked up THEN it is refused rather than continued by version 9
    with pytest.raises(UnknownAgentError):
        registry.agent_for(turn_of("support", "1"))
