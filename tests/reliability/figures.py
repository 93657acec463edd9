"""Figures the reliability tests record, printed by ``pytest_terminal_summary`` (conftest.py)."""

from __future__ import annotations

FIGURES: dict[tuple[str, str], int | str] = {}


def record(group: str, **values: int | str) -> None:
    for name, value in values.items():
        previous = FIGURES.get((group, name))
        if isinstance(previous, int) and isinstance(value, int):
            FIGURES[(group, name)] = previous + value
        else:
            FIGURES[(group, name)] = value
