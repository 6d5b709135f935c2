"""The promises board's mirror of promise memories (``promise_records``), filled from the delivered promises the
outbox already knows, so the board starts with the promises memory holds.

Revision ID: 0017_promises
Revises: 0016_drop_help_articles
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_promises"
down_revision: str | None = "0016_drop_help_articles"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BACKFILL = """
INSERT INTO promise_records (customer_id, conversation_id, memory_id, text, due_date, source, status, created_at)
SELECT customer_id, conversation_id, memory_id, text, due_date, source, 'open', COALESCE(delivered_at, created_at)
FROM conclusions WHERE kind = 'promise' AND status = 'delivered' AND memory_id IS NOT NULL
"""


def upgrade() -> None:
    op.create_table(
        "promise_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("conversation_id", sa.Integer(), nullable=True),
        sa.Column("memory_id", sa.String(length=128), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("due_date", sa.Date(), nullable=True),
        sa.Column("subject", sa.String(length=128), nullable=True),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("marked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("marked_by", sa.String(length=64), nullable=True),
        sa.Column("note", sa.String(length=1000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["customer_id"], ["customers.id"], name=op.f("fk_promise_records_customer_id_customers"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_promise_records_conversation_id_conversations"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_promise_records")),
        sa.UniqueConstraint("memory_id", name=op.f("uq_promise_records_memory_id")),
    )
    op.create_index("ix_promise_records_customer_id", "promise_records", ["customer_id"], unique=False)
    op.create_index("ix_promise_records_status_due", "promise_records", ["status", "due_date"], unique=False)
    op.execute(_BACKFILL)


def downgrade() -> None:
    op.drop_index("ix_promise_records_status_due", table_name="promise_records")
    op.drop_index("ix_promise_records_customer_id", table_name="promise_records")
    op.drop_table("promise_records")
