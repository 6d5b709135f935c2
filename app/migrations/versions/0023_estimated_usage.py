"""Token counts the endpoint did not report: a flag on each stored count that says it is memdesk's estimate, kept in
the covering index the overview's token totals read.

Revision ID: 0023_estimated_usage
Revises: 0022_playbooks
Create Date: 2026-12-04

Existing rows are reported counts (an endpoint without usage left them empty), so they get ``false``.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023_estimated_usage"
down_revision: str | None = "0022_playbooks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("messages", "compactions", "handoff_summaries")
REPLIES = sa.text("prompt_tokens IS NOT NULL")


def _usage_index(columns: list[str]) -> None:
    op.create_index("ix_messages_usage", "messages", columns, sqlite_where=REPLIES, postgresql_where=REPLIES)


def upgrade() -> None:
    # A plain ADD COLUMN with its default, which SQLite does in place (batch mode would copy the messages table).
    for table in TABLES:
        op.add_column(table, sa.Column("usage_estimated", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.drop_index("ix_messages_usage", table_name="messages")
    _usage_index(["prompt_tokens", "completion_tokens", "usage_estimated"])


def downgrade() -> None:
    op.drop_index("ix_messages_usage", table_name="messages")
    _usage_index(["prompt_tokens", "completion_tokens"])
    for table in TABLES:
        op.drop_column(table, "usage_estimated")
