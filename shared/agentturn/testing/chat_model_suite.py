"""The chat-model conformance suite: an adapter maps its provider's answers and failures onto agentturn's
model the same way every other adapter does.

Subclass :class:`ChatModelSuite` in a test module and provide a ``provider`` fixture returning a fresh
:class:`~agentturn.testing.ProviderScript` per test. The scenarios: a tool-call round trip, malformed tool
arguments, each failure kind with its ``retryable``, and a whole form cycle of the demo support agent;
then the same answers streamed (``model.stream``): text told in pieces that join to the whole reply, tool
calls assembled from their pieces, failures typed, and the form cycle ending in the same state.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from agentturn import ResumeCommand, Runner
from agentturn.agents.tools import ToolSpec
from agentturn.demo import TicketLedger, demo_agents
from agentturn.errors import ModelError, ModelErrorKind
from agentturn.ports.chat_model import ChatModel, ChatRequest, TextDelta, collect
from agentturn.state.messages import AiMessage, ToolCall, ToolMessage, UserMessage
from agentturn.state.turn import TurnStatus
from agentturn.testing.provider import ProviderScript

__all__ = ["RETRYABLE_KINDS", "ChatModelSuite"]

#: A failure of these kinds may pass if the same request is sent again; of any other kind, it will not.
RETRYABLE_KINDS: Final = frozenset(
    {ModelErrorKind.THROTTLED, ModelErrorKind.TIMEOUT, ModelErrorKind.CONNECTION, ModelErrorKind.SERVER_ERROR}
)
#: The failures a provider answers with (MALFORMED_RESPONSE and CONFIGURATION have their own scenarios).
PROVIDER_FAILURES: Final = (
    ModelErrorKind.THROTTLED,
    ModelErrorKind.INVALID_REQUEST,
    ModelErrorKind.AUTH,
    ModelErrorKind.NOT_FOUND,
    ModelErrorKind.TIMEOUT,
    ModelErrorKind.CONNECTION,
    ModelErrorKind.SERVER_ERROR,
)

SYSTEM = "Help with incident tickets. Never guess missing fields."
TICKET_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "priority": {"type": "string", "enum": ["LOW", "NORMAL", "HIGH"]}},
    "required": ["title"],
}
TOOLS = [
    ToolSpec("create_support_ticket", "创建故障工单 (create an incident ticket)", TICKET_PARAMETERS),
    ToolSpec("lookup_user", "Find a user by email.", {"type": "object", "properties": {"email": {"type": "string"}}}),
]


def _ask(text: str = "create a high priority login incident ticket") -> ChatRequest:
    return ChatRequest(system=SYSTEM, messages=[UserMessage(content=text)], tools=TOOLS)


class _WholeAnswers:
    """The adapter without ``stream``: the runner asks it for whole answers."""

    def __init__(self, model: ChatModel) -> None:
        self._model = model

    def chat(self, request: ChatRequest) -> AiMessage:
        return self._model.chat(request)


class ChatModelSuite:
    """The chat-model contract; subclass it as ``Test...`` and provide the ``provider`` fixture."""

    def test_a_tool_call_round_trips(self, provider: ProviderScript) -> None:
        # GIVEN a provider whose model first calls two tools, then answers in text
        calls = [
            ToolCall(id="call-lookup-1", name="lookup_user", arguments={}),
            ToolCall(
                id="call-ticket-1",
                name="create_support_ticket",
                arguments={"title": "登录故障 (login failure)", "priority": "HIGH"},
            ),
        ]
        provider.answer_tool_calls(calls)

        # WHEN the model is asked
        reply = provider.model.chat(_ask())

        # THEN both calls come back with their ids and arguments, in order
        assert reply.tool_calls == calls

        # WHEN it is asked again with both results (one a failure, one an object)
        failed = {"status": "error", "error": "tool_failed", "message": "KeyError: 'email'"}
        ticket = {"id": "TICKET-1A2B3C4D", "title": "登录故障 (login failure)", "priority": "HIGH"}
        results = [
            ToolMessage(tool_call_id="call-lookup-1", content=failed, tool_name="lookup_user"),
            ToolMessage(tool_call_id="call-ticket-1", content=ticket, tool_name="create_support_ticket"),
        ]
        provider.answer_text("Ticket TICKET-1A2B3C4D is filed.")
        final = provider.model.chat(
            ChatRequest(system=SYSTEM, messages=[*_ask().messages, reply, *results], tools=TOOLS)
        )

        # THEN the answer is the text, and each result reached the provider under its call's id, intact
        assert final == AiMessage(content="Ticket TICKET-1A2B3C4D is filed.")
        assert provider.sent_tool_results() == [("call-lookup-1", failed), ("call-ticket-1", ticket)]

    def test_malformed_tool_arguments_are_a_model_error(self, provider: ProviderScript) -> None:
        # GIVEN a provider whose model calls the ticket tool with arguments that are not a JSON object
        provider.answer_malformed_arguments("create_support_ticket")

        # WHEN the model is asked
        with pytest.raises(ModelError) as raised:
            provider.model.chat(_ask())

        # THEN no tool would run on guessed arguments: the call fails as a malformed response. (Whether asking
        # again may help is the adapter's call, and adapters differ today: Bedrock reports its
        # ``malformed_tool_use`` as retryable, since sampling may produce a valid call next time; the
        # OpenAI-compatible adapter does not. The suite pins only that it is a bool.)
        error = raised.value
        assert error.kind is ModelErrorKind.MALFORMED_RESPONSE
        assert isinstance(error.retryable, bool)
        assert error.provider
        assert error.model

    @pytest.mark.parametrize("kind", PROVIDER_FAILURES, ids=[k.value for k in PROVIDER_FAILURES])
    def test_a_provider_failure_is_a_typed_model_error(self, provider: ProviderScript, kind: ModelErrorKind) -> None:
        if kind not in provider.failure_kinds:
            pytest.skip(f"this provider script cannot answer with a {kind.value} failure")
        # GIVEN a provider that fails the request in the way that means ``kind``
        provider.fail(kind)

        # WHEN the model is asked
        with pytest.raises(ModelError) as raised:
            provider.model.chat(_ask())

        # THEN the error names the kind, and says whether the same request may pass later
        error = raised.value
        assert (error.kind, error.retryable) == (kind, kind in RETRYABLE_KINDS)
        assert kind.value in str(error)

    @pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
    def test_the_demo_support_agent_runs_a_form_cycle(self, provider: ProviderScript, streamed: bool) -> None:
        # GIVEN the demo support agent on the adapter (streaming, or asked for whole answers), whose model
        # calls the ticket tool
        provider.streaming = streamed
        ledger = TicketLedger()
        model = provider.model if streamed else _WholeAnswers(provider.model)
        agents = demo_agents(ledger, chat_model=model)
        agent = next(a for a in agents if a.id == "support-agent")
        runner = Runner(agents=agents)
        provider.answer_tool_calls(
            [ToolCall(id="call-form-1", name="create_support_ticket", arguments={"title": "login failure"})]
        )

        # WHEN the user asks for a ticket
        waiting = runner.run(agent, "conversation-1", "create a high priority login incident ticket")

        # THEN the tool asks for its form under the provider's call id
        assert waiting.status is TurnStatus.WAITING_FOR_USER
        assert waiting.suspension is not None
        assert waiting.suspension.correlation_id == "call-form-1"

        # WHEN the form is submitted and the model then answers in text
        provider.answer_text("Ticket filed.")
        data = {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}
        done = runner.resume(waiting.id, ResumeCommand.user_input("call-form-1", data))

        # THEN the turn completes with that answer, the ticket holds the form's values, and the replayed tool's
        # result reached the provider under the same call id
        assert done.status is TurnStatus.COMPLETED
        assert done.final_output == "Ticket filed."
        [ticket] = ledger.entries.values()
        assert ticket["affectedSystem"] == "SSO"
        assert provider.sent_tool_results() == [("call-form-1", ticket)]

    # -- streaming ----------------------------------------------------------------------------------------

    def test_a_streamed_text_answer_is_told_in_pieces_then_whole(self, provider: ProviderScript) -> None:
        # GIVEN a provider that streams a text answer
        provider.streaming = True
        text = "Ticket TICKET-1A2B3C4D is filed: 登录故障 (login failure), priority HIGH."
        provider.answer_text(text)

        # WHEN the model is asked to stream
        parts = list(provider.model.stream(_ask()))  # type: ignore[attr-defined]

        # THEN pieces of text come first, joining to the text, and the last part is the whole reply
        *pieces, reply = parts
        assert pieces
        assert all(isinstance(p, TextDelta) for p in pieces)
        assert "".join(p.text for p in pieces) == text
        assert reply == AiMessage(content=text)

    def test_streamed_tool_calls_are_assembled(self, provider: ProviderScript) -> None:
        # GIVEN a provider that streams two tool calls (their arguments in pieces)
        provider.streaming = True
        calls = [
            ToolCall(id="call-lookup-1", name="lookup_user", arguments={"email": "ops@example.com"}),
            ToolCall(
                id="call-ticket-1",
                name="create_support_ticket",
                arguments={"title": "登录故障 (login failure)", "priority": "HIGH"},
            ),
        ]
        provider.answer_tool_calls(calls)

        # WHEN the model is asked to stream
        reply = collect(provider.model.stream(_ask()))  # type: ignore[attr-defined]

        # THEN the reply holds both calls, with their ids and whole arguments, in order
        assert reply.tool_calls == calls

    def test_a_streamed_malformed_tool_call_is_a_model_error(self, provider: ProviderScript) -> None:
        # GIVEN a provider that streams a tool call whose arguments are not a JSON object
        provider.streaming = True
        provider.answer_malformed_arguments("create_support_ticket")

        # WHEN the model is asked to stream, THEN no tool would run on guessed arguments
        with pytest.raises(ModelError) as raised:
            collect(provider.model.stream(_ask()))  # type: ignore[attr-defined]
        assert raised.value.kind is ModelErrorKind.MALFORMED_RESPONSE

    @pytest.mark.parametrize("kind", PROVIDER_FAILURES, ids=[k.value for k in PROVIDER_FAILURES])
    def test_a_streamed_request_that_fails_is_a_typed_model_error(
        self, provider: ProviderScript, kind: ModelErrorKind
    ) -> None:
        if kind not in provider.failure_kinds:
            pytest.skip(f"this provider script cannot answer with a {kind.value} failure")
        # GIVEN a provider that fails the streaming request in the way that means ``kind``
        provider.streaming = True
        provider.fail(kind)

        # WHEN the model is asked to stream
        with pytest.raises(ModelError) as raised:
            collect(provider.model.stream(_ask()))  # type: ignore[attr-defined]

        # THEN the error is the same as a plain call's
        error = raised.value
        assert (error.kind, error.retryable) == (kind, kind in RETRYABLE_KINDS)
