"""Form schemas already checked against JSON Schema's meta-schema when the Lambda asset was built.

:func:`agentturn.forms.schema_rules.check_form_schema` checks a schema against the draft 2020-12 meta-schema with
jsonschema, the only use of jsonschema at run time, and importing it is about a tenth of a second of every cold
process that defines a form (the demo agents define theirs at import) or checks a submission. The bundler
(:mod:`agentturn.cdk.bundling`) loads the deployed agents once, with the asset's own jsonschema, and writes the
digest of every schema that passed into :data:`CHECKED_SCHEMAS_FILE` at the asset's root; a process whose
``agentturn`` sits beside that file skips the meta-schema check for exactly those schemas. agentturn's own rules
(references, cycles, patterns, formats) are cheap and run every time; any other schema (a team's schema built at
run time, an MCP server's) is checked in full, and without the file (a checkout, ``agentturn dev``) all are.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Final

#: Beside the ``agentturn`` package in a built asset: one hex SHA-256 per line (:func:`schema_digest`).
CHECKED_SCHEMAS_FILE: Final = "agentturn-checked-schemas.txt"

_passed: set[str] = set()
_passed_lock = threading.Lock()


def schema_digest(schema: Any) -> str | None:
    """SHA-256 of the schema's canonical JSON (sorted keys, no spaces); ``None`` when it is not plain JSON."""
    try:
        text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def _checked_at_build() -> frozenset[str]:
    path = Path(__file__).resolve().parents[2] / CHECKED_SCHEMAS_FILE
    try:
        lines = path.read_text(encoding="ascii").split()
    except FileNotFoundError:
        return frozenset()
    return frozenset(lines)


def checked_at_build(digest: str | None) -> bool:
    """Whether the asset's build found the schema of ``digest`` valid under the meta-schema."""
    return digest is not None and digest in _checked_at_build()


def passed_meta_check(digest: str | None) -> None:
    """Called by the check for each schema the meta-schema accepted in this process."""
    if digest is not None:
        with _passed_lock:
            _passed.add(digest)


def passed_digests() -> list[str]:
    """The digest of every schema the meta-schema accepted in this process so far, sorted: what the bundler
    writes into :data:`CHECKED_SCHEMAS_FILE` after loading the deployed agents."""
    with _passed_lock:
        return sorted(_passed)
