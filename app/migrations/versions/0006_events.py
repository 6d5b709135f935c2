"""Live events and rate windows shared by several server processes on PostgreSQL.

Revision ID: 0006_events
Revises: 0005_conclusion_sync
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_events"
down_revision: str | None = "0005_conclusion_sync"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "conversation_events",
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_events_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "sequence", name=op.f("pk_conversation_events")),
    )
    op.create_index(op.f("ix_conversation_events_created_at"), "conversation_events", ["created_at"])
    op.create_table(
        "conversation_event_sequences",
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("last_sequence", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_event_sequences_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", name=op.f("pk_conversation_event_sequences")),
    )
    op.create_table(
        "rate_limit_windows",
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("hits", sa.JSON(), nullable=False),
        sa.Column("allowed", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_rate_limit_windows")),
    )
    op.create_index(op.f("ix_rate_limit_windows_updated_at"), "rate_limit_windows", ["updated_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_rate_limit_windows_updated_at"), table_name="rate_limit_windows")
    op.drop_table("rate_limit_windows")
    op.drop_table("conversation_event_sequences")
    op.drop_index(op.f("ix_conversation_events_created_at"), table_name="conversation_events")
    op.drop_table("conversation_events")
