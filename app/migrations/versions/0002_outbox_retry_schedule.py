"""Outbox retry schedule: when a conclusion that failed to reach memory is due for its next attempt.

Revision ID: 0002_outbox_retry_schedule
Revises: 0001_initial
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_outbox_retry_schedule"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("conclusions") as batch:
        batch.add_column(sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True))
        batch.create_index(batch.f("ix_conclusions_next_attempt_at"), ["next_attempt_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("conclusions") as batch:
        batch.drop_index(batch.f("ix_conclusions_next_attempt_at"))
        batch.drop_column("next_attempt_at")
