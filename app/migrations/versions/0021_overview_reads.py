"""What the overview reads, made cheap to read: each outcome row carries its conversation's start and its first
replies' delays, under an index covering the figures' columns, and a partial covering index holds the model's
replies' token counts.

Revision ID: 0021_overview_reads
Revises: 0020_eval_runs
Create Date: 2026-12-03

Existing outcome rows get their start from the conversation and their delays from the times they hold: the human
delay from the last handoff when it came before the first staff reply, else from the start.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021_overview_reads"
down_revision: str | None = "0020_eval_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REPLIES = sa.text("prompt_tokens IS NOT NULL")
WINDOW_COLUMNS = ["started_at", "resolution", "handoff_reason", "csat_score", "reopen_count", "closed_at",
                  "bot_response_s", "human_response_s"]  # fmt: skip


def _seconds(dialect: str, later: str, earlier: str) -> str:
    if dialect == "postgresql":
        return f"EXTRACT(EPOCH FROM {later} - {earlier})"
    return f"(julianday({later}) - julianday({earlier})) * 86400"


def _backfill() -> None:
    dialect = op.get_bind().dialect.name
    op.execute(
        "UPDATE conversation_outcomes SET started_at = "
        "(SELECT c.created_at FROM conversations c WHERE c.id = conversation_outcomes.conversation_id)"
    )
    asked = "CASE WHEN handed_off_at <= first_human_reply_at THEN handed_off_at ELSE started_at END"
    op.execute(
        f"UPDATE conversation_outcomes SET bot_response_s = {_seconds(dialect, 'first_bot_reply_at', 'started_at')}, "
        f"human_response_s = {_seconds(dialect, 'first_human_reply_at', asked)}"
    )


def upgrade() -> None:
    op.add_column("conversation_outcomes", sa.Column("started_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("conversation_outcomes", sa.Column("bot_response_s", sa.Float(), nullable=True))
    op.add_column("conversation_outcomes", sa.Column("human_response_s", sa.Float(), nullable=True))
    _backfill()
    op.create_index("ix_conversation_outcomes_window", "conversation_outcomes", WINDOW_COLUMNS)
    op.create_index(
        "ix_messages_usage",
        "messages",
        ["prompt_tokens", "completion_tokens"],
        sqlite_where=REPLIES,
        postgresql_where=REPLIES,
    )


def downgrade() -> None:
    op.drop_index("ix_messages_usage", table_name="messages")
    op.drop_index("ix_conversation_outcomes_window", table_name="conversation_outcomes")
    for column in ("human_response_s", "bot_response_s", "started_at"):
        op.drop_column("conversation_outcomes", column)
