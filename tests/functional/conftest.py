"""Functional tests: the four Lambda handlers invoked with real event payloads against moto's server.

Tracing is off (no X-Ray daemon here); it must be set before the handler modules create their Tracer.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "agentturn")

from tests.functional.harness import Deployment
from tests.support.emulators import Emulator


@pytest.fixture
def deployment(moto_server: Emulator, monkeypatch: pytest.MonkeyPatch) -> Deployment:
    """A fresh deployment (tables, queue with DLQ, bucket) and the handlers wired to it on first use."""
    return Deployment(moto_server, monkeypatch)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Read routes record no metric; the handler modules silence Powertools' warning about that, but
    # pytest restores the warning filters for every test.
    for item in items:
        if "tests/functional/" in item.nodeid:
            item.add_marker(pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning"))
