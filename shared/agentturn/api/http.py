"""The HTTP entry point shared by the run and submit Lambdas and the local gateway.

Order of checks, each before anything is read from or written to storage:

1. route (404 unknown path, 405 wrong method) — on the raw path, stage prefix removed;
2. identity (401) — only from the verified JWT claims in the event, unless the route is public;
3. body (413 over the cap, 415 not JSON, 400 malformed) — on the raw body, before parsing;
4. the Powertools resolver: typed parameters and pydantic bodies (422), then the route.

Wiring (boto3 clients, adapters, agents) happens on the first request that needs it, not at import.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentturn.api import problems
from agentturn.api.body import read_json_body
from agentturn.api.identity import IdentityResolver, jwt_subject
from agentturn.api.lambdas import LazyServices
from agentturn.api.problems import ProblemError
from agentturn.api.routes import RouteGroup, RouteSpec, match_route
from agentturn.api.telemetry import NullTelemetry, Telemetry

if TYPE_CHECKING:
    # The resolver, the operations and the services (pydantic models, the Runner) load on the first request
    # that gets past the route, identity and body checks: importing this module stays cheap.
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

    from agentturn.api.services import Services

_log = logging.getLogger("agentturn.api.http")

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True)
class StreamedAnswer:
    """An HTTP answer whose body is sent piece by piece as ``chunks`` yields them."""

    status: int
    headers: Mapping[str, str]
    chunks: Iterable[bytes]

    @classmethod
    def whole(cls, response: Mapping[str, Any]) -> StreamedAnswer:
        """A Lambda proxy answer (``statusCode``, ``headers``, ``body``) as one chunk."""
        body = response.get("body") or ""
        data = base64.b64decode(body) if response.get("isBase64Encoded") else str(body).encode()
        return cls(int(response.get("statusCode", 200)), dict(response.get("headers") or {}), [data])


class RemainingTime(Protocol):
    """The part of the Lambda context the handlers use."""

    def get_remaining_time_in_millis(self) -> int: ...


def request_method(event: Mapping[str, Any]) -> str:
    http = event.get("requestContext", {}).get("http", {})
    return str(http.get("method", "")).upper()


def request_path(event: Mapping[str, Any]) -> str:
    """``rawPath`` without the stage prefix API Gateway adds for named stages (as Powertools routes it)."""
    raw = str(event.get("rawPath") or "/")
    stage = event.get("requestContext", {}).get("stage")
    if isinstance(stage, str) and stage and stage != "$default" and raw.startswith(f"/{stage}/"):
        return raw[len(stage) + 1 :]
    return raw


class HttpApi:
    def __init__(
        self,
        groups: Collection[RouteGroup],
        *,
        services: Services | Callable[[], Services] | None = None,
        identity: IdentityResolver = jwt_subject,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.groups = frozenset(groups)
        self.identity = identity
        self.telemetry: Telemetry = telemetry or NullTelemetry()
        self._services = LazyServices()
        self.use(services)
        # One resolver per thread: Powertools builds a route's middleware stack on first use and keeps
        # request state on the resolver, so threads that share one (the local gateway, concurrent tests)
        # would race. A Lambda has one thread, hence one resolver.
        self._per_thread = threading.local()

    def use(self, services: Services | Callable[[], Services] | None) -> None:
        """Set the services: an instance, a factory called on first need, or ``None`` (from the environment)."""
        if services is None or callable(services):
            self._services = LazyServices(services)
        else:
            self._services = LazyServices()
            self._services.use(services)

    @property
    def services(self) -> Services:
        return self._services.get()

    @property
    def resolver(self) -> APIGatewayHttpResolver:
        resolver: APIGatewayHttpResolver | None = getattr(self._per_thread, "resolver", None)
        if resolver is None:
            from agentturn.api.openapi import openapi_document
            from agentturn.api.resolver import build_resolver

            resolver = build_resolver(self.groups, openapi_document=openapi_document)
            self._per_thread.resolver = resolver
        return resolver

    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        try:
            return self._handle(event, context)
        except ProblemError as problem:
            return problem.to_api_gateway()

    def _gate(self, event: Mapping[str, Any]) -> tuple[RouteSpec, str | None, Any]:
        """Route, identity and body checks, in that order; the route, the verified caller and the parsed body."""
        method, path = request_method(event), request_path(event)
        matched = match_route(method, path, self.groups)
        if matched.route is None:
            if matched.allowed:
                raise problems.method_not_allowed(method, path, matched.allowed)
            raise problems.route_not_found(method, path)
        caller: str | None = None
        if not matched.route.public:
            caller = self.identity(event)
            if caller is None:
                raise problems.unauthenticated()
            self.telemetry.bind(userId=caller)
        document: Any = None
        if method in _BODY_METHODS:
            # Parsed here only to be refused early; the resolver parses the accepted text again (same
            # strict parser), which for at most max_body_bytes costs far less than the request itself.
            document = read_json_body(event, max_bytes=self.services.settings.max_body_bytes)
            if document is not None and not isinstance(document, dict):
                # Every body of this API is an object. Refused here because the resolver would quietly
                # take the first element of a top-level array as the body (its form-field handling).
                raise problems.request_validation(
                    [{"path": "", "in": "body", "message": "the body must be a JSON object"}]
                )
        return matched.route, caller, document

    def _handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        from agentturn.api.operations import Operations
        from agentturn.api.resolver import CONTEXT_KEY, RequestContext

        _, caller, _ = self._gate(event)
        resolver = self.resolver
        request = RequestContext(
            caller=caller,
            operations=lambda: Operations(self.services, self.telemetry),
            should_yield=self._yield_probe(context),
            event=event,
            telemetry=self.telemetry,
        )
        # The resolver's per-request context (it clears it after every resolve).
        resolver.context[CONTEXT_KEY] = request
        return resolver.resolve(dict(event), context)

    def stream(self, event: Mapping[str, Any], context: Any) -> StreamedAnswer:
        """:meth:`handle` for an integration that can stream (the local gateway, a Lambda behind the Lambda Web
        Adapter): an AG-UI run's events are sent as the run makes them; every other answer is sent whole.

        Everything refused before the run starts (route, identity, body, input, agent) is a problem document,
        as from :meth:`handle`; what goes wrong after is a ``RUN_ERROR`` event in the stream.
        """
        from agentturn.agui.encoder import CONTENT_TYPE, STREAM_HEADERS
        from agentturn.api.operations import Operations
        from agentturn.api.resolver import ag_ui_agent_id

        try:
            route, caller, document = self._gate(event)
            if not route.streamed or caller is None:
                return StreamedAnswer.whole(self.handle(event, context))
            if document is None:
                raise problems.body_required()
            agent_id = ag_ui_agent_id(route, request_path(event))
            from agentturn.api.identity import jwt_groups

            groups = jwt_groups(event, self.services.settings.groups_claim)
            session = Operations(self.services, self.telemetry).ag_ui_session(
                caller, agent_id, document, self._yield_probe(context), groups
            )
        except ProblemError as problem:
            return StreamedAnswer.whole(problem.to_api_gateway())
        headers = {"Content-Type": CONTENT_TYPE, **STREAM_HEADERS}
        return StreamedAnswer(200, headers, session.stream())

    def _yield_probe(self, context: Any) -> Callable[[], bool]:
        """Stop before a step once the Lambda has less than the margin left (never, without a Lambda context)."""
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if not callable(remaining):
            return lambda: False

        def should_yield() -> bool:
            return int(remaining()) < self.services.settings.yield_margin_ms

        return should_yield
