"""The form validator as deployed: imported from the built submit asset alone, it asserts formats and patterns.

Formats used to be checked in tests but not in production (jsonschema's format checkers need packages the
bundle did not have); the server's checks are now the package's own code plus ``regex``, which the bundle ships.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Final

from tests.infra.synth import Synth
from tests.infra.test_bundle import _asset_dir, bundled  # noqa: F401 - the module's bundled-asset fixture

_PROBE: Final = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from agentturn.forms.validation import validate_form_data
schema = {"type": "object", "properties": {
    "at": {"type": "string", "format": "date-time"},
    "code": {"type": "string", "pattern": "^\\d{4}$"},
}}
answers = {
    "valid": validate_form_data(schema, {"at": "2024-02-29T09:30:00Z", "code": "2024"}),
    "bad_date": validate_form_data(schema, {"at": "2023-02-29T09:30:00Z"}),
    "bad_code": validate_form_data(schema, {"code": "\u0662\u0660\u0662\u0664"}),
}
print("RESULT " + json.dumps({k: [p["path"] for p in v] for k, v in answers.items()}))
"""


def test_the_bundled_validator_checks_a_date_time(bundled: Synth) -> None:  # noqa: F811
    # GIVEN the submit function's asset as built for Lambda
    asset = _asset_dir(bundled, "submit")
    # WHEN its validator checks a valid date-time, an impossible one and non-ASCII digits, with nothing else on the path
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _PROBE, str(asset)],
        cwd=asset,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    # THEN it answers as the tests and the console do
    assert json.loads(line.removeprefix("RESULT ")) == {"valid": [], "bad_date": ["/at"], "bad_code": ["/code"]}
