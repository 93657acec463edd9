"""The Powertools ``APIGatewayHttpResolver`` with the routes of the served groups.

Routes are thin: they take validated inputs (pydantic bodies, typed parameters), call one
:class:`~agentturn.api.operations.Operations` method and shape the answer. What they need of the request
(the verified caller, the time left) comes from a :class:`RequestContext` the entry point puts in the
resolver's context before resolving. Every error becomes a problem document in :func:`_register_errors`.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, cast
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from agentturn.api import problems
from agentturn.api.body import header, strict_loads
from agentturn.api.identity import jwt_groups
from agentturn.api.models import (
    CONVERSATION_ID_PATTERN,
    ActionAccepted,
    ApiModel,
    ApproveRequest,
    AuditView,
    CancelAccepted,
    ConversationsView,
    DeclineRequest,
    InboxView,
    MessagesView,
    Problem,
    RejectRequest,
    RespondRequest,
    StartTurnRequest,
    SubmitFormRequest,
    TurnView,
)
from agentturn.api.operations import Operations, YieldProbe
from agentturn.api.problems import COMMON_HEADERS, ProblemError
from agentturn.api.routes import ROUTES, RouteGroup, RouteSpec
from agentturn.api.telemetry import Telemetry
from agentturn.api.views import turn_view
from agentturn.errors import AgentTurnError, StorageError
from agentturn.state.commands import ResumeCommand

_log = logging.getLogger("agentturn.api")

CONTEXT_KEY: Final = "agentturn"
MAX_IDEMPOTENCY_KEY: Final = 128
# Visible ASCII without "," (a proxy may join repeated headers with commas) and without quotes.
_IDEMPOTENCY_KEY = re.compile(rf"^[\x21\x23-\x2b\x2d-\x7e]{{1,{MAX_IDEMPOTENCY_KEY}}}$")
_TURN_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Tool call ids come from model providers (call_…, toolu_…, tooluse_…): any visible ASCII but "/".
_ACTION_ID = re.compile(r"^[\x21-\x2e\x30-\x7e]{1,256}$")
_AGENT_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


@dataclass(frozen=True)
class RequestContext:
    caller: str | None
    operations: Callable[[], Operations]
    should_yield: YieldProbe
    event: Mapping[str, Any]
    telemetry: Telemetry


# ------------------------------------------------------------------------------------ helpers


def _json(status: int, model: ApiModel, headers: Mapping[str, str] | None = None) -> Response[str]:
    return Response(
        status_code=status,
        content_type="application/json",
        body=model.to_json(),
        headers={**COMMON_HEADERS, **(headers or {})},
    )


def _problem(problem: ProblemError) -> Response[str]:
    return Response(
        status_code=problem.status,
        content_type=problems.PROBLEM_CONTENT_TYPE,
        body=problem.to_json(),
        headers={k: v for k, v in problem.response_headers().items() if k != "Content-Type"},
    )


def _segment(raw: str) -> str | None:
    """A path parameter as the caller meant it: percent-decoded once (the resolver hands over the raw text)."""
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError:
        return None


def _turn_id(raw: str) -> str:
    value = _segment(raw)
    if value is None or not _TURN_ID.match(value):
        # A malformed id names no turn: the same 404 as any other unknown id (and no store request).
        raise problems.turn_not_found(value if value is not None else raw)
    return value


def _action_id(turn_id: str, raw: str) -> str:
    value = _segment(raw)
    if value is None or not _ACTION_ID.match(value):
        raise problems.action_not_found(turn_id, value if value is not None else raw)
    return value


def idempotency_key(event: Mapping[str, Any]) -> str:
    value = header(event, "idempotency-key")
    if value is None or not value.strip():
        raise problems.idempotency_key_required()
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]  # the structured-header form of the IETF draft: "key"
    if not _IDEMPOTENCY_KEY.match(value):
        raise problems.invalid_idempotency_key(MAX_IDEMPOTENCY_KEY)
    return value


def _pointer(parts: Collection[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


_MESSAGES: Final = {"extra_forbidden": "is not a field of this request", "missing": "is required"}


def validation_problem(exc: RequestValidationError) -> ProblemError:
    errors = list(exc.errors())
    if any(tuple(e.get("loc", ())) == ("body",) and e.get("type") == "missing" for e in errors):
        return problems.body_required()
    if any(e.get("type") == "json_invalid" for e in errors):
        return problems.malformed_body("the body is not valid JSON")
    fields: list[dict[str, str]] = []
    for error in errors:
        location = [str(p) for p in error.get("loc", ())]
        where, rest = (location[0], location[1:]) if location else ("body", [])
        message = _MESSAGES.get(str(error.get("type")), str(error.get("msg", "is invalid")))
        fields.append({"path": _pointer(rest), "in": where, "message": message.removeprefix("Value error, ")})
    return problems.request_validation(fields)


def _request(app: APIGatewayHttpResolver) -> RequestContext:
    context = app.context.get(CONTEXT_KEY)
    if not isinstance(context, RequestContext):
        raise TypeError("the resolver was called without a RequestContext (use HttpApi.handle)")
    return context


def _caller(context: RequestContext) -> str:
    if context.caller is None:
        raise problems.unauthenticated()
    return context.caller


# ------------------------------------------------------------------------------------- OpenAPI


_ERROR_DESCRIPTIONS: Final = {
    400: "Malformed JSON, missing body, a missing/invalid Idempotency-Key, or a request path no route can mean "
    "(a control character, a broken escape, a dot segment)",
    401: "No verified identity",
    404: "No such turn or action (also: another caller's turn)",
    405: "Method not allowed on this path",
    409: "The action is no longer pending, the turn has finished, or the conversation is busy",
    410: "The turn's stored state cannot be read (it ends FAILED with `snapshot_unreadable`)",
    413: "Body larger than the configured limit",
    415: "Body is not JSON",
    422: "Request or form data invalid (one entry per problem in `errors`)",
    503: "Temporarily unavailable (throttled); retry after the Retry-After header",
}


def _responses(
    success: Mapping[int, tuple[str, type[BaseModel]]], errors: Collection[int]
) -> dict[int, OpenAPIResponse]:
    documented: dict[int, OpenAPIResponse] = {
        status: {"description": text, "content": {"application/json": {"model": model}}}
        for status, (text, model) in success.items()
    }
    for status in sorted({401, 503, *errors}):
        documented[status] = {
            "description": _ERROR_DESCRIPTIONS[status],
            "content": {problems.PROBLEM_CONTENT_TYPE: {"model": Problem}},
        }
    return documented


_SPECS: Final = {route.operation_id: route for route in ROUTES}
_Route = Callable[..., Response[str]]
_CONVERSATION_ID = Annotated[
    str, Path(alias="conversationId", pattern=CONVERSATION_ID_PATTERN, description="Chosen by the client.")
]
_TURN_ID_PARAM = Annotated[str, Path(alias="turnId", description="A turn's id, as returned when it started.")]
_ACTION_ID_PARAM = Annotated[
    str, Path(alias="actionId", description="The suspension's actionId (the id of the waiting tool call).")
]


# ------------------------------------------------------------------------------------- resolver


class _RequestState(threading.local):
    """One thread's request: its event, Lambda context and the resolver's per-request context dict."""

    def __init__(self) -> None:
        self.event: Any = None
        self.lambda_context: Any = None
        self.context: dict[str, Any] = {}


class IsolatedHttpResolver(APIGatewayHttpResolver):
    """``APIGatewayHttpResolver`` whose request state belongs to the calling thread.

    Powertools keeps the current event and Lambda context on *class* attributes shared by every resolver
    in the process, and the per-request context on the instance: fine in Lambda (one invocation per
    process at a time), but two threads resolving at once (an in-process server, several handler modules
    loaded side by side) would validate and route one request with another's body. Powertools' own
    ``HttpResolver`` moves the same three names to per-request state; this does it per thread.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._state = _RequestState()
        super().__init__(**kwargs)

    @property
    def current_event(self) -> Any:
        return self._state.event

    @current_event.setter
    def current_event(self, value: Any) -> None:
        self._state.event = value

    @property
    def lambda_context(self) -> Any:
        return self._state.lambda_context

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._state.lambda_context = value

    @property
    def context(self) -> dict[str, Any]:
        return self._state.context

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self._state.context = value

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        # The base class stores the event on its class attribute as well; every read goes through the
        # properties above, which see this thread's copy.
        self._state.event = self._to_proxy_event(dict(event))
        self._state.lambda_context = context
        return super().resolve(event, context)


# ------------------------------------------------------------------------------------- routes


def build_resolver(groups: Collection[RouteGroup], *, openapi_document: Callable[[], str]) -> APIGatewayHttpResolver:
    app = IsolatedHttpResolver(enable_validation=True, json_body_deserializer=strict_loads)
    _register_errors(app)

    def rule(operation_id: str) -> str:
        return _SPECS[operation_id].powertools_rule

    if RouteGroup.RUN in groups:

        @app.post(
            rule("startTurn"),
            operation_id="startTurn",
            summary="Start a turn and run it until it waits for a person or ends",
            description="200 when the turn is blocked or finished; 202 when it was handed to the worker "
            "because the synchronous time budget ran out (poll GET /turns/{turnId}).",
            responses=_responses(
                {
                    200: ("The turn, blocked or finished", TurnView),
                    202: ("The turn, continuing in the worker", TurnView),
                },
                (400, 409, 413, 415, 422),
            ),
            tags=["turns"],
        )
        def start_turn(conversation_id: _CONVERSATION_ID, body: StartTurnRequest) -> Response[str]:
            context = _request(app)
            started = context.operations().start_turn(_caller(context), conversation_id, body, context.should_yield)
            view = turn_view(started.turn)
            return _json(202 if started.handed_off else 200, view, {"Location": f"/turns/{view.turn_id}"})

    if RouteGroup.READ in groups:

        @app.get(
            rule("getTurn"),
            operation_id="getTurn",
            summary="A turn: status, phase, suspension with its frozen schema, final output, error",
            responses=_responses({200: ("The turn", TurnView)}, (404, 410)),
            tags=["turns"],
        )
        def get_turn(turn_id: _TURN_ID_PARAM) -> Response[str]:
            context = _request(app)
            turn = context.operations().get_turn(_caller(context), _turn_id(turn_id))
            return _json(200, turn_view(turn))

        @app.get(
            rule("getTurnAudit"),
            operation_id="getTurnAudit",
            summary="The turn's decisions: one immutable record each (who, their groups, when, what they saw, "
            "the answer); for its owner and the people who decided",
            responses=_responses({200: ("The audit records, oldest first", AuditView)}, (404,)),
            tags=["turns"],
        )
        def get_turn_audit(turn_id: _TURN_ID_PARAM) -> Response[str]:
            context = _request(app)
            operations = context.operations()
            groups = jwt_groups(context.event, operations.services.settings.groups_claim)
            return _json(200, operations.audit(_caller(context), groups, _turn_id(turn_id)))

        @app.get(
            rule("listInbox"),
            operation_id="listInbox",
            summary="What waits for the caller across conversations: cards of their turns, and cards assigned to "
            "them or to one of their groups; deadline first, then oldest",
            responses=_responses({200: ("A page of waiting cards", InboxView)}, (422,)),
            tags=["inbox"],
        )
        def list_inbox(
            limit: Annotated[int, Query(ge=1, le=100, description="How many cards per page.")] = 20,
            cursor: Annotated[
                str | None,
                Query(max_length=4096, description="The `nextCursor` of the previous page (opaque, the caller's own)."),
            ] = None,
        ) -> Response[str]:
            context = _request(app)
            operations = context.operations()
            # Groups from the verified token only, as for answers.
            groups = jwt_groups(context.event, operations.services.settings.groups_claim)
            return _json(200, operations.inbox(_caller(context), groups, limit, cursor))

        @app.get(
            rule("listConversations"),
            operation_id="listConversations",
            summary="The caller's conversations, newest activity first, with title and last activity",
            responses=_responses({200: ("A page of conversations", ConversationsView)}, (422,)),
            tags=["conversations"],
        )
        def list_conversations(
            limit: Annotated[int, Query(ge=1, le=100, description="How many conversations per page.")] = 20,
            cursor: Annotated[
                str | None,
                Query(max_length=1024, description="The `nextCursor` of the previous page (opaque)."),
            ] = None,
        ) -> Response[str]:
            context = _request(app)
            return _json(200, context.operations().list_conversations(_caller(context), limit, cursor))

        @app.get(
            rule("listMessages"),
            operation_id="listMessages",
            summary="The conversation's timeline, oldest first, form and approval cards included",
            responses=_responses({200: ("The latest `limit` timeline entries", MessagesView)}, (422,)),
            tags=["conversations"],
        )
        def list_messages(
            conversation_id: _CONVERSATION_ID,
            limit: Annotated[int, Query(ge=1, le=200, description="How many of the latest entries.")] = 50,
        ) -> Response[str]:
            context = _request(app)
            return _json(200, context.operations().list_messages(_caller(context), conversation_id, limit))

    if RouteGroup.ACTIONS in groups:
        accepted = {202: ("Accepted; a worker resumes the turn", ActionAccepted)}
        answer_errors = (400, 404, 409, 410, 413, 415, 422)

        def answer_route(operation_id: str, summary: str) -> Callable[[_Route], _Route]:
            route: Callable[[_Route], _Route] = app.post(
                rule(operation_id),
                operation_id=operation_id,
                summary=summary,
                responses=_responses(accepted, answer_errors),
                tags=["actions"],
            )
            return route

        def answer(turn_id: str, action_id: str, command: Callable[[str], ResumeCommand]) -> Response[str]:
            """Every answer route: who asks, which request, which turn and action, then one resume command."""
            context = _request(app)
            # The order of the checks is the order of the problems a client sees: 401, then 400, then 404.
            caller, key = _caller(context), idempotency_key(context.event)
            tid = _turn_id(turn_id)
            operations = context.operations()
            # Groups from the verified token only: a group named in the body or a header counts for nothing.
            groups = jwt_groups(context.event, operations.services.settings.groups_claim)
            result = operations.answer(caller, tid, command(_action_id(tid, action_id)), key, groups)
            return _json(202, result, {"Location": f"/turns/{tid}"})

        @answer_route("submitForm", "Submit a form card's data (validated against the schema frozen in the turn)")
        def submit_form(turn_id: _TURN_ID_PARAM, action_id: _ACTION_ID_PARAM, body: SubmitFormRequest) -> Response[str]:
            return answer(turn_id, action_id, lambda aid: ResumeCommand.submit_form(aid, dict(body.data)))

        @answer_route(
            "declineForm",
            "Close a form card without filling it in (the model, or the tool, is told it was declined)",
        )
        def decline(
            turn_id: _TURN_ID_PARAM, action_id: _ACTION_ID_PARAM, body: Annotated[DeclineRequest | None, Body()] = None
        ) -> Response[str]:
            reason = body.reason if body is not None else None
            return answer(turn_id, action_id, lambda aid: ResumeCommand.decline_input(aid, reason))

        @answer_route(
            "approveToolCall",
            "Approve the tool call an approval card waits for, as shown or with edited arguments",
        )
        def approve(
            turn_id: _TURN_ID_PARAM, action_id: _ACTION_ID_PARAM, body: Annotated[ApproveRequest | None, Body()] = None
        ) -> Response[str]:
            arguments = dict(body.arguments) if body is not None and body.arguments is not None else None
            fingerprint = body.arguments_fingerprint if body is not None else None
            return answer(
                turn_id,
                action_id,
                lambda aid: ResumeCommand.approve_tool(aid, arguments, arguments_fingerprint=fingerprint),
            )

        @answer_route(
            "respondToToolCall",
            "Answer in the place of the tool an approval card waits for: the tool does not run, the answer is "
            "its result (marked as written by a person)",
        )
        def respond(turn_id: _TURN_ID_PARAM, action_id: _ACTION_ID_PARAM, body: RespondRequest) -> Response[str]:
            return answer(turn_id, action_id, lambda aid: ResumeCommand.respond(aid, body.content))

        @answer_route("rejectToolCall", "Reject the tool call an approval card waits for (the model is told why)")
        def reject(
            turn_id: _TURN_ID_PARAM, action_id: _ACTION_ID_PARAM, body: Annotated[RejectRequest | None, Body()] = None
        ) -> Response[str]:
            reason = body.reason if body is not None else None
            return answer(turn_id, action_id, lambda aid: ResumeCommand.reject_tool(aid, reason))

        @app.post(
            rule("cancelTurn"),
            operation_id="cancelTurn",
            summary="Cancel a turn (now if nothing runs it, else at its next step); pending cards become CANCELLED",
            responses=_responses({202: ("Cancellation requested", CancelAccepted)}, (400, 404, 409, 410, 422)),
            tags=["turns"],
        )
        def cancel(turn_id: _TURN_ID_PARAM) -> Response[str]:
            context = _request(app)
            caller, key = _caller(context), idempotency_key(context.event)
            tid = _turn_id(turn_id)
            return _json(202, context.operations().cancel(caller, tid, key), {"Location": f"/turns/{tid}"})

    if RouteGroup.AGUI in groups:
        _register_ag_ui(app, rule)

    if RouteGroup.DOCS in groups:

        @app.get(
            rule("getOpenApi"),
            operation_id="getOpenApi",
            summary="This document",
            responses={
                200: {
                    "description": "The OpenAPI 3 document of the API",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                **{
                    status: {
                        "description": _ERROR_DESCRIPTIONS[status],
                        "content": {problems.PROBLEM_CONTENT_TYPE: {"model": Problem}},
                    }
                    for status in (401, 503)
                },
            },
            tags=["meta"],
        )
        def get_openapi() -> Response[str]:
            _caller(_request(app))
            return Response(
                status_code=200, content_type="application/json", body=openapi_document(), headers=dict(COMMON_HEADERS)
            )

    return app


_AGENT_ID_PARAM = Annotated[str, Path(alias="agentId", description="The agent that runs a new turn of the thread.")]
_AG_UI_RUN_DESCRIPTION: Final = (
    "Body: AG-UI 1.0 `RunAgentInput` (`threadId` = the caller's conversation id, `runId`, `messages` — only the "
    "newest user message is read, and only when the timeline does not hold it —, `resume[]`). Answer: "
    "`text/event-stream` of AG-UI events; refusals found before the stream are problem documents, later ones "
    "`RUN_ERROR` events with a stable `code`. Integrations that cannot stream send the whole run at its end."
)


def _register_ag_ui(app: APIGatewayHttpResolver, rule: Callable[[str], str]) -> None:
    from agentturn.agui.encoder import CONTENT_TYPE, STREAM_HEADERS, encode

    def run(agent_id: str | None) -> Response[str]:
        context = _request(app)
        caller = _caller(context)
        operations = context.operations()
        groups = jwt_groups(context.event, operations.services.settings.groups_claim)
        session = operations.ag_ui_session(
            caller, agent_id, ag_ui_document(context.event), context.should_yield, groups
        )
        # The buffered answer (API Gateway's HTTP API cannot stream a Lambda's answer): the whole run at once.
        body = b"".join(encode(event) for event in session.events()).decode()
        return Response(status_code=200, content_type=CONTENT_TYPE, body=body, headers=dict(STREAM_HEADERS))

    def capabilities(agent_id: str | None) -> Response[str]:
        context = _request(app)
        _caller(context)
        document = context.operations().ag_ui_capabilities(agent_id)
        return Response(
            status_code=200,
            content_type="application/json",
            body=json.dumps(document, ensure_ascii=False, separators=(",", ":")),
            headers=dict(COMMON_HEADERS),
        )

    stream_answer: dict[int, OpenAPIResponse] = {
        200: {"description": "AG-UI events", "content": {CONTENT_TYPE: {"schema": {"type": "string"}}}},
        **_responses({}, (400, 404, 413, 415, 422)),
    }
    capabilities_answer: dict[int, OpenAPIResponse] = {
        200: {
            "description": "AG-UI AgentCapabilities",
            "content": {"application/json": {"schema": {"type": "object"}}},
        },
        **_responses({}, (404,)),
    }

    @app.post(
        rule("runAgUiAgent"),
        operation_id="runAgUiAgent",
        summary="Run an AG-UI 1.0 run of this agent on the thread (server-sent events)",
        description=_AG_UI_RUN_DESCRIPTION,
        responses=stream_answer,
        tags=["ag-ui"],
    )
    def run_agent(agent_id: _AGENT_ID_PARAM) -> Response[str]:
        return run(_agent_id(agent_id))

    @app.post(
        rule("runAgUi"),
        operation_id="runAgUi",
        summary="Run an AG-UI 1.0 run of the default agent on the thread (server-sent events)",
        description=_AG_UI_RUN_DESCRIPTION,
        responses=stream_answer,
        tags=["ag-ui"],
    )
    def run_default() -> Response[str]:
        return run(None)

    @app.get(
        rule("getAgUiAgentCapabilities"),
        operation_id="getAgUiAgentCapabilities",
        summary="What this agent supports, as AG-UI's AgentCapabilities",
        responses=capabilities_answer,
        tags=["ag-ui"],
    )
    def agent_capabilities(agent_id: _AGENT_ID_PARAM) -> Response[str]:
        return capabilities(_agent_id(agent_id))

    @app.get(
        rule("getAgUiCapabilities"),
        operation_id="getAgUiCapabilities",
        summary="What the default agent supports, as AG-UI's AgentCapabilities",
        responses=capabilities_answer,
        tags=["ag-ui"],
    )
    def default_capabilities() -> Response[str]:
        return capabilities(None)


def _agent_id(raw: str) -> str:
    value = _segment(raw)
    if value is None or not _AGENT_ID.match(value):
        raise problems.agent_not_found(value if value is not None else raw, [])
    return value


def ag_ui_agent_id(route: RouteSpec, path: str) -> str | None:
    """The agent an AG-UI run route names (``None``: the default agent), checked like the resolver checks it."""
    found = route.regex.match(path)
    raw = found.groupdict().get("agentId") if found else None
    return _agent_id(raw) if raw is not None else None


def ag_ui_document(event: Mapping[str, Any]) -> object:
    """The run's body, parsed by the same strict parser as every body (the entry point already refused a
    body too large, not JSON, or malformed)."""
    from agentturn.api.body import read_json_body

    document = read_json_body(event, max_bytes=1 << 62)
    if document is None:
        raise problems.body_required()
    return document


def _register_errors(app: APIGatewayHttpResolver) -> None:
    # Powertools' registration decorators are untyped; going through one typed alias keeps mypy strict here.
    on = cast(
        "Callable[[type[Exception] | list[type[Exception]]], Callable[[Callable[..., Response[str]]], object]]",
        app.exception_handler,
    )

    def on_problem(exc: ProblemError) -> Response[str]:
        return _problem(exc)

    def on_validation(exc: RequestValidationError) -> Response[str]:
        return _problem(validation_problem(exc))

    def on_core_error(exc: AgentTurnError) -> Response[str]:
        problem = problems.from_core_error(exc)
        if problem.status >= 500:
            _log.error("request failed: %s", exc)
        return _problem(problem)

    def on_not_found(exc: NotFoundError) -> Response[str]:
        event = app.current_event
        return _problem(problems.route_not_found(event.http_method, event.path))

    def on_storage_error(exc: StorageError) -> Response[str]:
        # The adapters translated the SDK's error: retryable is throttling, a 5xx or a lost connection.
        if exc.retryable:
            _log.warning("storage unavailable after the SDK's retries (%s): %s", exc.code, exc)
            _request(app).telemetry.count("Throttled")
            return _problem(problems.service_unavailable("the service is busy; retry shortly"))
        _log.exception("storage request failed")
        _request(app).telemetry.count("ServerErrors")
        return _problem(problems.internal_error())

    def on_unexpected(exc: Exception) -> Response[str]:
        # The one broad handler: whatever escaped is a server bug. Logged with its traceback and counted
        # (the Lambda itself succeeds, so the ServerErrors metric is what alarms), answered without details.
        _log.exception("unhandled error in route")
        _request(app).telemetry.count("ServerErrors")
        return _problem(problems.internal_error())

    on(ProblemError)(on_problem)
    on(RequestValidationError)(on_validation)
    on(AgentTurnError)(on_core_error)
    on(NotFoundError)(on_not_found)
    on(StorageError)(on_storage_error)
    on(Exception)(on_unexpected)
