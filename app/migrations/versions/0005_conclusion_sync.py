"""The conclusion sync: a record per run, and a watermark per conversation.

Revision ID: 0005_conclusion_sync
Revises: 0003_public_ids
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_conclusion_sync"
down_revision: str | None = "0004_console"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("conversations", sa.Column("synced_through_message_id", sa.Integer(), nullable=True))
    op.create_table(
        "sync_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("scanned", sa.Integer(), nullable=False),
        sa.Column("summarized", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("conclusions_written", sa.Integer(), nullable=False),
        sa.Column("conclusions_superseded", sa.Integer(), nullable=False),
        sa.Column("promises_expired", sa.Integer(), nullable=False),
        sa.Column("outbox_retried", sa.Integer(), nullable=False),
        sa.Column("usage", sa.JSON(), nullable=False),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sync_runs")),
    )
    op.create_index(op.f("ix_sync_runs_status"), "sync_runs", ["status"])


def downgrade() -> None:
    op.drop_index(op.f("ix_sync_runs_status"), table_name="sync_runs")
    op.drop_table("sync_runs")
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("synced_through_message_id")
