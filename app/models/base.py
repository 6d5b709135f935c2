"""Column helpers shared by every memdesk table.

Imported first by ``app.models``: it installs the constraint naming convention on ``SQLModel.metadata`` before any
table is declared, so every index and constraint has a stable name that alembic (and SQLite batch migrations) can
address later.

- Timestamps are ``datetime`` fields: SQLModel stores them with ``UTCDateTime`` (aware in, aware UTC out).
- Enums are stored as their string *values* in a plain VARCHAR (no native PostgreSQL enum type), so adding a member
  never needs a migration as long as it fits ``ENUM_LENGTH``.
- Money is integer cents next to an ISO 4217 currency code.
- Integer primary keys are internal. What leaves the server (URLs, tokens) is a random ``public_id``; on SQLite the
  tables whose ids key live state use AUTOINCREMENT, so a deleted row's id is never handed out again.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import SQLModel

NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(column_0_N_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
SQLModel.metadata.naming_convention = NAMING_CONVENTION

ENUM_LENGTH = 32
PUBLIC_ID_LENGTH = 40
PUBLIC_ID_RANDOM_BYTES = 16  # 128 bits: never guessed, never reused
CURRENCY_LENGTH = 3
DEFAULT_CURRENCY = "USD"


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC (the only kind of timestamp memdesk stores)."""
    return datetime.now(UTC)


def new_public_id(prefix: str) -> str:
    """An opaque identifier for URLs and tokens, like ``cnv_3q2…``: random, so it reveals no count and is never
    handed out again after its row is deleted (integer keys stay inside the database)."""
    return f"{prefix}_{secrets.token_urlsafe(PUBLIC_ID_RANDOM_BYTES)}"


def _enum_values(enum_cls: type[StrEnum]) -> list[str]:
    return [member.value for member in enum_cls]


def enum_type(enum_cls: type[StrEnum]) -> sa.Enum:
    """A VARCHAR column type that stores ``enum_cls`` values and loads them back as members."""
    return sa.Enum(
        enum_cls,
        native_enum=False,
        create_constraint=False,
        length=ENUM_LENGTH,
        values_callable=_enum_values,
        validate_strings=True,
    )


def json_type(*, nullable: bool = False) -> sa.JSON:
    """A JSON column type; a nullable one stores Python ``None`` as SQL NULL rather than JSON ``null``."""
    return sa.JSON(none_as_null=nullable)
