"""Time arithmetic inside a statement, where SQLite and PostgreSQL spell it differently. The outcome figures
aggregate in the database, so a duration or a day has to be computed there, not after fetching each row."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

SECONDS_A_DAY = 86_400


def utc_day(dialect: str, column: Any) -> Any:
    """The UTC day of a timestamp: SQLite's ``date()`` answers ``YYYY-MM-DD`` text, which compares with a stored date;
    PostgreSQL's ``date()`` of a timestamptz would follow the session's time zone, so it is converted first."""
    return sa.func.date(sa.func.timezone("UTC", column) if dialect == "postgresql" else column)


def seconds_between(dialect: str, later: Any, earlier: Any) -> Any:
    if dialect == "postgresql":
        return sa.extract("epoch", later - earlier)
    return (sa.func.julianday(later) - sa.func.julianday(earlier)) * SECONDS_A_DAY
