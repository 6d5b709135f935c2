"""Public ids, and ids that are never handed out twice.

Revision ID: 0003_public_ids
Revises: 0002_outbox_retry_schedule
Create Date: 2026-11-30

Customers and conversations get an opaque random ``public_id``, which is all that URLs and visitor tokens carry.

On SQLite, customers, conversations and messages are rebuilt with AUTOINCREMENT: without it, deleting the newest
row (an erased customer) lets the next insert take its id again. PostgreSQL sequences never hand an id out twice.
The rebuild needs foreign keys off, which ``app.db.upgrade`` arranges (a dropped table would otherwise cascade).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_public_ids"
down_revision: str | None = "0002_outbox_retry_schedule"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PUBLIC_ID_LENGTH = 40
PREFIXES = {"customers": "cus", "conversations": "cnv"}
NEVER_REUSED = ("customers", "conversations", "messages")


def _random_suffix(dialect: str) -> str:
    """SQL for 32 random hex digits: one statement per table, which also renders for offline (``--sql``) runs."""
    if dialect == "sqlite":
        return "lower(hex(randomblob(16)))"
    return "replace(CAST(gen_random_uuid() AS TEXT), '-', '')"


def upgrade() -> None:
    dialect = op.get_context().dialect.name
    sqlite = dialect == "sqlite"
    for table, prefix in PREFIXES.items():
        op.add_column(
            table, sa.Column("public_id", sa.String(length=PUBLIC_ID_LENGTH), nullable=False, server_default="")
        )
        op.execute(f"UPDATE {table} SET public_id = '{prefix}_' || {_random_suffix(dialect)}")
    for table in NEVER_REUSED:
        kwargs = {"recreate": "always", "table_kwargs": {"sqlite_autoincrement": True}} if sqlite else {}
        with op.batch_alter_table(table, **kwargs) as batch:  # type: ignore[arg-type]
            if table in PREFIXES:
                batch.alter_column("public_id", server_default=None, existing_type=sa.String(PUBLIC_ID_LENGTH))
    for table in PREFIXES:
        op.create_index(f"ix_{table}_public_id", table, ["public_id"], unique=True)


def downgrade() -> None:
    for table in PREFIXES:
        op.drop_index(f"ix_{table}_public_id", table_name=table)
        with op.batch_alter_table(table) as batch:
            batch.drop_column("public_id")
