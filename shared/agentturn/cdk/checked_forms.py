"""Check the deployed agents' form schemas once, when an asset is built, instead of in every cold process.

The target's Python (:func:`agentturn.cdk.bytecode.target_interpreter`) loads the agents from the built asset
alone, so the asset's own jsonschema judges them; the digests of the schemas the meta-schema accepted are written
beside ``agentturn`` (:data:`agentturn.forms.checked.CHECKED_SCHEMAS_FILE`), and a cold process skips jsonschema
for those (:mod:`agentturn.forms.checked`). Nothing is written when the interpreter is missing, the target's
wheels do not load on this machine (another architecture), or the agents do not load without the deployed
environment: each process then checks its forms in full, as before.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path
from typing import Final

from agentturn.cdk.bytecode import target_interpreter
from agentturn.forms.checked import CHECKED_SCHEMAS_FILE

_log = logging.getLogger("agentturn.cdk.checked_forms")

#: Run by the target's interpreter with the asset alone on the path (``-I -S``); the last line is the answer.
_LOAD_AND_LIST: Final = """
import json, sys
sys.path.insert(0, sys.argv[1])
from agentturn.api.agents import load_agents
from agentturn.forms.checked import passed_digests
load_agents(sys.argv[2])
print()
print(json.dumps(passed_digests()))
"""
#: Seconds the agents' module may take to load.
TIMEOUT_SECONDS: Final = 120


def checked_digests(asset: Path, agents: str, python_version: str) -> list[str] | None:
    """The digests of the schemas ``agents`` define, found valid by the asset's own jsonschema; ``None`` when the
    asset's Python cannot load them here."""
    interpreter = target_interpreter(python_version)
    if interpreter is None:
        return None
    # The deployed environment is not known at build time: the agents load with nothing of this machine's but
    # its PATH, and pydantic's plugin scan off as in the functions.
    environment = {"PATH": os.environ.get("PATH", ""), "PYDANTIC_DISABLE_PLUGINS": "__all__"}
    try:
        completed = subprocess.run(
            [interpreter, "-I", "-S", "-B", "-c", _LOAD_AND_LIST, str(asset), agents],
            cwd=asset,
            env=environment,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _log.info("agents %r did not load in %d s: their forms are checked at run time", agents, TIMEOUT_SECONDS)
        return None
    if completed.returncode != 0:
        _log.info("agents %r did not load from %s: %s", agents, asset.name, completed.stderr[-500:])
        return None
    digests = json.loads(completed.stdout.strip().splitlines()[-1])
    if not isinstance(digests, list) or not all(isinstance(d, str) for d in digests):
        return None
    return sorted(digests)


def write_checked(asset: Path, digests: list[str]) -> None:
    """Beside the asset's ``agentturn`` package, where :mod:`agentturn.forms.checked` looks."""
    (asset / CHECKED_SCHEMAS_FILE).write_text("".join(f"{digest}\n" for digest in digests), encoding="ascii")
