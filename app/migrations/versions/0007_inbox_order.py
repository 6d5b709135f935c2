"""An index for the console's inbox: each status's conversations newest first.

Revision ID: 0007_inbox_order
Revises: 0006_events
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007_inbox_order"
down_revision: str | None = "0006_events"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_conversations_status_updated_at_id", "conversations", ["status", "updated_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_conversations_status_updated_at_id", table_name="conversations")
