"""Session-wide fixtures. The emulators start only when a test asks for them; logic is in tests/support."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.emulators import (
    FAKE_AWS_ENV,
    Emulator,
    leaky_aws_env_vars,
    start_dynamodb_local,
    start_moto_server,
)

if TYPE_CHECKING:
    from tests.support.mcp_server import RunningServer


@pytest.fixture(scope="session", autouse=True)
def aws_env() -> Iterator[None]:
    """Fake credentials and region for the whole session; no AWS_* setting of the machine leaks in.

    Machine AWS_ENDPOINT_URL*, profiles and tokens are removed, so nothing can reach real AWS (or an
    endpoint a developer has configured). Tests that need an endpoint in the environment set it
    themselves (``monkeypatch.setenv``).
    """
    with pytest.MonkeyPatch.context() as patch:
        for name in leaky_aws_env_vars(os.environ):
            patch.delenv(name)
        for name, value in FAKE_AWS_ENV.items():
            patch.setenv(name, value)
        if "boto3" in sys.modules:  # a default session made earlier may hold credentials it resolved
            patch.setattr(sys.modules["boto3"], "DEFAULT_SESSION", None)
        yield


@pytest.fixture(scope="session")
def dynamodb_local(aws_env: None) -> Iterator[Emulator]:
    """Amazon DynamoDB Local (in memory) on 127.0.0.1, shared by the session: use unique table names."""
    with start_dynamodb_local() as emulator:
        yield emulator


@pytest.fixture(scope="session")
def moto_server(aws_env: None) -> Iterator[Emulator]:
    """moto's server (SQS, S3, ...) on 127.0.0.1, shared by the session: use unique resource names."""
    with start_moto_server() as emulator:
        yield emulator


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium under Playwright, one for the whole session.

    One only: Playwright's sync API runs its own event loop for as long as it is open, and a second
    ``sync_playwright()`` opened while the first is (a module's own browser after the console tests) is refused.
    """
    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def desk() -> Iterator[RunningServer]:
    """The tests' MCP server (FastMCP over streamable HTTP, ``tests.support.mcp_server``), one per test module."""
    from tests.support import mcp_server  # FastMCP is imported only by the modules that ask for it

    running = mcp_server.start()
    yield running
    running.stop()
