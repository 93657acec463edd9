"""The form validator, loaded where submitted data is first checked.

The validator brings the ``regex`` package and the format checks. A process that never checks a submission (the
sweeper, the retention handler) should not pay for them at its cold start, so the engine, which every handler
imports, reaches the validator only through :func:`problems_in` (``tests/functional/test_cold_start.py`` holds
the sweeper to it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentturn.forms.validation import Problem


def problems_in(schema: dict[str, Any], data: Any) -> list[Problem]:
    """Every problem with ``data`` under ``schema``, worded (:func:`agentturn.forms.validation.validate_form_data`);
    empty when it is accepted."""
    from agentturn.forms.validation import validate_form_data

    return validate_form_data(schema, data)
