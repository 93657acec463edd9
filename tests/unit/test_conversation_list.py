"""What a turn start writes into the conversations list, and the list's cursor."""

from __future__ import annotations

import pytest

from agentturn.state.turn import Turn
from agentturn.testing.builders import new_turn
from agentturn.timeline.conversation_list import (
    TITLE_MAX_CHARS,
    InvalidCursorError,
    decode_cursor,
    encode_cursor,
    listing_for,
    title_of,
)


def _turn(text: str, metadata: dict[str, str]) -> Turn:
    return new_turn(conversation_id="u1/c1", text=text).model_copy(
        update={"metadata": metadata, "created_at": "2026-12-01T10:00:00.000000Z"}
    )


def test_the_title_is_the_first_non_blank_line_cut_to_a_readable_length() -> None:
    # GIVEN inputs with leading blank lines, several lines, or a very long line
    long_line = "退款" * 100
    # THEN the title is the first line with text, cut with an ellipsis at the limit
    assert title_of("\n  \nbook a room\nfor Friday") == "book a room"
    assert len(title_of(long_line)) == TITLE_MAX_CHARS
    assert title_of(long_line).endswith("…")
    assert title_of("") == ""


def test_only_a_turn_with_an_owner_is_listed() -> None:
    # GIVEN a turn the HTTP API started (its owner in the metadata) and one started by library code
    owned = listing_for(_turn("hello", {"ownerId": "u1"}))
    unowned = listing_for(_turn("hello", {}))
    # THEN only the first is listed, under its owner, at its start time
    assert owned is not None and (owned.owner, owned.title, owned.at) == ("u1", "hello", "2026-12-01T10:00:00.000000Z")
    assert unowned is None


def test_a_cursor_names_a_position_for_one_owner_only() -> None:
    cursor = encode_cursor("u1", "2026-12-01T10:00:00Z", "u1/c1")
    # THEN it reads back for its owner, and is refused for another owner or when it was made up
    assert decode_cursor("u1", cursor) == ("2026-12-01T10:00:00Z", "u1/c1")
    with pytest.raises(InvalidCursorError) as refused:
        decode_cursor("u2", cursor)
    assert "was not handed out" in str(refused.value)
    for bad in ("", "%%%", "eyJ4IjoxfQ", encode_cursor("u1", "a", "b")[:-3]):
        with pytest.raises(InvalidCursorError):
            decode_cursor("u1", bad)
