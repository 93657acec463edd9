"""The route table of DESIGN.md's HTTP API, and the Powertools resolver that serves a subset of it.

Each Lambda serves some groups of routes (the run Lambda: starting turns, reads and the OpenAPI
document; the submit Lambda: answers); the local server serves all. The table is also what tells a
wrong method (405) from an unknown route (404) before anything else happens.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final


class RouteGroup(StrEnum):
    RUN = "run"
    READ = "read"
    ACTIONS = "actions"
    DOCS = "docs"
    #: AG-UI 1.0 (agentturn.agui): runs answered as server-sent events, and capability discovery
    AGUI = "agui"


RUN_LAMBDA_GROUPS: Final = frozenset({RouteGroup.RUN, RouteGroup.READ, RouteGroup.DOCS, RouteGroup.AGUI})
SUBMIT_LAMBDA_GROUPS: Final = frozenset({RouteGroup.ACTIONS})
ALL_GROUPS: Final = frozenset(RouteGroup)

_PARAMETER = re.compile(r"\{(\w+)\}")


def _compile(template: str) -> re.Pattern[str]:
    """``/turns/{turnId}`` → ``^/turns/(?P<turnId>[^/]+)$``: a parameter is one path segment, as in API Gateway."""
    parts: list[str] = []
    position = 0
    for parameter in _PARAMETER.finditer(template):
        parts.append(re.escape(template[position : parameter.start()]))
        parts.append(f"(?P<{parameter.group(1)}>[^/]+)")
        position = parameter.end()
    parts.append(re.escape(template[position:]))
    return re.compile("^" + "".join(parts) + "$")


@dataclass(frozen=True)
class RouteSpec:
    method: str
    #: OpenAPI form, as API Gateway's route keys spell it: ``/turns/{turnId}``.
    template: str
    group: RouteGroup
    operation_id: str
    #: Served without a verified identity (the API's own description).
    public: bool = False
    #: Needs an ``Idempotency-Key`` header.
    idempotent: bool = False
    #: Answered as ``text/event-stream``: streamed where the integration can (``HttpApi.stream``), else whole.
    streamed: bool = False
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", _compile(self.template))

    @property
    def powertools_rule(self) -> str:
        return _PARAMETER.sub(lambda m: f"<{m.group(1)}>", self.template)

    @property
    def route_key(self) -> str:
        """API Gateway's ``routeKey`` of this route."""
        return f"{self.method} {self.template}"


ROUTES: Final = (
    RouteSpec("POST", "/conversations/{conversationId}/turns", RouteGroup.RUN, "startTurn"),
    RouteSpec("GET", "/conversations", RouteGroup.READ, "listConversations"),
    RouteSpec("GET", "/conversations/{conversationId}/messages", RouteGroup.READ, "listMessages"),
    RouteSpec("GET", "/turns/{turnId}", RouteGroup.READ, "getTurn"),
    RouteSpec("GET", "/turns/{turnId}/audit", RouteGroup.READ, "getTurnAudit"),
    RouteSpec("GET", "/inbox", RouteGroup.READ, "listInbox"),
    RouteSpec("POST", "/turns/{turnId}/actions/{actionId}/submit", RouteGroup.ACTIONS, "submitForm", idempotent=True),
    RouteSpec("POST", "/turns/{turnId}/actions/{actionId}/decline", RouteGroup.ACTIONS, "declineForm", idempotent=True),
    RouteSpec(
        "POST", "/turns/{turnId}/actions/{actionId}/approve", RouteGroup.ACTIONS, "approveToolCall", idempotent=True
    ),
    RouteSpec(
        "POST", "/turns/{turnId}/actions/{actionId}/reject", RouteGroup.ACTIONS, "rejectToolCall", idempotent=True
    ),
    RouteSpec(
        "POST", "/turns/{turnId}/actions/{actionId}/respond", RouteGroup.ACTIONS, "respondToToolCall", idempotent=True
    ),
    RouteSpec("POST", "/turns/{turnId}/cancel", RouteGroup.ACTIONS, "cancelTurn", idempotent=True),
    # Behind the JWT authorizer like every route (agentturn.cdk.api): the document says so, and the handler asks
    # for the verified caller as it does everywhere, so what runs locally is what is deployed.
    RouteSpec("GET", "/openapi.json", RouteGroup.DOCS, "getOpenApi"),
    # Before "/ag-ui/{agentId}": a GET of this path is the capabilities, not a run of an agent so named.
    RouteSpec("GET", "/ag-ui/capabilities", RouteGroup.AGUI, "getAgUiCapabilities"),
    RouteSpec("GET", "/ag-ui/{agentId}/capabilities", RouteGroup.AGUI, "getAgUiAgentCapabilities"),
    RouteSpec("POST", "/ag-ui", RouteGroup.AGUI, "runAgUi", streamed=True),
    RouteSpec("POST", "/ag-ui/{agentId}", RouteGroup.AGUI, "runAgUiAgent", streamed=True),
)


@dataclass(frozen=True)
class RouteMatch:
    route: RouteSpec | None
    #: Methods the path has among the served routes (non-empty with ``route=None``: 405).
    allowed: tuple[str, ...]


def match_route(method: str, path: str, groups: Collection[RouteGroup]) -> RouteMatch:
    allowed: list[str] = []
    for route in ROUTES:
        if route.group not in groups or not route.regex.match(path):
            continue
        if route.method == method:
            return RouteMatch(route, (route.method,))
        allowed.append(route.method)
    return RouteMatch(None, tuple(sorted(set(allowed))))
