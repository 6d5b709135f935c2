"""The agent-supervisor console: staff sessions, sign-in throttles, read marks and handoff summaries.

Revision ID: 0004_console
Revises: 0003_public_ids
Create Date: 2026-12-01

The ``admin`` staff role needs no schema change: roles are stored as their string values.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_console"
down_revision: str | None = "0003_public_ids"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamp(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "staff_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        _timestamp("created_at"),
        _timestamp("last_seen_at"),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_staff_sessions_agent_id_agents"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_staff_sessions")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_staff_sessions_token_digest")),
    )
    op.create_index(op.f("ix_staff_sessions_agent_id"), "staff_sessions", ["agent_id"], unique=False)
    op.create_table(
        "login_throttles",
        sa.Column("key", sa.String(length=400), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        _timestamp("window_started_at"),
        _timestamp("locked_until", nullable=True),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_login_throttles")),
    )
    op.create_table(
        "conversation_reads",
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("last_read_message_id", sa.Integer(), nullable=False),
        _timestamp("read_at"),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_conversation_reads_agent_id_agents"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_reads_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("agent_id", "conversation_id", name=op.f("pk_conversation_reads")),
    )
    op.create_table(
        "handoff_summaries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("through_message_id", sa.Integer(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("fallback_used", sa.Boolean(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("requested_by", sa.Integer(), nullable=True),
        _timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_handoff_summaries_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["requested_by"], ["agents.id"], name=op.f("fk_handoff_summaries_requested_by_agents"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_handoff_summaries")),
    )
    op.create_index(
        op.f("ix_handoff_summaries_conversation_id"), "handoff_summaries", ["conversation_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_handoff_summaries_conversation_id"), table_name="handoff_summaries")
    op.drop_table("handoff_summaries")
    op.drop_table("conversation_reads")
    op.drop_table("login_throttles")
    op.drop_index(op.f("ix_staff_sessions_agent_id"), table_name="staff_sessions")
    op.drop_table("staff_sessions")
