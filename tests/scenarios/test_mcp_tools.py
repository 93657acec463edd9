"""MCP servers as a tool source, with durable elicitation (MCP 2026-07-28), against a FastMCP 4 server on
127.0.0.1 (:mod:`tests.support.mcp_server`): the runner, the worker and the stores in memory or on DynamoDB Local."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentturn import (
    Agent,
    ApprovalMessage,
    ExecutionPolicy,
    FormMessage,
    FormStatus,
    FormValidationError,
    MCPServer,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolMessage,
    TurnStatus,
    Worker,
)
from agentturn.mcp import MCPConfigError, listing
from agentturn.mcp.calls import IDEMPOTENCY_META_KEY
from agentturn.mcp.listing import clear_cache
from tests.scenarios.conftest import Backend, _memory_backend
from tests.scenarios.scripts import ai_calls, final_from_last_tool, reply_after_tools
from tests.support import mcp_server
from tests.support.mcp_server import RunningServer

THREE_DAYS = 3 * 24 * 3600


@pytest.fixture(autouse=True)
def _fresh_listing() -> Iterator[None]:
    clear_cache()  # each test lists as a new process would
    yield
    clear_cache()


@pytest.fixture
def memory() -> Iterator[Backend]:
    yield from _memory_backend()


def mcp_agent(server: MCPServer, tool: str, arguments: dict[str, Any], **kwargs: Any) -> Agent:
    return Agent(
        id="mcp-agent",
        instructions="Use the desk server's tools.",
        chat_model=ScriptedChatModel(reply_after_tools(ai_calls(("call-1", tool, arguments)), final_from_last_tool)),
        mcp_servers=[server],
        **kwargs,
    )


def tool_result(turn: Any) -> Any:
    results = [m for m in turn.messages if isinstance(m, ToolMessage)]
    assert len(results) == 1
    return results[0].content


def wire(exchange: mcp_server.Exchange) -> dict[str, Any]:
    response: dict[str, Any] = json.loads(exchange.response)
    return response


def test_a_servers_question_waits_three_days_and_the_retry_carries_its_state_byte_for_byte(
    backend: Backend, desk: RunningServer
) -> None:
    # GIVEN an agent whose model calls the desk server's ticket tool, which asks which system is affected
    server = MCPServer(desk.url, name="desk", approve="none")
    agent = mcp_agent(server, "desk__create_ticket", {"title": "login down"})
    before = len(desk.recorder.calls("create_ticket"))
    # WHEN the turn runs
    waiting = backend.runner([agent]).run(agent, "conv-mcp", "open a ticket")
    # THEN it waits on one card, labelled with the server, whose schema is the server's requestedSchema
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    (card,) = waiting.pending_cards()
    assert isinstance(card, FormMessage)
    assert card.schema["title"] == "desk (MCP server)"
    assert card.schema["description"] == "Which system is affected?"
    assert card.schema["properties"] == mcp_server.SYSTEM_SCHEMA["properties"]
    assert card.tool_name == "desk__create_ticket"
    first = desk.recorder.calls("create_ticket")[before]
    sent_state = wire(first)["result"]["requestState"]
    stored = backend.store.load(waiting.id).tool_states["call-1"].round_state
    assert stored == {
        "mcp": {
            "server": "desk",
            "url": desk.url,
            "tool": "create_ticket",
            "arguments": {"title": "login down"},
            "toolCallId": "call-1",
            "keys": ["system_question"],
            "requestState": sent_state,
        }
    }
    # ... and no card, no timeline entry shows the server's state
    assert sent_state not in json.dumps([m.to_wire() for m in backend.memory("conv-mcp").get_messages(50)])

    # WHEN a person answers three days later, and a worker of a new process (a new Runner) continues
    backend.clock.advance(THREE_DAYS)
    backend.runner([agent]).submit_resume(
        waiting.id, ResumeCommand.submit_form(card.action_id, {"system": "SSO", "urgent": True})
    )
    result = Worker(backend.runner([agent])).process(waiting.id)
    done = backend.store.load(waiting.id)

    # THEN the server got a new request id, the answer under its key and its requestState exactly as it sent it
    assert result.turn is not None and done.status is TurnStatus.COMPLETED
    retry = desk.recorder.calls("create_ticket")[before + 1]
    params = retry.request["params"]
    assert retry.request["id"] != first.request["id"]
    assert params["requestState"] == sent_state
    assert json.dumps(sent_state).encode() in retry.raw_request
    assert params["inputResponses"] == {
        "system_question": {"action": "accept", "content": {"system": "SSO", "urgent": True}}
    }
    assert params["arguments"] == {"title": "login down"}
    assert params["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {
        "elicitation": {"form": {}, "url": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    }
    key = params["_meta"][IDEMPOTENCY_META_KEY]
    assert key == first.request["params"]["_meta"][IDEMPOTENCY_META_KEY] == f"{waiting.id}:call-1"
    # ... the model read the server's text, and the round's state left the snapshot with the call
    assert tool_result(done)["text"].startswith("created 'login down' for SSO (urgent=True")
    assert done.tool_states["call-1"].round_state is None
    assert done.tool_states["call-1"].round_answers is None
    assert [c.status for c in done.cards] == [FormStatus.SUBMITTED]


def test_a_server_that_no_longer_accepts_its_state_gets_the_answers_again_without_it(memory: Backend) -> None:
    # GIVEN a turn waiting on a server's question, and the server restarted meanwhile (its state key is new)
    first = mcp_server.start()
    try:
        agent = mcp_agent(MCPServer(first.url, name="desk", approve="none"), "desk__create_ticket", {"title": "t"})
        runner = memory.runner([agent])
        waiting = runner.run(agent, "conv-restart", "ticket")
    finally:
        first.stop()
    port = int(first.url.split(":")[2].split("/")[0])
    second = mcp_server.start(port, first.recorder)
    try:
        # WHEN the person answers
        done = runner.resume(waiting.id, ResumeCommand.submit_form(waiting.suspension.action_id, {"system": "SSO"}))
        # THEN the server refused the old state, was sent the answers again without it, and completed the call
        refused, fresh = [e.request["params"] for e in second.recorder.calls("create_ticket")[-2:]]
        assert "requestState" in refused and "requestState" not in fresh
        assert fresh["inputResponses"] == refused["inputResponses"]
        assert b"Invalid or expired requestState" in second.recorder.calls("create_ticket")[-2].response
        assert done.status is TurnStatus.COMPLETED
        assert tool_result(done)["text"].startswith("created 't' for SSO")
    finally:
        second.stop()


def test_two_questions_of_one_round_are_two_cards_and_the_retry_waits_for_both(
    backend: Backend, desk: RunningServer
) -> None:
    # GIVEN a server that asks two questions at once
    agent = mcp_agent(MCPServer(desk.url, name="desk", approve="none"), "desk__book_trip", {})
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv-two", "book")
    # THEN the turn waits on two cards, one per key, each with its own action id
    cards = waiting.pending_cards()
    assert [c.action_id for c in cards] == ["call-1~r1~0", "call-1~r1~1"]
    assert [c.schema["description"] for c in cards if isinstance(c, FormMessage)] == ["Which city?", "What budget?"]
    calls = len(desk.recorder.calls("book_trip"))
    # WHEN only the first is answered, THEN the turn still waits and the server hears nothing
    half = runner.resume(waiting.id, ResumeCommand.submit_form("call-1~r1~0", {"city": "Lyon"}))
    assert half.status is TurnStatus.WAITING_FOR_USER
    assert len(desk.recorder.calls("book_trip")) == calls
    # WHEN the second is declined, THEN one retry carries both answers under their keys
    done = runner.resume(waiting.id, ResumeCommand.decline_input("call-1~r1~1"))
    retry = desk.recorder.calls("book_trip")[-1].request["params"]
    assert retry["inputResponses"] == {
        "city": {"action": "accept", "content": {"city": "Lyon"}},
        "budget": {"action": "decline"},
    }
    assert len(desk.recorder.calls("book_trip")) == calls + 1
    assert tool_result(done)["text"] == "city: accept, budget: decline"
    assert [c.status for c in done.cards] == [FormStatus.SUBMITTED, FormStatus.DECLINED]


def test_a_declined_question_is_sent_as_decline_and_the_model_reads_the_servers_answer(
    memory: Backend, desk: RunningServer
) -> None:
    # GIVEN a turn waiting on the server's question
    agent = mcp_agent(MCPServer(desk.url, name="desk", approve="none"), "desk__create_ticket", {"title": "t"})
    runner = memory.runner([agent])
    waiting = runner.run(agent, "conv-decline", "ticket")
    # WHEN the person declines it
    done = runner.resume(waiting.id, ResumeCommand.decline_input(waiting.suspension.action_id, "not now"))
    # THEN the server was told "decline", and its answer reached the model
    assert desk.recorder.calls("create_ticket")[-1].request["params"]["inputResponses"] == {
        "system_question": {"action": "decline"}
    }
    assert done.status is TurnStatus.COMPLETED
    assert tool_result(done)["text"] == "not created: the person chose decline"
    assert done.cards[0].status is FormStatus.DECLINED


def test_an_agent_that_redacts_answers_redacts_the_mcp_cards_once_the_call_completes(
    memory: Backend, desk: RunningServer
) -> None:
    agent = mcp_agent(
        MCPServer(desk.url, name="desk", approve="none"),
        "desk__create_ticket",
        {"title": "t"},
        policy=ExecutionPolicy(redact_submitted_values=True),
    )
    runner = memory.runner([agent])
    waiting = runner.run(agent, "conv-redact", "ticket")
    done = runner.resume(waiting.id, ResumeCommand.submit_form(waiting.suspension.action_id, {"system": "SSO"}))
    (card,) = done.cards
    assert isinstance(card, FormMessage)
    assert card.values_redacted and card.submitted_values is None
    shown = [m for m in memory.memory("conv-redact").get_messages(50) if isinstance(m, FormMessage)]
    assert [(m.values_redacted, m.submitted_values) for m in shown] == [(True, None)]


def test_a_question_nobody_answers_in_time_is_sent_as_cancel(memory: Backend, desk: RunningServer) -> None:
    # GIVEN a turn whose agent gives a person an hour to answer
    agent = mcp_agent(
        MCPServer(desk.url, name="desk", approve="none"),
        "desk__create_ticket",
        {"title": "t"},
        policy=ExecutionPolicy(input_timeout=3600),
    )
    runner = memory.runner([agent])
    waiting = runner.run(agent, "conv-expire", "ticket")
    # WHEN the hour passes and the wait expires
    memory.clock.advance(3601)
    runner.expire(waiting.id)
    Worker(memory.runner([agent])).process(waiting.id)
    done = memory.store.load(waiting.id)
    # THEN the server is retried with "cancel" (dismissed), and the card shows EXPIRED
    assert desk.recorder.calls("create_ticket")[-1].request["params"]["inputResponses"] == {
        "system_question": {"action": "cancel"}
    }
    assert tool_result(done)["text"] == "not created: the person chose cancel"
    assert done.cards[0].status is FormStatus.EXPIRED


def test_a_tool_not_marked_read_only_waits_for_approval_by_default(memory: Backend, desk: RunningServer) -> None:
    # GIVEN the default policy (ask before any tool the server does not mark read-only)
    agent = mcp_agent(MCPServer(desk.url, name="desk"), "desk__create_ticket", {"title": "t"})
    runner = memory.runner([agent])
    before = len(desk.recorder.calls("create_ticket"))
    # WHEN the model calls the ticket tool
    waiting = runner.run(agent, "conv-approve", "ticket")
    # THEN a person is asked first, and nothing reached the server
    assert waiting.status is TurnStatus.WAITING_FOR_APPROVAL
    assert isinstance(waiting.cards[0], ApprovalMessage)
    assert "desk" in waiting.cards[0].message
    assert len(desk.recorder.calls("create_ticket")) == before
    # WHEN approved, THEN the call goes out and the server's question follows
    asked = runner.resume(waiting.id, ResumeCommand.approve_tool("call-1"))
    assert asked.status is TurnStatus.WAITING_FOR_USER
    assert len(desk.recorder.calls("create_ticket")) == before + 1


def test_a_read_only_tool_runs_without_approval_and_its_structured_content_is_checked(
    memory: Backend, desk: RunningServer
) -> None:
    agent = mcp_agent(MCPServer(desk.url, name="desk"), "desk__lookup", {"ticket": "T-1"})
    done = memory.runner([agent]).run(agent, "conv-lookup", "look")
    assert done.status is TurnStatus.COMPLETED
    assert tool_result(done)["structuredContent"] == {"ticket": "T-1", "state": "open"}
    # a read-only call carries no idempotency key (nothing to repeat)
    assert IDEMPOTENCY_META_KEY not in desk.recorder.calls("lookup")[-1].request["params"].get("_meta", {})


@pytest.mark.parametrize(
    ("tool", "arguments", "server_kwargs", "expected"),
    [
        ("desk__boom", {}, {}, "the ticket database is down"),
        ("desk__wrong_output", {}, {}, "breaks its outputSchema: /count: "),
        ("desk__nested_question", {}, {}, "MCP forms hold only primitive fields"),
        ("desk__huge_state", {}, {}, "bytes; at most 65536 are kept while a person answers"),
        ("desk__never_answers", {}, {"timeout": 1.0}, "did not answer tools/call within 1 s"),
        ("desk__plain_http_link", {}, {}, "which is not an https:// URL"),
    ],
)
def test_a_failing_server_is_a_tool_error_the_model_reads_never_a_failed_turn(
    memory: Backend,
    desk: RunningServer,
    tool: str,
    arguments: dict[str, Any],
    server_kwargs: dict[str, Any],
    expected: str,
) -> None:
    # GIVEN a server whose tool fails, lies about its output, asks outside the subset, sends too much state
    # or never answers; the agent would fail its turn on a Python tool's exception
    server = MCPServer(desk.url, name="desk", approve="none", **server_kwargs)
    agent = mcp_agent(server, tool, arguments, policy=ExecutionPolicy(on_tool_error="fail_turn"))
    # WHEN the model calls it
    done = memory.runner([agent]).run(agent, f"conv-{tool}", "go")
    # THEN the turn completes and the model read why the call failed; nothing waits
    assert done.status is TurnStatus.COMPLETED
    result = tool_result(done)
    assert result["status"] == "error"
    assert expected in result["message"]
    assert done.pending_cards() == []


@pytest.mark.parametrize(("answer", "told"), [("accept", "connection: accept"), ("decline", "connection: decline")])
def test_a_url_question_is_a_link_card_showing_the_domain_and_accept_is_consent(
    memory: Backend, desk: RunningServer, answer: str, told: str
) -> None:
    # GIVEN a server that needs the person on its own page (URL mode)
    agent = mcp_agent(MCPServer(desk.url, name="desk", approve="none"), "desk__connect_account", {})
    runner = memory.runner([agent])
    # WHEN the model calls the tool
    waiting = runner.run(agent, f"conv-url-{answer}", "connect")
    # THEN the card has nothing to fill in and shows the domain and the link as text
    (card,) = waiting.pending_cards()
    assert isinstance(card, FormMessage)
    assert card.schema["properties"] == {}
    assert card.schema["title"] == "desk asks you to open accounts.example.com"
    assert mcp_server.CONNECT_URL in card.schema["description"]
    assert waiting.suspension.metadata["origin"]["domain"] == "accounts.example.com"
    # WHEN the person consents (submits) or declines, THEN the retry says so, with no content for a link
    command = (
        ResumeCommand.submit_form(card.action_id, {})
        if answer == "accept"
        else ResumeCommand.decline_input(card.action_id)
    )
    done = runner.resume(waiting.id, command)
    assert desk.recorder.calls("connect_account")[-1].request["params"]["inputResponses"] == {
        "connect": {"action": answer}
    }
    assert tool_result(done)["text"] == told


def test_a_question_asked_again_under_its_key_opens_a_new_card_prefilled_with_the_last_answer(
    memory: Backend, desk: RunningServer
) -> None:
    # GIVEN a server that re-asks (same key) when the answer does not satisfy it
    agent = mcp_agent(MCPServer(desk.url, name="desk", approve="none"), "desk__strict_ticket", {})
    runner = memory.runner([agent])
    first = runner.run(agent, "conv-again", "ticket")
    # WHEN the person answers "unknown"
    again = runner.resume(first.id, ResumeCommand.submit_form(first.suspension.action_id, {"system": "unknown"}))
    # THEN the turn waits on a new card of round 2, its field pre-filled with that answer; the first card stays
    assert again.status is TurnStatus.WAITING_FOR_USER
    assert again.suspension.action_id == "call-1~r2~0"
    new_card = next(c for c in again.pending_cards())
    assert isinstance(new_card, FormMessage)
    assert new_card.schema["properties"]["system"]["default"] == "unknown"
    assert [c.status for c in again.cards] == [FormStatus.SUBMITTED, FormStatus.PENDING]
    # WHEN answered properly, THEN the call completes
    done = runner.resume(again.id, ResumeCommand.submit_form(again.suspension.action_id, {"system": "SSO"}))
    assert tool_result(done)["text"] == "created for SSO"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"jsonrpc": "2.0", "result": {"resultType": "later"}}, "unknown resultType 'later'"),
        ({"jsonrpc": "2.0", "result": {"content": "text"}}, "content that is not a list"),
        ({"jsonrpc": "2.0", "result": "yes"}, "without a result object"),
        ({"jsonrpc": "1.0", "result": {}}, "not JSON-RPC 2.0"),
        ({"jsonrpc": "2.0", "id": "someone-else", "result": {}}, "another request id"),
        ({"jsonrpc": "2.0", "error": {"code": -32602, "message": "bad args"}}, "answered error -32602: bad args"),
        (
            {"jsonrpc": "2.0", "result": {"resultType": "input_required", "inputRequests": []}},
            "inputRequests that is not an object",
        ),
        (
            {"jsonrpc": "2.0", "result": {"resultType": "input_required", "requestState": 7, "inputRequests": {}}},
            "requestState that is not a string",
        ),
        (
            {
                "jsonrpc": "2.0",
                "result": {
                    "resultType": "input_required",
                    "inputRequests": {"s": {"method": "sampling/createMessage", "params": {}}},
                },
            },
            "declared only elicitation",
        ),
        (
            {
                "jsonrpc": "2.0",
                "result": {
                    "resultType": "input_required",
                    "inputRequests": {"q": {"method": "elicitation/create", "params": {"mode": "form"}}},
                },
            },
            "has no message",
        ),
    ],
)
def test_a_server_that_answers_garbage_is_a_tool_error(
    memory: Backend, desk: RunningServer, answer: dict[str, Any], expected: str
) -> None:
    desk.recorder.scripted.append((answer, False))
    agent = mcp_agent(MCPServer(desk.scripted_url, name="odd"), "odd__odd", {})
    done = memory.runner([agent]).run(agent, "conv-odd", "go")
    assert done.status is TurnStatus.COMPLETED
    assert expected in tool_result(done)["message"]


def test_an_answer_streamed_as_server_sent_events_is_read_past_notifications(
    memory: Backend, desk: RunningServer
) -> None:
    answer = {"jsonrpc": "2.0", "result": {"content": [{"type": "text", "text": "streamed"}], "resultType": "complete"}}
    desk.recorder.scripted.append((answer, True))
    agent = mcp_agent(MCPServer(desk.scripted_url, name="odd"), "odd__odd", {})
    done = memory.runner([agent]).run(agent, "conv-sse", "go")
    assert tool_result(done) == {"text": "streamed"}


def test_state_without_a_question_is_retried_at_once_with_the_state(memory: Backend, desk: RunningServer) -> None:
    # GIVEN a server that answers first with only a requestState (no question), then with its result
    desk.recorder.scripted.append(
        ({"jsonrpc": "2.0", "result": {"resultType": "input_required", "requestState": "s1"}}, False)
    )
    desk.answer_next({"content": [{"type": "text", "text": "ok"}]})
    before = len(desk.recorder.exchanges)
    agent = mcp_agent(MCPServer(desk.scripted_url, name="odd"), "odd__odd", {})
    # WHEN the model calls the tool
    done = memory.runner([agent]).run(agent, "conv-state-only", "go")
    # THEN the call is retried at once with the state and no responses, and nobody is asked
    assert tool_result(done) == {"text": "ok"}
    assert done.cards == []
    calls = [e.request for e in desk.recorder.exchanges[before:] if e.request.get("method") == "tools/call"]
    assert len(calls) == 2 and calls[0]["id"] != calls[1]["id"]
    assert calls[1]["params"]["requestState"] == "s1" and "inputResponses" not in calls[1]["params"]


def test_a_server_that_asks_forever_is_given_up_after_the_round_limit(memory: Backend, desk: RunningServer) -> None:
    # GIVEN a server that asks a new question on every retry, and a limit of 3 rounds
    agent = mcp_agent(MCPServer(desk.url, name="desk", approve="none", max_rounds=3), "desk__ask_forever", {})
    runner = memory.runner([agent])
    turn = runner.run(agent, "conv-forever", "go")
    # WHEN a person answers every question
    answered = 0
    while turn.status is TurnStatus.WAITING_FOR_USER:
        assert answered < 5
        turn = runner.resume(turn.id, ResumeCommand.submit_form(turn.suspension.action_id, {"system": "SSO"}))
        answered += 1
    # THEN after 3 rounds the model is told the server was given up on
    assert answered == 3
    assert "the limit is 3" in tool_result(turn)["message"]
    assert [card.schema["description"] for card in turn.cards] == ["Question 1?", "Question 2?", "Question 3?"]
    # ... and a key asked again comes pre-filled with the last answer (here each key is new: nothing pre-filled)
    assert all("default" not in card.schema["properties"]["system"] for card in turn.cards)


def test_an_answer_outside_the_servers_schema_is_refused_and_changes_nothing(
    memory: Backend, desk: RunningServer
) -> None:
    agent = mcp_agent(MCPServer(desk.url, name="desk", approve="none"), "desk__create_ticket", {"title": "t"})
    runner = memory.runner([agent])
    waiting = runner.run(agent, "conv-garbage", "ticket")
    calls = len(desk.recorder.calls("create_ticket"))
    for garbage in ({"system": 7}, {"system": "x"}, {"system": "SSO", "extra": 1}, {}, {"system": ["SSO"]}):
        with pytest.raises(FormValidationError):
            runner.submit_resume(waiting.id, ResumeCommand.submit_form(waiting.suspension.action_id, garbage))
    assert memory.store.load(waiting.id).version == waiting.version
    assert len(desk.recorder.calls("create_ticket")) == calls


def test_an_unreachable_or_garbage_server_offers_no_tools_and_the_model_is_told(
    memory: Backend, desk: RunningServer
) -> None:
    agent = mcp_agent(MCPServer(desk.garbage_url, name="desk"), "desk__lookup", {"ticket": "T-1"})
    done = memory.runner([agent]).run(agent, "conv-gone", "look")
    assert done.status is TurnStatus.COMPLETED
    assert tool_result(done)["error"] == "unknown_tool"


def test_tools_are_listed_once_per_process_and_namespaced_per_server(desk: RunningServer) -> None:
    listed = desk.recorder.count("tools/list")
    one = Agent(
        id="two-servers",
        instructions="",
        chat_model=ScriptedChatModel([]),
        tools=[Tool("lookup", "our own lookup", lambda a: a)],
        mcp_servers=[MCPServer(desk.url, name="desk"), MCPServer(desk.url, name="archive")],
    )
    names = set(one.tools)
    assert {"lookup", "desk__lookup", "archive__lookup", "desk__create_ticket"} <= names
    assert one.tools["desk__lookup"].parameters["required"] == ["ticket"]
    one.tool_specs()
    assert desk.recorder.count("tools/list") == listed + 1  # two names, one URL and one identity: one listing


def test_arguments_annotated_x_mcp_header_are_mirrored_into_headers(memory: Backend, desk: RunningServer) -> None:
    agent = mcp_agent(MCPServer(desk.url, name="desk"), "desk__regional", {"region": "eu-ünï", "query": "q"})
    done = memory.runner([agent]).run(agent, "conv-region", "go")
    assert tool_result(done)["text"] == "q in eu-ünï"
    headers = desk.recorder.calls("regional")[-1].headers
    assert headers["mcp-param-region"] == "=?base64?" + base64.b64encode("eu-ünï".encode()).decode() + "?="
    assert (headers["mcp-method"], headers["mcp-name"]) == ("tools/call", "regional")
    assert headers["mcp-protocol-version"] == "2026-07-28"


@pytest.mark.parametrize(
    ("schema", "accepted"),
    [
        ({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}, True),
        ({"type": "object", "properties": {"r": {"type": "number", "x-mcp-header": "R"}}}, False),
        ({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R R"}}}, False),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "R"}}},
            },
            False,
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "R"},
                    "b": {"type": "string", "x-mcp-header": "r"},
                },
            },
            False,
        ),
    ],
)
def test_a_tool_whose_x_mcp_header_breaks_the_rules_is_not_offered(schema: dict[str, Any], accepted: bool) -> None:
    entry = {"name": "t", "inputSchema": schema}
    assert (listing._tool(MCPServer("https://x.example/mcp", name="x"), entry) is not None) is accepted


@pytest.mark.parametrize(
    "url", ["http://example.com/mcp", "ftp://127.0.0.1/mcp", "https://user:pw@example.com/mcp", "mcp.example.com"]
)
def test_plain_http_is_refused_except_to_loopback(url: str) -> None:
    with pytest.raises(MCPConfigError):
        MCPServer(url)


def test_two_servers_with_one_name_are_refused() -> None:
    with pytest.raises(MCPConfigError, match="named 'desk'"):
        Agent(
            id="a",
            instructions="",
            chat_model=ScriptedChatModel([]),
            mcp_servers=[
                MCPServer("https://a.example/mcp", name="desk"),
                MCPServer("https://b.example/mcp", name="desk"),
            ],
        )


@pytest.mark.parametrize(
    ("approve", "annotations", "asks"),
    [
        ("unless_read_only", {"readOnlyHint": True}, False),
        ("unless_read_only", {"destructiveHint": False}, True),
        ("unless_read_only", {}, True),
        ("destructive", {}, True),  # MCP's default: not read-only means destructive
        ("destructive", {"destructiveHint": False}, False),
        ("destructive", {"readOnlyHint": True}, False),
        ("all", {"readOnlyHint": True}, True),
        ("none", {"destructiveHint": True}, False),
    ],
)
def test_each_server_decides_which_calls_wait_for_a_person(
    approve: str, annotations: dict[str, Any], asks: bool
) -> None:
    from agentturn.mcp.calls import MCPToolAdapter
    from agentturn.mcp.toolset import needs_approval

    tool = listing.MCPTool(name="t", description="", input_schema={"type": "object"}, annotations=annotations)
    adapter = MCPToolAdapter(MCPServer("https://x.example/mcp", name="x", approve=approve), tool)
    assert needs_approval(adapter, {}) is asks


def test_a_predicate_sees_the_tool_and_the_arguments(memory: Backend, desk: RunningServer) -> None:
    # GIVEN a server whose calls need approval only for tickets about production
    seen: list[tuple[str, dict[str, Any]]] = []

    def production_only(tool: listing.MCPTool, arguments: dict[str, Any]) -> bool:
        seen.append((tool.name, arguments))
        return "prod" in str(arguments.get("title"))

    server = MCPServer(desk.url, name="desk", approve=production_only)
    calm = mcp_agent(server, "desk__create_ticket", {"title": "staging"})
    assert memory.runner([calm]).run(calm, "conv-p1", "go").status is TurnStatus.WAITING_FOR_USER
    urgent = mcp_agent(server, "desk__create_ticket", {"title": "prod is down"})
    assert memory.runner([urgent]).run(urgent, "conv-p2", "go").status is TurnStatus.WAITING_FOR_APPROVAL
    assert seen == [("create_ticket", {"title": "staging"}), ("create_ticket", {"title": "prod is down"})]


def test_the_agents_own_policy_is_asked_first_and_its_deny_stands(memory: Backend, desk: RunningServer) -> None:
    from agentturn import ToolApprovalDecision

    agent = mcp_agent(
        MCPServer(desk.url, name="desk", approve="none"),
        "desk__create_ticket",
        {"title": "t"},
        approval_policy=lambda turn, call, tool: ToolApprovalDecision.deny("no tickets today"),
    )
    done = memory.runner([agent]).run(agent, "conv-deny", "go")
    assert tool_result(done)["status"] == "denied"
    assert tool_result(done)["reason"] == "no tickets today"


def test_headers_from_a_function_are_read_for_each_request_and_sent(memory: Backend, desk: RunningServer) -> None:
    # GIVEN headers read from a secret store (a function), e.g. a bearer token
    reads: list[int] = []

    def token() -> dict[str, str]:
        reads.append(1)
        return {"Authorization": "Bearer s3cret"}

    server = MCPServer(desk.url, name="desk", headers=token)
    agent = mcp_agent(server, "desk__lookup", {"ticket": "T-9"})
    # WHEN a turn lists the tools and calls one
    done = memory.runner([agent]).run(agent, "conv-token", "look")
    # THEN each request carried the token, and the store was read once per request, not per lookup of a tool
    assert done.status is TurnStatus.COMPLETED
    assert desk.recorder.calls("lookup")[-1].headers["authorization"] == "Bearer s3cret"
    assert len(reads) == 2  # tools/list and tools/call
    assert "s3cret" not in repr(server)
