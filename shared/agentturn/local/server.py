"""``agentturn dev`` put together: emulator → resources (→ restored state) → handlers → gateway, worker
loop and sweeper; and the reverse on stop, each step bounded in time."""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, MappingProxyType, ModuleType
from typing import Any, Final, TextIO

from agentturn._sources import import_root
from agentturn.local.emulator import Clients, MotoEmulator, Resources, point_environment_at, provision
from agentturn.local.events import HttpRequest
from agentturn.local.functions import FunctionPool, find_functions_dir, load_pools
from agentturn.local.gateway import DEV_USER_HEADER, DEV_USER_PATTERN, GatewayConfig, LocalGateway
from agentturn.local.lambda_context import LocalLambdaContext
from agentturn.local.live import LiveHub
from agentturn.local.log import LOGGER_NAME, configure
from agentturn.local.loops import PeriodicTask, WorkerLoop, sweeper_action

_log = logging.getLogger(LOGGER_NAME)

DEFAULT_PORT: Final = 8787
DEFAULT_USER: Final = "dev-user"
#: Offered by the console's user switch besides the default one, to try the per-user isolation, and approvals by
#: other people: ``fin-ana`` and ``fin-ben`` are in group ``finance``, ``ops-olu`` in ``oncall``.
OTHER_USERS: Final = ("alice", "bob", "fin-ana", "fin-ben", "ops-olu")
#: The groups a dev user's token carries (``cognito:groups``), so that the inbox and cards with approvers can be
#: tried locally; a user not named here has none.
DEV_GROUPS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {"fin-ana": ("finance",), "fin-ben": ("finance",), "ops-olu": ("oncall",)}
)
#: What the handlers get unless the environment says otherwise: quiet Powertools (no X-Ray, no EMF
#: metrics on stdout), and a sweeper that picks up an orphaned runnable turn within seconds, not minutes.
HANDLER_DEFAULTS: Final = {
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_METRICS_NAMESPACE": "agentturn-dev",
    "AGENTTURN_SWEEP_IDLE_SECONDS": "10",
}
STOP_TIMEOUT_SECONDS: Final = 10.0


@dataclass(frozen=True)
class DevConfig:
    port: int = DEFAULT_PORT
    user: str = DEFAULT_USER
    users: tuple[str, ...] = OTHER_USERS
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: DEV_GROUPS)
    persist: Path | None = None
    sweep_interval: float = 10.0
    snapshot_interval: float = 30.0
    functions_dir: Path | None = None
    log_requests: bool = True
    #: ``module:function`` returning the agents to serve (``AGENTTURN_AGENTS``; default: the demo agents).
    agents: str | None = None
    #: The team's code, importable as it is from the root of a deployed bundle (the construct's ``code``).
    code: tuple[Path, ...] = ()
    #: The live timeline over TLS (a self-signed certificate made at start), where AWS Amplify's Events client
    #: connects: ``None`` → the port after ``port`` (any free one when ``port`` is 0); -1 → not offered.
    events_port: int | None = None


#: A turn that never exists: the readiness requests find nothing, change nothing.
_NO_TURN: Final = "0" * 32


def readiness_probes() -> dict[str, HttpRequest]:
    """Per function, a request that readies a fresh container (its services, clients and resolver, built on first
    use) and changes nothing: a read, and an answer, of a turn that does not exist (404 each). The dev server
    passes it through every container before that container serves a person: the first Send is then as quick as
    the tenth (a fresh container's first request took 0.7 s more)."""
    answer = json.dumps({"data": {}}).encode()
    headers = [("Content-Type", "application/json"), ("Idempotency-Key", "agentturn-dev-ready")]
    return {
        "run": HttpRequest("GET", f"/turns/{_NO_TURN}", "", [], b""),
        "submit": HttpRequest("POST", f"/turns/{_NO_TURN}/actions/ready/submit", "", headers, answer),
    }


def _invoker(event: dict[str, Any]) -> Callable[[ModuleType], None]:
    def ready(container: ModuleType) -> None:
        container.handler(dict(event), LocalLambdaContext(function_name="agentturn-dev-ready", timeout_ms=30_000))

    return ready


def _agent_ids() -> list[str]:
    from agentturn.api.agents import load_agents
    from agentturn.api.settings import Settings

    ids: list[str] = []
    for agent in load_agents(Settings.from_env().agents):
        if agent.id not in ids:
            ids.append(agent.id)
    return ids


@dataclass
class DevServer:
    config: DevConfig
    out: TextIO = field(default_factory=lambda: sys.stdout)
    emulator: MotoEmulator | None = None
    resources: Resources | None = None
    clients: Clients | None = None
    pools: dict[str, FunctionPool] = field(default_factory=dict)
    gateway: LocalGateway | None = None
    live: LiveHub | None = None
    worker: WorkerLoop | None = None
    tasks: list[PeriodicTask] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    #: Where the live TLS listener's certificate is (made at start, removed at stop).
    certificates: Path | None = None

    @property
    def url(self) -> str:
        assert self.gateway is not None, "start() first"
        return self.gateway.url

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.stop(snapshot=False)
            raise

    def _start(self) -> None:
        functions_dir = self.config.functions_dir or find_functions_dir()
        self.emulator = MotoEmulator()
        endpoint = self.emulator.start()
        point_environment_at(endpoint)
        self.clients = Clients.for_endpoint(endpoint)
        self.resources = provision(self.clients)
        for key, value in {**HANDLER_DEFAULTS, **self.resources.names.to_env()}.items():
            if key in HANDLER_DEFAULTS:
                os.environ.setdefault(key, value)
            else:
                os.environ[key] = value
        # As deployed: the snapshot a submit hands the worker is sealed with a key only the functions have (a
        # fresh one per dev server; a message from before a restart is then claimed, as a forged one is).
        os.environ.setdefault("AGENTTURN_HANDOFF_KEY", secrets.token_hex(32))
        if self.config.persist is not None:
            from agentturn.local.persist import restore

            restored = restore(self.clients, self.resources, self.config.persist)
            if restored is not None:
                self.out.write(f"restored {restored.describe()} from {self.config.persist}\n")
        # Lambda puts the bundle's root on sys.path, where the team's code lies (AgentTurn's ``code``): the
        # same entries, then the current folder (a project's root), play that part here.
        if self.config.agents is not None:
            os.environ["AGENTTURN_AGENTS"] = self.config.agents
        for root in reversed([*(str(import_root(path.resolve())) for path in self.config.code), str(Path.cwd())]):
            if root not in sys.path:
                sys.path.insert(0, root)
        self.agents = _agent_ids()  # a wrong AGENTTURN_AGENTS fails here, before the URL is printed
        self.pools = load_pools(functions_dir)
        for pool in self.pools.values():
            pool.warm()
        tls, tls_port = None, 0
        if self.config.events_port != -1:
            from agentturn.local.live import self_signed_context

            self.certificates = Path(tempfile.mkdtemp(prefix="agentturn-dev-tls-"))
            tls = self_signed_context(self.certificates)
            tls_port = self.config.events_port or (self.config.port + 1 if self.config.port else 0)
        self.live = LiveHub(
            self._live_subject,
            allowed_origins=self._origins,
            tls=tls,
            tls_port=tls_port,
            tls_port_fallback=self.config.events_port is None,
            certificate=self.certificates / "live-cert.pem" if self.certificates is not None else None,
        )
        self.live.start()
        self.gateway = LocalGateway(
            GatewayConfig(
                port=self.config.port,
                default_user=self.config.user,
                users=self.config.users,
                groups=self.config.groups,
                agent_ids=lambda: list(self.agents),
                model=self.model,
                log_requests=self.config.log_requests,
                live=self.live,
            ),
            run=self.pools["run"].invoke,
            submit=self.pools["submit"].invoke,
            run_stream=self.pools["run"].invoke_stream,
        )
        # The handlers publish as deployed (AppSync Events' HTTP publish, SigV4), to the gateway's /event.
        os.environ["AGENTTURN_LIVE_ENDPOINT"] = f"{self.gateway.url}event"
        for name, probe in readiness_probes().items():
            event = self.gateway.event_for(probe, self.config.user)
            self.pools[name].ready_in_background(_invoker(event))
        # The worker's: a batch of no messages (its services and runner are built, nothing is read or run).
        self.pools["worker"].ready_in_background(_invoker({"Records": []}))
        self.worker = WorkerLoop(
            self.clients.sqs, self.resources.queue_url, self.resources.queue_arn, self.pools["worker"].invoke
        )
        self.tasks = [PeriodicTask("sweeper", self.config.sweep_interval, sweeper_action(self.pools["sweeper"].invoke))]
        if self.config.persist is not None:
            self.tasks.append(PeriodicTask("snapshot", self.config.snapshot_interval, self._snapshot))
        self.worker.start()
        for task in self.tasks:
            task.start()
        self.gateway.start()

    def _live_subject(self, headers: dict[str, Any]) -> str | None:
        """Who a live subscriber is: the dev user it names, as the gateway decides it for API requests."""
        named = headers.get(DEV_USER_HEADER)
        user = named if isinstance(named, str) and named else self.config.user
        return user if DEV_USER_PATTERN.match(user) else None

    def _origins(self) -> frozenset[str]:
        return self.gateway.origins() if self.gateway is not None else frozenset()

    def _snapshot(self) -> None:
        if self.config.persist is None or self.clients is None or self.resources is None:
            return
        from agentturn.local.persist import snapshot

        snapshot(self.clients, self.resources, self.config.persist)

    def stop(self, *, snapshot: bool = True) -> list[str]:
        """Stop everything (new requests first, the emulator last); returns what did not stop in time."""
        stuck: list[str] = []
        # Every loop is told first, so their waits overlap instead of adding up.
        if self.worker is not None:
            self.worker.request_stop()
        for task in self.tasks:
            task.request_stop()
        if self.gateway is not None and not self.gateway.stop(STOP_TIMEOUT_SECONDS / 2):
            stuck.append("gateway")
        if self.live is not None and not self.live.stop(STOP_TIMEOUT_SECONDS / 2):
            stuck.append("live timeline")
        if self.worker is not None and not self.worker.stop(STOP_TIMEOUT_SECONDS):
            stuck.append("worker loop (a batch was still running)")
        for task in self.tasks:
            if not task.stop(STOP_TIMEOUT_SECONDS / 2):
                stuck.append(task.name)
        if snapshot and self.config.persist is not None and self.emulator is not None:
            try:
                self._snapshot()
                self.out.write(f"state saved to {self.config.persist}\n")
            except Exception:
                _log.exception("could not save the state to %s", self.config.persist)
                stuck.append("snapshot")
        if self.emulator is not None and not self.emulator.stop(STOP_TIMEOUT_SECONDS / 2):
            stuck.append("emulator")
        if self.certificates is not None:
            shutil.rmtree(self.certificates, ignore_errors=True)
            self.certificates = None
        self.gateway = self.worker = self.emulator = None
        self.live = None
        self.tasks = []
        return stuck

    @property
    def model(self) -> str:
        """What answers: ``AGENTTURN_MODEL``'s choice; else "demo" for the demo agents (they run the demo model)
        and "own" for a team's (``--agents``), whose ``build`` picks its model: no demo badge, no demo prompts."""
        chosen = os.environ.get("AGENTTURN_MODEL", "").strip().lower()
        if chosen:
            return chosen
        from agentturn.api.settings import DEFAULT_AGENTS, Settings

        return "demo" if Settings.from_env().agents == DEFAULT_AGENTS else "own"

    def banner(self) -> str:
        assert self.emulator is not None
        model_text = {
            "demo": "demo (deterministic scripted replies, not an LLM)",
            "own": "the one your agents' build function gives them (AGENTTURN_MODEL unset)",
        }.get(self.model, self.model)
        state = (
            f"kept in {self.config.persist}"
            if self.config.persist
            else "in memory (gone on exit; --persist DIR keeps it)"
        )
        events = ""
        if self.live is not None and self.live.amplify_endpoint and self.live.certificate is not None:
            events = (
                f"  events    AWS Amplify's API.Events.endpoint: {self.live.amplify_endpoint} (wss, self-signed "
                f"certificate {self.live.certificate})\n"
            )
        return (
            f"agentturn dev: console at {self.url}\n"
            f"  user      {self.config.user} (switch in the console; local only)\n"
            f"  agents    {', '.join(self.agents)}\n"
            f"  model     {model_text}\n"
            f"{events}"
            f"  emulator  moto at {self.emulator.endpoint_url} (DynamoDB, SQS, S3)\n"
            f"  state     {state}\n"
            "Press Ctrl-C to stop.\n"
        )


def serve(config: DevConfig, out: TextIO | None = None) -> int:
    """Run until SIGINT/SIGTERM; a second signal exits at once."""
    out = out or sys.stdout
    configure(logging.INFO if config.log_requests else logging.WARNING)
    server = DevServer(config, out=out)
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stopping.is_set():
            out.write("\nforced exit\n")
            out.flush()
            os._exit(130)
        stopping.set()

    previous: dict[signal.Signals, Any] = {}
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        previous[stop_signal] = signal.signal(stop_signal, on_signal)
    try:
        server.start()
        out.write(server.banner())
        out.flush()
        while not stopping.wait(0.5):  # a short wait keeps signal delivery prompt everywhere
            pass
        out.write("\nstopping…\n")
        out.flush()
        stuck = server.stop()
        if stuck:
            out.write(f"did not stop in time: {', '.join(stuck)}\n")
        out.write("stopped\n")
        out.flush()
        return 0
    finally:
        for stop_signal, handler in previous.items():
            signal.signal(stop_signal, handler)
