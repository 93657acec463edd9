"""Runtime settings of the deployed handlers, read once from the environment (with checked bounds)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

DEFAULT_AGENTS: Final = "agentturn.demo:demo_agents"
#: With the demo agents, new turns go to the one that plays every scenario of the seed.
DEMO_DEFAULT_AGENT: Final = "assistant"


class SettingsError(ValueError):
    """An environment variable holds a value the handlers cannot run with (a deployment error)."""


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, not {raw!r}") from None
    if not low <= value <= high:
        raise SettingsError(f"{name} must be within {low}..{high}, not {value!r}")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in ("0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise SettingsError(f"{name} must be true or false, not {raw!r}")


def _text(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    raw = env.get(name, "").strip()
    return raw or default


@dataclass(frozen=True)
class Settings:
    #: ``module:function`` returning the deployable agents (``list[Agent]``).
    agents: str = DEFAULT_AGENTS
    #: The agent a new turn gets when the request names none (``None``: the first one listed).
    default_agent: str | None = None
    #: Largest request body accepted, in bytes after base64 decoding; checked before anything is parsed.
    max_body_bytes: int = 64 * 1024
    #: A synchronous run (or a worker) stops before a step once less than this much Lambda time is left:
    #: it must exceed the longest step (a model call), or the Lambda can be killed mid-step.
    yield_margin_ms: int = 10_000
    #: Lease on a running turn; renewed between steps and, by a heartbeat, every third of it during a step.
    lease_seconds: int = 60
    #: The sweeper re-enqueues runnable turns untouched (and unleased) for this long.
    sweep_idle_seconds: int = 120
    #: At most this many turns per sweep (the oldest first).
    sweep_limit: int = 100
    #: Terminal turns are deleted by DynamoDB TTL this long after they end (``None``: kept).
    terminal_ttl_seconds: int | None = None
    #: The sweeper also closes waits whose input timeout has passed (``Runner.expire_overdue``): a wait that
    #: nobody answers must not hold its conversation forever. It needs the "overdue" index and read/write
    #: access to turns, timeline and bucket; with no agent setting a timeout it finds nothing.
    expire_overdue: bool = True
    #: Attempts in a row of a run that fails for a reason that may pass (a retryable model error, an agent
    #: version not deployed, an unexpected error) before the turn ends FAILED.
    max_attempts: int = 5
    #: Backoff between those attempts: this many seconds after the first, doubling, at most ``retry_max_seconds``.
    retry_base_seconds: int = 2
    retry_max_seconds: int = 300
    #: An AG-UI run with no input on a thread whose turn runs elsewhere (the worker) follows it this long, then
    #: answers with what is stored (0: answers at once).
    ag_ui_follow_seconds: int = 20
    #: The verified token's claim that lists the caller's groups (``Approvers(groups=...)``): Cognito's
    #: ``cognito:groups``, or the claim an OIDC issuer uses.
    groups_claim: str = "cognito:groups"
    #: ``GET /inbox`` also lists the caller's own cards that name no approvers: two index writes more per form
    #: cycle (the card enters the ``byAssignee`` index and leaves it), so off unless a deployment asks.
    inbox_owner_cards: bool = False

    def __post_init__(self) -> None:
        if self.retry_base_seconds > self.retry_max_seconds:
            raise SettingsError("AGENTTURN_RETRY_BASE_SECONDS must not exceed AGENTTURN_RETRY_MAX_SECONDS")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        ttl = _int(env, "AGENTTURN_TERMINAL_TTL_SECONDS", 0, 0, 10 * 365 * 24 * 3600)
        agents = _text(env, "AGENTTURN_AGENTS", DEFAULT_AGENTS) or DEFAULT_AGENTS
        default_agent = _text(env, "AGENTTURN_DEFAULT_AGENT", DEMO_DEFAULT_AGENT if agents == DEFAULT_AGENTS else None)
        return cls(
            agents=agents,
            default_agent=default_agent,
            max_body_bytes=_int(env, "AGENTTURN_MAX_BODY_BYTES", cls.max_body_bytes, 1024, 6 * 1024 * 1024),
            yield_margin_ms=_int(env, "AGENTTURN_YIELD_MARGIN_MS", cls.yield_margin_ms, 0, 900_000),
            lease_seconds=_int(env, "AGENTTURN_LEASE_SECONDS", cls.lease_seconds, 5, 3600),
            sweep_idle_seconds=_int(env, "AGENTTURN_SWEEP_IDLE_SECONDS", cls.sweep_idle_seconds, 0, 86_400),
            sweep_limit=_int(env, "AGENTTURN_SWEEP_LIMIT", cls.sweep_limit, 1, 10_000),
            terminal_ttl_seconds=ttl or None,
            expire_overdue=_flag(env, "AGENTTURN_EXPIRE_OVERDUE", default=cls.expire_overdue),
            max_attempts=_int(env, "AGENTTURN_MAX_ATTEMPTS", cls.max_attempts, 1, 100),
            retry_base_seconds=_int(env, "AGENTTURN_RETRY_BASE_SECONDS", cls.retry_base_seconds, 1, 900),
            retry_max_seconds=_int(env, "AGENTTURN_RETRY_MAX_SECONDS", cls.retry_max_seconds, 1, 900),
            ag_ui_follow_seconds=_int(env, "AGENTTURN_AG_UI_FOLLOW_SECONDS", cls.ag_ui_follow_seconds, 0, 900),
            groups_claim=_text(env, "AGENTTURN_GROUPS_CLAIM", cls.groups_claim) or cls.groups_claim,
            inbox_owner_cards=_flag(env, "AGENTTURN_INBOX_OWNER_CARDS", default=cls.inbox_owner_cards),
        )
