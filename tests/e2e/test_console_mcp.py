"""An MCP server's question in the console, against ``agentturn dev`` serving an agent whose tools are a
FastMCP server's: the card names the server, and the answer reaches the server as its retry."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, DevProcess, free_port, open_console, send
from tests.support.mcp_server import RunningServer


@pytest.fixture(scope="module")
def mcp_dev(desk: RunningServer) -> Iterator[DevProcess]:
    env = {"AGENTTURN_AGENTS": "tests.functional.agents:mcp_agents", "AGENTTURN_TEST_MCP_URL": desk.url}
    server = DevProcess(free_port(), ARTIFACTS / "dev-server-mcp.log", env=env).start()
    yield server
    assert server.stop() == 0, server.log()


@pytest.fixture
def mcp_page(browser: Any, mcp_dev: DevProcess) -> Iterator[Any]:
    expect.set_options(timeout=15_000)
    context = browser.new_context(base_url=mcp_dev.url, viewport={"width": 1100, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"uncaught errors in the console: {errors}"


def test_an_mcp_question_shows_as_a_card_naming_the_server_and_its_answer_is_the_servers_retry(
    mcp_page: Any, desk: RunningServer, artifacts: Path
) -> None:
    page = mcp_page
    open_console(page, "mcp-agent")
    send(page, "open a login ticket")
    card = page.locator("[data-testid=form-card][data-status=PENDING]")
    expect(card).to_have_count(1)
    expect(card).to_contain_text("desk (MCP server)")  # the server that asks
    expect(card).to_contain_text("Which system is affected?")  # its message
    card.get_by_label(re.compile(r"Affected system")).fill("SSO")
    card.screenshot(path=str(artifacts / "mcp-question-card.png"))
    card.get_by_role("button", name="Submit").click()
    expect(page.locator("[data-testid=form-card][data-status=SUBMITTED]")).to_have_count(1)
    answer = page.get_by_test_id("ai-message").filter(has_text="created 'login' for SSO")
    expect(answer).to_have_count(1)
    retry = desk.recorder.calls("create_ticket")[-1].request["params"]
    assert retry["inputResponses"]["system_question"] == {"action": "accept", "content": {"system": "SSO"}}
    assert "requestState" in retry
