"""Servers of revisions before 2026-07-28: a question asked live (``elicitation/create`` during the call, FastMCP's
``ctx.elicit``) is the same card as a durable one while the call is held open, up to ``MCPServer.live_wait``;
past it the server is answered ``cancel`` and the model is told. Against the FastMCP 4 test server spoken to at
revision 2025-11-25 (``initialize``, a session), with the runner and the worker in memory."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentturn import FormMessage, MCPServer, ResumeCommand, TurnStatus, Worker
from agentturn.mcp import MCPConfigError, legacy
from agentturn.mcp.listing import clear_cache
from tests.scenarios.conftest import Backend, _memory_backend
from tests.scenarios.test_mcp_tools import mcp_agent, tool_result
from tests.support.mcp_server import RunningServer

OLD = "2025-11-25"


@pytest.fixture(autouse=True)
def _fresh_listing() -> Iterator[None]:
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def memory() -> Iterator[Backend]:
    yield from _memory_backend()


def _sent(desk: RunningServer, method: str) -> list[dict[str, Any]]:
    with desk.recorder.lock:
        return [e.request for e in desk.recorder.exchanges if e.request.get("method") == method]


def _answers_posted(desk: RunningServer) -> list[dict[str, Any]]:
    """The client's responses to the server's own requests (JSON-RPC messages with a result and no method)."""
    with desk.recorder.lock:
        return [e.request for e in desk.recorder.exchanges if "result" in e.request and "method" not in e.request]


def _until(condition: Any, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.02)


def test_a_live_question_is_the_same_card_and_the_answer_reaches_the_held_call(
    memory: Backend, desk: RunningServer
) -> None:
    # GIVEN a server spoken to at an older revision, whose tool asks during the call
    server = MCPServer(desk.url, name="old", approve="none", revision=OLD, live_wait=60)
    agent = mcp_agent(server, "old__ask_live", {"title": "VPN down"})
    # WHEN the turn runs
    waiting = memory.runner([agent]).run(agent, "conv-live", "open a ticket")
    # THEN the session was opened at that revision, and the question waits on a card like a durable one
    assert [r["params"]["protocolVersion"] for r in _sent(desk, "initialize")][-1] == OLD
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    (card,) = waiting.pending_cards()
    assert isinstance(card, FormMessage)
    assert card.schema["title"].startswith("old (MCP server)")
    assert card.schema["description"] == "Which system is affected?"
    assert set(card.schema["properties"]) == {"system"}
    # ... which expires with the held wait (the runner's clock: now + live_wait)
    (wait,) = memory.store.load(waiting.id).suspensions
    assert wait.expires_at == pytest.approx(memory.clock() + 60)
    held = legacy.held_call(waiting.id, "call-1")
    assert held is not None
    answered_before = len(_answers_posted(desk))

    # WHEN the person answers while the call is held, and the worker continues
    memory.runner([agent]).submit_resume(waiting.id, ResumeCommand.submit_form(card.action_id, {"system": "SSO"}))
    Worker(memory.runner([agent])).process(waiting.id)
    # THEN the answer went to the server on the held call, and the call's own result reached the model
    done = memory.store.load(waiting.id)
    assert done.status is TurnStatus.COMPLETED
    assert tool_result(done) == {
        "text": "created 'VPN down' for SSO",
        "structuredContent": {"result": "created 'VPN down' for SSO"},
    }
    (posted,) = _answers_posted(desk)[answered_before:]
    assert posted["result"] == {"action": "accept", "content": {"system": "SSO"}}
    assert legacy.held_call(waiting.id, "call-1") is None  # released once the call ended


def test_past_the_wait_the_server_is_answered_cancel_and_the_model_is_told(
    memory: Backend, desk: RunningServer
) -> None:
    # GIVEN a held live question with a short wait
    server = MCPServer(desk.url, name="old", approve="none", revision=OLD, live_wait=1.0)
    agent = mcp_agent(server, "old__ask_live", {"title": "VPN down"})
    waiting = memory.runner([agent]).run(agent, "conv-live-late", "open a ticket")
    held = legacy.held_call(waiting.id, "call-1")
    assert held is not None
    answered_before = len(_answers_posted(desk))
    # WHEN nobody answers: the held call answers cancel itself once the wait is over
    _until(lambda: len(_answers_posted(desk)) > answered_before)
    (posted,) = _answers_posted(desk)[answered_before:]
    assert posted["result"] == {"action": "cancel"}
    # ... and the card expires with the same deadline (the sweeper's pass)
    memory.clock.advance(2)
    memory.runner([agent]).expire_overdue()
    Worker(memory.runner([agent])).process(waiting.id)
    # THEN the turn goes on: the model reads the server's answer to cancel and why it was cancelled
    done = memory.store.load(waiting.id)
    assert done.status is TurnStatus.COMPLETED
    result = tool_result(done)
    assert result["text"] == "not created: the person chose cancel"
    assert "nobody answered within 1 s" in result["note"]
    (card,) = [c for c in done.cards if isinstance(c, FormMessage)]
    assert card.status == "EXPIRED"


def test_a_replay_in_a_process_that_does_not_hold_the_call_tells_the_model_the_outcome_is_unknown(
    memory: Backend, desk: RunningServer
) -> None:
    # GIVEN a live question waiting on its card
    server = MCPServer(desk.url, name="old", approve="none", revision=OLD, live_wait=1.0)
    agent = mcp_agent(server, "old__ask_live", {"title": "VPN down"})
    waiting = memory.runner([agent]).run(agent, "conv-live-lost", "open a ticket")
    (card,) = waiting.pending_cards()
    # WHEN the process that held the call is gone (its calls are not held here) and a person answers
    with legacy._lock:
        legacy._held.clear()
    memory.runner([agent]).submit_resume(waiting.id, ResumeCommand.submit_form(card.action_id, {"system": "SSO"}))
    Worker(memory.runner([agent])).process(waiting.id)
    # THEN the model is told, as a tool error, that the question cannot be answered and the outcome is unknown
    done = memory.store.load(waiting.id)
    assert done.status is TurnStatus.COMPLETED
    result = tool_result(done)
    assert result["status"] == "error"
    assert "no longer holds" in result["message"]
    assert "unknown" in result["message"]
    assert json.dumps(result)  # plain JSON for the model


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [({"revision": "2024-11-05"}, "revision='2024-11-05'"), ({"revision": OLD, "live_wait": 0}, "live_wait=0")],
)
def test_a_revision_this_client_does_not_speak_or_an_unbounded_wait_is_refused_when_the_agent_is_built(
    kwargs: dict[str, Any], named: str
) -> None:
    # GIVEN a server description with a revision agentturn does not speak, or a wait that holds nothing
    # WHEN it is built THEN it is refused, naming the setting
    with pytest.raises(MCPConfigError, match=re.escape(named)):
        MCPServer("http://127.0.0.1:9/mcp", **kwargs)
