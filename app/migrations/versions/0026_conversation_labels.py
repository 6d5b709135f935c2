"""Conversation labels: names staff put on conversations, to find and filter the inbox by.

Revision ID: 0026_conversation_labels
Revises: 0025_canned_replies
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026_conversation_labels"
down_revision: str | None = "0025_canned_replies"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "conversation_labels",
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(length=40), nullable=False),
        sa.Column("added_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"],
            name=op.f("fk_conversation_labels_conversation_id_conversations"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["added_by"], ["staff_members.id"], name=op.f("fk_conversation_labels_added_by_staff_members"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "label", name=op.f("pk_conversation_labels")),
    )  # fmt: skip
    op.create_index(op.f("ix_conversation_labels_label"), "conversation_labels", ["label"])


def downgrade() -> None:
    op.drop_index(op.f("ix_conversation_labels_label"), table_name="conversation_labels")
    op.drop_table("conversation_labels")
