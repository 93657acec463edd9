"""A ``moto`` server in its own process on 127.0.0.1, started and stopped by the benchmark.

A separate process (not ``ThreadedMotoServer``) so the emulator's CPU is not the benchmark's CPU, and so it
can be measured on its own (``cpu_seconds`` reads ``/proc/<pid>/stat``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Final

FAKE_ENV: Final = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}

# werkzeug logs every request at INFO: silence it so the emulator does not spend its CPU on a log.
_SERVER_CODE: Final = (
    "import logging, sys\n"
    "logging.getLogger('werkzeug').setLevel(logging.ERROR)\n"
    "from moto.server import main\n"
    "main(['-H', '127.0.0.1', '-p', sys.argv[1]])\n"
)
_STARTUP_TIMEOUT: Final = 30.0
_STOP_TIMEOUT: Final = 10.0


def use_fake_aws_env() -> None:
    """Fake credentials and a fixed region for this process; drop anything that could point elsewhere."""
    for name in list(os.environ):
        if name.startswith("AWS_") and name != "AWS_CA_BUNDLE":
            del os.environ[name]
    os.environ.update(FAKE_ENV)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class MotoServer:
    """``with MotoServer() as moto: ... moto.endpoint_url ...``"""

    def __init__(self, log_path: Path | None = None) -> None:
        self.port = free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        self._log = open(log_path or os.devnull, "ab")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, **FAKE_ENV}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER_CODE, str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + _STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.endpoint_url}/moto-api/", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto_server did not answer on {self.endpoint_url} within {_STARTUP_TIMEOUT} s")

    def cpu_seconds(self) -> float:
        """User + system CPU the emulator process has used so far (clock-tick resolution, 10 ms)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=_STOP_TIMEOUT)
        self._log.close()

    def __enter__(self) -> MotoServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
