"""Conversation outcomes: one row per conversation, recorded as things happen (``app.outcomes``), and an index on
when conversations started, which the overview's window reads.

Revision ID: 0015_outcomes
Revises: 0014_knowledge
Create Date: 2026-12-02

Existing conversations get their row from what the transcript and the audit trail already say, so the overview's
figures start with the history rather than from zero:

- the first bot reply and the first staff reply: the earliest non-private message with text by each;
- the last handoff: the newest ``conversation.handoff`` audit event (its reason category is unknown: ``other``), or,
  for a conversation waiting for a person without one (a failed turn), its last update;
- a closed conversation: ``human`` when a staff member replied, else ``bot`` when the bot replied and nobody was
  waited for, else ``abandoned``; its close time is the newest ``console.close`` audit event or its last update.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_outcomes"
down_revision: str | None = "0014_knowledge"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FIRST_REPLY = (
    "(SELECT min(m.created_at) FROM messages m WHERE m.conversation_id = c.id AND m.author = '{author}' "
    "AND NOT m.private AND m.content IS NOT NULL AND m.content != '')"
)
_LAST_AUDIT = (
    "(SELECT max(a.created_at) FROM audit_events a WHERE a.target_type = 'conversation' "
    "AND a.target_id = CAST(c.id AS VARCHAR(64)) AND a.action = '{action}')"
)
_BACKFILL = f"""
INSERT INTO conversation_outcomes (conversation_id, resolution, handoff_reason, handed_off_at, first_bot_reply_at,
    first_human_reply_at, closed_at, reopen_count, updated_at)
SELECT id, CASE
        WHEN status != 'closed' THEN 'open'
        WHEN first_human IS NOT NULL THEN 'human'
        WHEN first_bot IS NOT NULL AND handed_off IS NULL THEN 'bot'
        ELSE 'abandoned' END,
    CASE WHEN handed_off IS NULL THEN NULL ELSE 'other' END,
    handed_off, first_bot, first_human,
    CASE WHEN status = 'closed' THEN coalesce(closed, updated_at) END,
    0, updated_at
FROM (
    SELECT c.id, c.status, c.updated_at,
        {_FIRST_REPLY.format(author="bot")} AS first_bot,
        {_FIRST_REPLY.format(author="staff")} AS first_human,
        coalesce({_LAST_AUDIT.format(action="conversation.handoff")},
                 CASE WHEN c.status = 'needs_human' THEN c.updated_at END) AS handed_off,
        {_LAST_AUDIT.format(action="console.close")} AS closed
    FROM conversations c
) AS known
"""


def _timestamp(name: str) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=True)


def upgrade() -> None:
    op.create_table(
        "conversation_outcomes",
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("resolution", sa.String(length=32), nullable=False),
        sa.Column("handoff_reason", sa.String(length=32), nullable=True),
        _timestamp("handed_off_at"),
        _timestamp("first_bot_reply_at"),
        _timestamp("first_human_reply_at"),
        _timestamp("closed_at"),
        sa.Column("reopen_count", sa.Integer(), nullable=False),
        sa.Column("csat_score", sa.Integer(), nullable=True),
        sa.Column("csat_comment", sa.String(length=2000), nullable=True),
        _timestamp("csat_at"),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_outcomes_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", name=op.f("pk_conversation_outcomes")),
    )
    op.create_index("ix_conversations_created_at", "conversations", ["created_at"], unique=False)
    op.execute(_BACKFILL)


def downgrade() -> None:
    op.drop_index("ix_conversations_created_at", table_name="conversations")
    op.drop_table("conversation_outcomes")
