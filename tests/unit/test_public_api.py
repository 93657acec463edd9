"""The public Python API of issue 15 item 5: names that read well, old names that keep working with a warning."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from agentturn import FormMessage
from agentturn.api.models import SuspensionView
from agentturn.state import SuspensionType

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}


def _card(**schema: Any) -> FormMessage:
    return FormMessage(action_id="call-1", form_key="meeting", **schema)


# ------------------------------------------------------------------------------------- FormMessage.schema


def test_form_message_schema_is_the_schema_dict_not_pydantics_method() -> None:
    # GIVEN a form card built with a schema
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation on the new name
        card = _card(schema=SCHEMA)
        # WHEN its schema is read THEN it is that dict, and the wire field keeps its name
        assert card.schema == SCHEMA
        assert card.to_wire()["schema"] == SCHEMA
        assert FormMessage.model_validate(card.to_wire()).schema == SCHEMA


def test_form_message_schema_underscore_still_reads_and_builds_with_a_deprecation_warning() -> None:
    # GIVEN code written against the old name
    with pytest.warns(DeprecationWarning, match="schema_"):
        card = _card(schema_=SCHEMA)
    # WHEN it reads the old attribute THEN it gets the schema, and is told to move
    with pytest.warns(DeprecationWarning, match="use `schema`"):
        assert card.schema_ == SCHEMA
    assert card.schema == SCHEMA


def test_form_message_refuses_both_schema_names_at_once() -> None:
    # GIVEN both names WHEN the card is built THEN it is refused rather than one of them silently winning
    with pytest.warns(DeprecationWarning, match="schema_"), pytest.raises(ValueError, match="not both"):
        _card(schema=SCHEMA, schema_={"type": "object"})


def test_suspension_view_schema_is_the_schema_dict() -> None:
    # GIVEN the HTTP view of a form suspension WHEN its schema is read THEN it is the dict, on the wire too
    view = SuspensionView(type=SuspensionType.USER_INPUT, action_id="a", correlation_id="a", message="", schema=SCHEMA)
    assert view.schema == SCHEMA
    assert '"schema":{"type":"object"' in view.to_json()
    with pytest.warns(DeprecationWarning, match="schema_"):
        assert view.schema_ == SCHEMA
