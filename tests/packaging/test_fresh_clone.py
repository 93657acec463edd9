"""The README's first hour, on a fresh clone of this checkout, as a new user types it: "The two commands" (the
console, then the tests) and "Your own agents" up to the project's own tests — inside a fresh virtual
environment, and outside one.

Offline: the installs resolve from the machine's packages (the environment is made with
``--system-site-packages`` and pip runs with ``PIP_NO_INDEX``; ``scripts/test`` skips its install step, which
needs the network, with ``AGENTTURN_TEST_SKIP_INSTALL=1``). Outside a virtual environment pip installs into a
user site of the test's own (``PIP_USER``, ``PYTHONUSERBASE``): the machine's interpreter and its packages are
not touched. The `npm install` of "Your own agents" is played by a stand-in that links this checkout's
node_modules (the same CDK CLI pin).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[2]
README: Final = ROOT / "README.md"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]


def _block(heading: str) -> list[str]:
    """The commands of the first ```bash block under ``heading``, comments dropped."""
    text = README.read_text()
    section = text[text.index(heading) :]
    found = re.search(r"```bash\n(.*?)```", section, re.S)
    assert found is not None, heading
    commands = [line.split(" # ")[0].rstrip() for line in found.group(1).splitlines()]
    return [command for command in commands if command.strip()]


@dataclass
class Shell:
    """Runs README lines with bash in one folder and environment, as a person's terminal would."""

    cwd: Path
    env: dict[str, str]
    timings: dict[str, float]

    def run(self, line: str, *, timeout: float = 900) -> str:
        started = time.monotonic()
        result = subprocess.run(
            ["bash", "-c", line],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        self.timings[line] = round(time.monotonic() - started, 1)
        assert result.returncode == 0, f"$ {line}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        return result.stdout

    def serve_console(self, line: str) -> dict[str, object]:
        """Starts ``line`` (``... && agentturn dev``) on a free port, reads the console and /_dev/info, stops it."""
        port = _free_port()
        started = time.monotonic()
        process = subprocess.Popen(
            ["bash", "-c", f"{line} --port {port} --events-port -1 --quiet"],
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 300
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as page:
                        html = page.read().decode()
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_dev/info", timeout=2) as answer:
                        info: dict[str, object] = json.loads(answer.read())
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        output = process.stdout.read().decode() if process.stdout else ""
                        pytest.fail(f"$ {line}: no console (exit {process.poll()}):\n{output}")
                    time.sleep(0.2)
            self.timings[f"{line} (to the console)"] = round(time.monotonic() - started, 1)
            assert "<title>" in html
            return info
        finally:
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in the terminal: bash and agentturn dev
            process.wait(timeout=60)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """`git clone` of this checkout's last commit."""
    target = tmp_path / "agentturn"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True, timeout=300)
    return target


def _base_env(tmp_path: Path) -> dict[str, str]:
    stand_ins = tmp_path / "stand-ins"
    stand_ins.mkdir(exist_ok=True)
    npm = stand_ins / "npm"
    npm.write_text(f'#!/bin/sh\n[ "$1" = install ] || exit 2\nln -s {ROOT / "node_modules"} node_modules\n')
    npm.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {
        **env,
        # The machine's Python first (not the environment these tests run in).
        "PATH": f"{stand_ins}{os.pathsep}{Path(sys.base_prefix) / 'bin'}{os.pathsep}{env['PATH']}",
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",  # the build tools come from the machine too
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "AGENTTURN_TEST_SKIP_INSTALL": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


@pytest.fixture(params=["in a fresh venv", "outside a venv"])
def terminal(request: pytest.FixtureRequest, clone: Path, tmp_path: Path) -> Shell:
    env = _base_env(tmp_path)
    if request.param == "outside a venv":
        # pip installs where a user's install outside a venv goes when the system's site is not theirs: a user
        # site, here one of this test's own, so that the machine's packages stay as they are.
        env |= {"PIP_USER": "1", "PYTHONUSERBASE": str(tmp_path / "user")}
        env["PATH"] = f"{tmp_path / 'user' / 'bin'}{os.pathsep}{env['PATH']}"
    return Shell(clone, env, {})


def _in_venv(line: str) -> str:
    """The README's venv line, offline: the fresh environment sees the machine's packages."""
    if "python3 -m venv .venv" in line:
        return line.replace("python3 -m venv .venv", "python3 -m venv --system-site-packages .venv")
    return line


def test_the_two_commands_and_your_own_agents_run_on_a_fresh_clone(
    terminal: Shell, request: pytest.FixtureRequest
) -> None:
    inside = "fresh venv" in request.node.callspec.id
    run_it = _block("## The two commands")
    assert run_it[0].startswith("python3 -m venv .venv && . .venv/bin/activate"), run_it
    assert run_it[1] == "python3 -m pip install -e '.[local]' && agentturn dev", run_it
    activate = ". .venv/bin/activate && " if inside else ""
    # GIVEN the README's "Run it": (a venv,) the install, then `agentturn dev`
    if inside:
        terminal.run(_in_venv(run_it[0]))
    install, serve = run_it[1].split(" && ")
    terminal.run(activate + install)
    located = terminal.run(activate + "python3 -c 'import agentturn; print(agentturn.__file__)'").strip()
    assert located.startswith(str(terminal.cwd)), located  # the clone's code, not the machine's install
    # WHEN it serves THEN the console answers, on the demo agents
    info = terminal.serve_console(activate + serve)
    assert info["model"] == "demo" and "support-agent" in info["agents"]  # type: ignore[operator]
    # AND "Test it" runs green (a part of the unit suite here; the whole suite is CI's)
    (test_it,) = _block("Test it (installs everything")
    assert test_it == "bash scripts/test"
    out = terminal.run(f"{activate}{test_it} tests/unit/test_scaffold.py tests/unit/test_cli.py -q -p no:cacheprovider")
    assert " passed" in out and "failed" not in out, out
    # AND "Your own agents", after its venv and its install of this clone: init, the project's steps, its tests
    own = _block("## Your own agents")
    assert own[1].startswith('python3 -m pip install "$AGENTTURN[cdk,local]"'), own
    terminal.env["AGENTTURN"] = str(terminal.cwd)
    if inside:  # the first venv already has the clone (editable); the README's second line installs it again
        terminal.run(activate + own[1])
    work = terminal.cwd.parent / "work"
    work.mkdir()
    venv_of_clone = f". {terminal.cwd / '.venv' / 'bin' / 'activate'} && " if inside else ""
    assert own[2] == "agentturn init access-desk && cd access-desk"
    Shell(work, terminal.env, terminal.timings).run(venv_of_clone + "agentturn init access-desk")
    project = Shell(work / "access-desk", terminal.env, terminal.timings)
    assert own[3:5] == ["python3 -m pip install -e '.[dev]' && npm install", "python3 -m pytest"], own
    project.run(venv_of_clone + own[3])
    out = project.run(venv_of_clone + own[4])
    assert " passed" in out and "failed" not in out, out
    print(f"\nfresh clone timings (s): {json.dumps(terminal.timings)}")
