"""A FastMCP 4 server whose tools run as tasks through FastMCP's own Tasks extension (the ``fastmcp-tasks``
package, SEP-2663), on 127.0.0.1, recorded like :mod:`tests.support.mcp_server`.

Nothing here scripts the wire: ``tools/call`` answers with FastMCP's ``CreateTaskResult`` and ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` are FastMCP's handlers, on its Docket engine (``memory://``, in process).
Its tools, each ``task=TaskConfig(mode="required")`` (always a task, polled every second):

- ``deploy``: asks "Deploy to production?" inside the task (a guard leg returns ``InputRequiredResult``; the
  answer from ``tasks/update`` starts the next leg), then answers with what the person chose;
- ``report``: completes after ``polls`` polls of ``tasks/get`` for it (it counts the server's own recorded
  exchanges, so the number of polls is exact whatever the machine's speed);
- ``migrate``: fails with a JSON-RPC error (a protocol fault: the task ends ``failed``, SEP-2663);
- ``crash``: raises an ordinary exception (SEP-2663: a ``completed`` task whose result has ``isError``).
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from typing import Any

import mcp_types as mt
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from fastmcp_tasks.context import get_task_context
from mcp.shared.exceptions import MCPError

from tests.support import mcp_server
from tests.support.mcp_server import Recorder, RunningServer

#: how often FastMCP tells the client to poll (the shortest interval agentturn keeps: 1 s)
POLL_INTERVAL = timedelta(seconds=1)
#: the task's lifetime (``ttlMs``). fastmcp-tasks 4.1.4 takes it from Docket's ``execution_ttl`` (15 minutes by
#: default) and offers no setting for it, so :func:`start` sets it on the running Docket: a task that waits days
#: for a person must outlive the wait.
TASK_TTL = timedelta(days=7)
#: what ``report`` answers once done
REPORT_TEXT = "report ready: 42 incidents"
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Deploy now"}},
    "required": ["confirm"],
}
#: how long ``report`` waits for its polls before it gives up (a bound, not a pace)
_REPORT_PATIENCE_SECONDS = 120.0


def _polls_of(recorder: Recorder, task_id: str) -> int:
    with recorder.lock:
        return sum(
            1
            for e in recorder.exchanges
            if e.request.get("method") == "tasks/get" and e.request.get("params", {}).get("taskId") == task_id
        )


def build_app(recorder: Recorder) -> FastMCP:
    app = FastMCP("ops")
    app.add_extension(TasksExtension(url="memory://"))
    required = TaskConfig(mode="required", poll_interval=POLL_INTERVAL)

    @app.tool(task=required)
    async def deploy(service: str, ctx: Context) -> Any:
        """Deploys a service once a person confirms it (asked inside the task)."""
        answer = (ctx.input_responses or {}).get("confirm_deploy")
        if answer is None:
            question = mt.ElicitRequest(
                params=mt.ElicitRequestFormParams(message="Deploy to production?", requested_schema=CONFIRM_SCHEMA)
            )
            return mt.InputRequiredResult(input_requests={"confirm_deploy": question})
        if answer.action != "accept" or not (answer.content or {}).get("confirm"):
            return f"{service} not deployed: the person chose {answer.action}"
        return f"{service} deployed"

    @app.tool(task=required)
    async def report(polls: int) -> str:
        """Builds a report; done once the client has polled it ``polls`` times."""
        task = get_task_context()
        if task is None:
            raise RuntimeError("report runs only as a task")
        end = time.monotonic() + _REPORT_PATIENCE_SECONDS
        while _polls_of(recorder, task.task_id) < polls:
            if time.monotonic() > end:
                raise RuntimeError(f"report saw fewer than {polls} polls in {_REPORT_PATIENCE_SECONDS:g} s")
            await asyncio.sleep(0.02)
        return REPORT_TEXT

    @app.tool(task=required)
    async def migrate() -> str:
        """Fails with a JSON-RPC error."""
        raise MCPError(code=mt.INTERNAL_ERROR, message="the migration lock is held by another job")

    @app.tool(task=required)
    async def crash() -> str:
        """Raises."""
        raise RuntimeError("disk full")

    return app


def start() -> RunningServer:
    recorder = Recorder()
    app = build_app(recorder)
    running = mcp_server.start(recorder=recorder, app=app)
    docket = app._docket  # set by the extension's lifespan, which has run once the server is up
    if docket is None:
        running.stop()
        raise RuntimeError("FastMCP's tasks extension did not start its Docket")
    docket.execution_ttl = TASK_TTL
    return running


def task_requests(recorder: Recorder, since: int = 0) -> list[dict[str, Any]]:
    """The JSON-RPC requests the server received from ``since`` on, as sent (``tools/list`` left out)."""
    with recorder.lock:
        raw = [e.raw_request for e in recorder.exchanges[since:]]
    return [r for r in (json.loads(b) for b in raw) if r.get("method") != "tools/list"]
