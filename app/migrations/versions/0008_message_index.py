"""Messages keep what a compaction does with them (``compressor_index``), computed once when they are stored.

Revision ID: 0008_message_index
Revises: 0007_inbox_order
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_message_index"
down_revision: str | None = "0007_inbox_order"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable and left empty for older messages: a compaction indexes those itself, as it always did.
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("compressor_index", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("compressor_index")
