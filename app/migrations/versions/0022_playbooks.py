"""Playbooks: the runs of playbooks in conversations (``playbook_runs``), each conversation's focus, and the
versions of playbooks saved in the console (``playbook_versions``).

Revision ID: 0022_playbooks
Revises: 0021_overview_reads
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022_playbooks"
down_revision: str | None = "0021_overview_reads"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "playbook_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("playbook", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("waiting_for", sa.String(length=64), nullable=True),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("language", sa.String(length=8), nullable=False),
        sa.Column("slots", sa.JSON(), nullable=False),
        sa.Column("results", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_playbook_runs_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_playbook_runs")),
    )
    op.create_index("ix_playbook_runs_conversation_status", "playbook_runs", ["conversation_id", "status"])
    op.create_index("ix_playbook_runs_playbook_status", "playbook_runs", ["playbook", "status"])
    op.create_table(
        "playbook_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("edited_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_playbook_versions")),
        sa.UniqueConstraint("name", "version", name=op.f("uq_playbook_versions_name_version")),
    )
    op.add_column("conversations", sa.Column("focus_kind", sa.String(length=32), nullable=True))
    op.add_column("conversations", sa.Column("focus_ref", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("focus_ref")
        batch.drop_column("focus_kind")
    op.drop_table("playbook_versions")
    op.drop_index("ix_playbook_runs_playbook_status", table_name="playbook_runs")
    op.drop_index("ix_playbook_runs_conversation_status", table_name="playbook_runs")
    op.drop_table("playbook_runs")
