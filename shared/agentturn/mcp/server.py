"""The description of one MCP server an agent may use: where it is, how to reach it, and whom to ask first."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from agentturn.mcp.listing import MCPTool


class Approve(StrEnum):
    """Which of a server's tools wait for a person's approval before each call.

    Annotations are the server's own hints (MCP: untrusted unless the server is): the team chooses.
    """

    #: every call
    ALL = "all"
    #: calls of tools the server does not say are read-only or non-destructive (MCP's defaults: destructive)
    DESTRUCTIVE = "destructive"
    #: calls of every tool the server does not mark read-only (the default)
    UNLESS_READ_ONLY = "unless_read_only"
    #: no call
    NONE = "none"


#: ``approve=`` as a function: ``(tool, arguments) -> True`` when a person must approve this call.
ApprovePredicate: TypeAlias = Callable[["MCPTool", dict[str, Any]], bool]
#: ``headers=``: fixed headers, or a function called before each request (a token read from a secret store).
HeaderSource: TypeAlias = Mapping[str, str] | Callable[[], Mapping[str, str]]

#: the revision whose questions are durable (``input_required``, multi round-trip requests)
CURRENT_REVISION = "2026-07-28"
#: every revision this client speaks: the current one, and the older ones with ``initialize`` and sessions
REVISIONS = (CURRENT_REVISION, "2025-11-25", "2025-06-18")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,24}$")
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


class MCPConfigError(ValueError):
    """An MCP server description that cannot be used (refused when the agent is built)."""


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, init=False, eq=False)
class MCPServer:
    """An MCP server reached over streamable HTTP (revision 2026-07-28).

    ``url`` must be HTTPS; plain HTTP is allowed only to this machine (loopback), for development and tests.
    Credentials go in ``headers`` (never in the URL). ``name`` namespaces the server's tools for the model
    (``<name>__<tool>``) and labels its questions on the cards; it defaults to the URL's host.
    """

    url: str
    name: str
    headers: HeaderSource
    approve: Approve | ApprovePredicate
    #: seconds one call may take in all (connect, send, the whole answer): 8 by default, so that a call started by
    #: the run function (which stops before a step with less than ``AGENTTURN_YIELD_MARGIN_MS``, 10 s, left)
    #: ends before that function's own timeout; raise both together for slow servers, and keep it under the
    #: worker's lease and timeout
    timeout: float
    #: input rounds (``input_required``) one call may ask before it ends as a tool error
    max_rounds: int
    #: largest ``requestState`` kept in a turn's snapshot while a person answers
    max_request_state_bytes: int
    #: largest answer read from the server
    max_response_bytes: int
    #: seconds a process keeps the server's tool list
    list_ttl: float
    #: the protocol revision spoken: 2026-07-28 (stateless; questions are durable ``input_required`` rounds) or
    #: an older one (``initialize`` and a session; a question is a live ``elicitation/create`` during the call)
    revision: str
    #: older revisions only: seconds a call is held open while its live question waits on a card; past it the
    #: server is answered ``cancel`` and the model is told
    live_wait: float

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        headers: HeaderSource | None = None,
        approve: Approve | str | ApprovePredicate = Approve.UNLESS_READ_ONLY,
        timeout: float = 8.0,
        max_rounds: int = 10,
        max_request_state_bytes: int = 64 * 1024,
        max_response_bytes: int = 4 * 1024 * 1024,
        list_ttl: float = 300.0,
        revision: str = CURRENT_REVISION,
        live_wait: float = 120.0,
    ) -> None:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.scheme not in ("https", "http") or not host:
            raise MCPConfigError(f"MCP server URL {url!r} must be an https:// URL")
        if parts.scheme == "http" and not is_loopback(host):
            raise MCPConfigError(f"MCP server URL {url!r}: plain HTTP is allowed only to loopback; use https://")
        if parts.username or parts.password:
            raise MCPConfigError(f"MCP server URL {url!r}: put credentials in headers=, not in the URL")
        chosen = name if name is not None else re.sub(r"[^A-Za-z0-9_-]", "_", host.split(".")[0])[:24]
        if not _NAME.match(chosen):
            raise MCPConfigError(f"MCP server name {chosen!r} must match {_NAME.pattern}")
        if isinstance(approve, str):
            try:
                approve = Approve(approve)
            except ValueError:
                choices = ", ".join(repr(a.value) for a in Approve)
                raise MCPConfigError(f"approve={approve!r}: use one of {choices} or a function") from None
        elif not callable(approve):
            raise MCPConfigError("approve= must be one of Approve's values or a function (tool, arguments) -> bool")
        if not 0 < timeout <= 300:
            raise MCPConfigError(f"timeout={timeout!r}: give seconds in (0, 300], under the worker's lease")
        if not 1 <= max_rounds <= 100:
            raise MCPConfigError(f"max_rounds={max_rounds!r} must be in [1, 100]")
        if not 1 <= max_request_state_bytes <= 256 * 1024:
            raise MCPConfigError("max_request_state_bytes must be in [1, 262144]: it is stored in the snapshot")
        if revision not in REVISIONS:
            raise MCPConfigError(f"revision={revision!r}: use one of {', '.join(map(repr, REVISIONS))}")
        if not 0 < live_wait <= 900:
            raise MCPConfigError(f"live_wait={live_wait!r}: give seconds in (0, 900]: a held call ties up a worker")
        for field_name, value in (
            ("url", url),
            ("name", chosen),
            ("headers", headers if headers is not None else {}),
            ("approve", approve),
            ("timeout", float(timeout)),
            ("max_rounds", max_rounds),
            ("max_request_state_bytes", max_request_state_bytes),
            ("max_response_bytes", max_response_bytes),
            ("list_ttl", float(list_ttl)),
            ("revision", revision),
            ("live_wait", float(live_wait)),
        ):
            object.__setattr__(self, field_name, value)

    @property
    def live(self) -> bool:
        """True for a server of an older revision: its questions come live, during a held call."""
        return self.revision != CURRENT_REVISION

    def resolve_headers(self) -> dict[str, str]:
        source = self.headers
        values = source() if callable(source) else source
        return {str(key): str(value) for key, value in values.items()}

    def __repr__(self) -> str:  # never the headers: they hold credentials
        return f"MCPServer({self.url!r}, name={self.name!r})"
