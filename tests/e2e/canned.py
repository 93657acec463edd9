"""Canned timeline entries for console tests that need card states too slow or rare to reach for real."""

from __future__ import annotations

from typing import Any

CANNED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Incident details",
    "properties": {"affectedSystem": {"type": "string", "title": "Affected system"}},
}


def form_card_entry(status: str, number: int, *, description: str, **extra: Any) -> dict[str, Any]:
    """A form card of turn ``t1`` in ``status`` (fields not given are the wire defaults)."""
    return {
        "type": "agent_form",
        "messageId": f"t1:input:call-{number}",
        "turnId": "t1",
        "actionId": f"call-{number}",
        "formKey": f"form_{status.lower()}",
        "description": description,
        "schema": CANNED_SCHEMA,
        "status": status,
        "actions": [],
        "submittedValues": None,
        "submittedBy": None,
        "submittedAt": None,
        "valuesRedacted": False,
        "declineReason": None,
        "expiresAt": None,
        "modelVisible": False,
        "version": 2,
        **extra,
    }
