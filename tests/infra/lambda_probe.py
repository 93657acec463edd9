"""Run a bundled handler as Lambda would: a fresh interpreter with nothing but the asset on ``sys.path``.

``python -I -S`` (no site-packages, no user paths); the handler module is imported from the asset, optionally
serves one event, and the probe reports every loaded module that came from neither the asset nor the standard
library — after the event, so that what a route imports lazily is checked too — and where the modules asked
for were loaded from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

_PROBE: Final = r"""
import json, sys, sysconfig
asset, event, modules = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
sys.path.insert(0, asset)
import app
assert callable(app.handler), "app.handler is not callable"
result = {}
if event is not None:
    class Context:
        function_name = "agentturn-probe"
        function_version = "$LATEST"
        memory_limit_in_mb = 1024
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:agentturn-probe"
        aws_request_id = "request-1"
        log_group_name = "/aws/lambda/agentturn-probe"
        log_stream_name = "stream"
        def get_remaining_time_in_millis(self):
            return 20_000
    response = app.handler(event, Context())
    result["status"] = response["statusCode"]
    result["body"] = response.get("body", "")
stdlib = tuple({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})
result["foreign"] = sorted(
    name for name, module in list(sys.modules.items())
    if getattr(module, "__file__", None) and not module.__file__.startswith((asset, *stdlib))
)
result["files"] = {name: sys.modules[name].__file__ for name in modules}
print("RESULT " + json.dumps(result))
"""


def run_handler(
    asset: Path,
    env: Mapping[str, str],
    event: Mapping[str, Any] | None = None,
    *,
    modules: Sequence[str] = (),
) -> dict[str, Any]:
    """The probe's report: ``foreign`` modules, ``files`` of ``modules``, and ``status``/``body`` of the event."""
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _PROBE, str(asset), json.dumps(event), json.dumps(list(modules))],
        env=dict(env),
        cwd=asset,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{asset.name}: the handler failed\n{result.stdout}\n{result.stderr}"
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    report: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    return report
