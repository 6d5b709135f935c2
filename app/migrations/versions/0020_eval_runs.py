"""The saved runs of ``memdesk eval run`` (``eval_runs``), which the console lists.

Revision ID: 0020_eval_runs
Revises: 0019_knowledge_chunk_counts
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020_eval_runs"
down_revision: str | None = "0019_knowledge_chunk_counts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "eval_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("chat_model", sa.String(length=200), nullable=False),
        sa.Column("scenarios", sa.Integer(), nullable=False),
        sa.Column("as_expected", sa.Integer(), nullable=False),
        sa.Column("checks", sa.Integer(), nullable=False),
        sa.Column("checks_passed", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_runs")),
    )
    op.create_index(op.f("ix_eval_runs_finished_at"), "eval_runs", ["finished_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_eval_runs_finished_at"), table_name="eval_runs")
    op.drop_table("eval_runs")
