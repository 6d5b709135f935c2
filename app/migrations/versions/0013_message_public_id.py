"""Messages get a random public id, which is all the widget's API and events name them by.

Revision ID: 0013_message_public_id
Revises: 0012_message_search
Create Date: 2026-12-02

Existing messages get one too, in one statement (it also renders for offline ``--sql`` runs), then a unique index.
On SQLite the column is added in place, never by a batch rebuild of ``messages``: a rebuild would drop the search
triggers of ``0012_message_search``. SQLite cannot drop a column's default in place either, so there the column
keeps the empty-string default it was added with; every insert sets the id (the model's default applies to ORM and
Core inserts alike), and the unique index refuses a second empty one.

The stored live events (``conversation_events``, PostgreSQL's replay source, kept for half an hour) carry messages
under their integer ids; they are deleted, so no stream replays an old id: a client resuming from one gets
``resync`` and reloads the messages.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_message_public_id"
down_revision: str | None = "0012_message_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PUBLIC_ID_LENGTH = 40
PREFIX = "msg"


def _random_suffix(dialect: str) -> str:
    """SQL for 32 random hex digits (128 bits, as ``app.models.base.new_public_id``)."""
    if dialect == "sqlite":
        return "lower(hex(randomblob(16)))"
    return "replace(CAST(gen_random_uuid() AS TEXT), '-', '')"


def upgrade() -> None:
    dialect = op.get_context().dialect.name
    op.add_column(
        "messages", sa.Column("public_id", sa.String(length=PUBLIC_ID_LENGTH), nullable=False, server_default="")
    )
    op.execute(f"UPDATE messages SET public_id = '{PREFIX}_' || {_random_suffix(dialect)}")
    if dialect != "sqlite":
        op.alter_column("messages", "public_id", server_default=None, existing_type=sa.String(PUBLIC_ID_LENGTH))
    op.create_index("ix_messages_public_id", "messages", ["public_id"], unique=True)
    op.execute("DELETE FROM conversation_events")


def downgrade() -> None:
    op.drop_index("ix_messages_public_id", table_name="messages")
    # In place on SQLite too (3.35+), for the same reason as the upgrade: a batch rebuild would drop the triggers.
    op.drop_column("messages", "public_id")
