"""A partial covering index of the model's replies' token counts, which the overview's usage totals read.

Revision ID: 0021_message_usage_index
Revises: 0020_eval_runs
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021_message_usage_index"
down_revision: str | None = "0020_eval_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REPLIES = sa.text("prompt_tokens IS NOT NULL")


def upgrade() -> None:
    op.create_index(
        "ix_messages_usage",
        "messages",
        ["prompt_tokens", "completion_tokens"],
        sqlite_where=REPLIES,
        postgresql_where=REPLIES,
    )


def downgrade() -> None:
    op.drop_index("ix_messages_usage", table_name="messages")
