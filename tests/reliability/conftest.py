"""The reliability suite: races, crashes at every persistence boundary, duplicate delivery, hostile input,
isolation. Each test records its figures in :data:`FIGURES`; the suite prints them at the end.

Long mode: ``AGENTTURN_CRASH_SEEDS=1000 python -m pytest tests/reliability -m slow`` (see test_crashes.py);
one seed: ``AGENTTURN_CRASH_SEED=17 python -m pytest tests/reliability/test_crashes.py``.
"""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "agentturn")

from tests.reliability.figures import FIGURES
from tests.reliability.kit import Stack, memory_stack


@pytest.fixture
def stack() -> Stack:
    """The HTTP API (run + submit routes) and a worker on the in-memory adapters, with a ledger."""
    return memory_stack()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/reliability/" in item.nodeid:
            item.add_marker(pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    grouped: dict[str, list[str]] = defaultdict(list)
    for (group, name), value in FIGURES.items():
        grouped[group].append(f"{name}: {value}")
    for group in sorted(grouped):
        terminalreporter.write_line(f"{group}: " + ", ".join(grouped[group]))
