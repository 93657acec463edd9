"""Server-sent events as AG-UI's HTTP transport frames them: one ``data:`` line of JSON per event."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    # Only a type here: the events' pydantic models are not built by a process that never streams AG-UI (the run
    # function registers the route, and so imports this module, for every request).
    from agentturn.agui.events import AgUiModel

CONTENT_TYPE: Final = "text/event-stream"
#: What an SSE answer carries besides its type: never cached or transformed by a proxy (buffering would hold
#: the model's text back), private to the caller.
STREAM_HEADERS: Final = {
    "Cache-Control": "no-store, no-transform",
    "X-Content-Type-Options": "nosniff",
    "X-Accel-Buffering": "no",
}


def encode(event: AgUiModel) -> bytes:
    """``data: {json}\\n\\n``; JSON never holds a raw newline, so one ``data:`` line is the whole event."""
    text = json.dumps(event.wire(), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return f"data: {text}\n\n".encode()
