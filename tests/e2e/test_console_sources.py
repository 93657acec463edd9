"""The console's files themselves: no HTML-building APIs, and a vendored bundle that matches its source."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

WEB = Path(__file__).resolve().parents[2] / "shared" / "agentturn" / "web"
ROOT = WEB.parents[2]
#: Every DOM API that parses a string as markup.
MARKUP_APIS = re.compile(
    r"\binnerHTML\b|\bouterHTML\b|insertAdjacentHTML|document\.write|dangerouslySetInnerHTML|createContextualFragment"
)


@pytest.mark.parametrize(
    "name",
    [
        "app.js",
        "api.js",
        "cards.js",
        "conversations.js",
        "dom.js",
        "inbox.js",
        "inbox_form.js",
        "drafts.js",
        "live.js",
        "live_view.js",
        "poller.js",
        "schema_text.js",
        "scroll.js",
        "timeline.js",
        "src/forms.jsx",
        "src/form_messages.mjs",
        "src/markdown.mjs",
        "src/validator.mjs",
    ],
)
def test_console_code_never_parses_strings_as_html(name: str) -> None:
    source = (WEB / name).read_text()
    assert not MARKUP_APIS.search(source), f"{name} uses an API that turns text into markup"


def test_console_loads_nothing_from_other_origins() -> None:
    html = (WEB / "index.html").read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", html)


def test_vendored_form_library_matches_its_pinned_source() -> None:
    esbuild = ROOT / "node_modules" / "esbuild"
    if shutil.which("node") is None or not esbuild.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("node or node_modules/esbuild is missing on CI (scripts/test runs npm ci)")
        pytest.skip("needs node and `npm ci`")
    result = subprocess.run(
        ["node", str(WEB / "src" / "build.mjs"), "--check"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr or result.stdout
