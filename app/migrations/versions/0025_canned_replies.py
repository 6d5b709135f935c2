"""Canned replies: saved answers staff insert in the composer, the team's or one member's own.

Revision ID: 0025_canned_replies
Revises: 0024_staff_notifications
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025_canned_replies"
down_revision: str | None = "0024_staff_notifications"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "canned_replies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("shortcut", sa.String(length=32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("owner_staff_id", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_staff_id"], ["staff_members.id"], name=op.f("fk_canned_replies_owner_staff_id_staff_members"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by"], ["staff_members.id"], name=op.f("fk_canned_replies_created_by_staff_members"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_canned_replies")),
    )  # fmt: skip
    op.create_index(op.f("ix_canned_replies_shortcut"), "canned_replies", ["shortcut"])
    op.create_index(op.f("ix_canned_replies_owner_staff_id"), "canned_replies", ["owner_staff_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_canned_replies_owner_staff_id"), table_name="canned_replies")
    op.drop_index(op.f("ix_canned_replies_shortcut"), table_name="canned_replies")
    op.drop_table("canned_replies")
