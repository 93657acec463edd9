"""Browser tests: ``agentturn dev`` as a subprocess on a free port, driven by Playwright in Debian's
Chromium (headless). Skipped only when Chromium or Playwright is missing on a developer's machine; on CI
(``CI=true``) a missing browser is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / ".artifacts" / "e2e"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0


def _on_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require_browser() -> None:
    problems = []
    if not CHROMIUM.exists():
        problems.append(f"{CHROMIUM} is missing (apt-get install -y chromium; scripts/test installs it)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("the Python package playwright is missing (pip install -e '.[dev]')")
    if not problems:
        return
    if _on_ci():
        pytest.fail("browser tests cannot run on CI: " + "; ".join(problems), pytrace=False)
    pytest.skip("; ".join(problems))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class DevProcess:
    """One ``agentturn dev`` subprocess."""

    port: int
    log_path: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    #: Where it runs, and with which interpreter (a generated project runs its own venv's, in its folder).
    cwd: Path = ROOT
    python: str = sys.executable
    #: This checkout's package first (the installed one may be another worktree's editable install), and the
    #: repository's test agents; a generated project passes its own environment and ``--agents`` instead.
    base_env: dict[str, str] = field(
        default_factory=lambda: {
            "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)]),
            "AGENTTURN_AGENTS": "tests.e2e.agents:e2e_agents",
            # The demo agents and a few test agents, all on the demo model: the console shows its badge.
            "AGENTTURN_MODEL": "demo",
        }
    )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> DevProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.base_env, **self.env}
        log = self.log_path.open("wb")
        command = [self.python, "-m", "agentturn.cli", "dev", "--port", str(self.port), *self.args]
        self.process = subprocess.Popen(command, cwd=self.cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self._wait_ready()
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(self.url + "_dev/info", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"agentturn dev not ready in {START_TIMEOUT_S} s:\n{self.log()}", pytrace=False)
            try:
                # Doubles as the pause between attempts and the check that the server is still alive.
                self.process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            pytest.fail(f"agentturn dev exited with {self.process.returncode}:\n{self.log()}", pytrace=False)

    def stop(self) -> int | None:
        """Ctrl-C, as a person would; returns the exit status (``None`` if it had to be killed)."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)
            return None

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url.rstrip("/") + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


@pytest.fixture(scope="session")
def dev_server() -> Iterator[DevProcess]:
    server = DevProcess(free_port(), ARTIFACTS / "dev-server.log").start()
    yield server
    status = server.stop()
    # Ctrl-C must stop everything cleanly and promptly: exit status 0 and the closing line.
    assert status == 0, f"agentturn dev did not stop cleanly (status {status}):\n{server.log()}"
    assert "stopped" in server.log()


@dataclass
class PageProbe:
    """What a page did that a test may want to forbid: dialogs (alert) and uncaught errors."""

    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@pytest.fixture
def probe() -> PageProbe:
    return PageProbe()


@pytest.fixture
def page(browser: Any, dev_server: DevProcess, probe: PageProbe) -> Iterator[Any]:
    from playwright.sync_api import expect

    expect.set_options(timeout=15_000)
    context = browser.new_context(base_url=dev_server.url, viewport={"width": 1100, "height": 900})
    page = context.new_page()

    def on_dialog(dialog: Any) -> None:
        probe.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda error: probe.errors.append(str(error)))
    yield page
    context.close()
    assert not probe.errors, f"uncaught errors in the console: {probe.errors}"


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def unique(prefix: str) -> str:
    return f"{prefix}-{os.urandom(5).hex()}"


def open_console(page: Any, agent: str, conversation: str | None = None, query: str = "") -> str:
    """Open the console on a fresh conversation with ``agent`` picked; returns the conversation id."""
    conversation = conversation or unique("e2e")
    separator = "&" if query else ""
    page.goto(f"/?agent={agent}{separator}{query}#c={conversation}")
    from playwright.sync_api import expect

    expect(page.locator("#agent")).to_have_value(agent)
    return conversation


def send(page: Any, text: str) -> None:
    page.locator("#input").fill(text)
    page.locator("#send").click()


AXE_SOURCE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
#: What the console must never have (axe-core's impact levels).
BLOCKING_IMPACTS = frozenset({"serious", "critical"})


def axe_violations(page: Any, selector: str | None = None) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page (or inside ``selector``).

    axe is evaluated through the DevTools protocol, not added as a page script, so the page's CSP stays
    exactly as served (no inline script is allowed there, and none is needed).
    """
    if not AXE_SOURCE.exists():
        if _on_ci():
            pytest.fail("node_modules/axe-core is missing on CI (scripts/test runs npm ci)", pytrace=False)
        pytest.skip("needs `npm ci` (axe-core)")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_SOURCE.read_text() + "\n;0")
    results: dict[str, Any] = page.evaluate(
        """async (selector) => {
            const context = selector ? document.querySelectorAll(selector) : document;
            const r = await axe.run(context, { resultTypes: ["violations"] });
            return { violations: r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help,
                     nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 5) })) };
        }""",
        selector,
    )
    return [v for v in results["violations"] if v["impact"] in BLOCKING_IMPACTS]


def open_settings(page: Any) -> None:
    settings = page.locator("details.settings")
    if settings.get_attribute("open") is None:
        settings.locator("summary").click()
