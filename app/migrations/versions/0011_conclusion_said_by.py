"""Who made a conclusion: ``said_by`` on the outbox rows (``bot``, or ``staff:<id>`` for a staff member's promise),
and ``change_reason``, why a changed decision replaced its earlier version. Both are nullable: rows from before
stay as they were.

Revision ID: 0011_conclusion_said_by
Revises: 0010_staff_members
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_conclusion_said_by"
down_revision: str | None = "0010_staff_members"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SAID_BY_LENGTH = 64


def upgrade() -> None:
    with op.batch_alter_table("conclusions") as batch:
        batch.add_column(sa.Column("said_by", sa.String(length=SAID_BY_LENGTH), nullable=True))
        batch.add_column(sa.Column("change_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("conclusions") as batch:
        batch.drop_column("change_reason")
        batch.drop_column("said_by")
