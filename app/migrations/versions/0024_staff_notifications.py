"""Each staff member's notification settings: a browser notification and a sound when a customer waits.

Revision ID: 0024_staff_notifications
Revises: 0023_estimated_usage
Create Date: 2026-12-04

Both start off: a browser asks for the permission only when the member turns notifications on.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024_staff_notifications"
down_revision: str | None = "0023_estimated_usage"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("notify_desktop", "notify_sound")


def upgrade() -> None:
    for column in COLUMNS:
        op.add_column("staff_members", sa.Column(column, sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    for column in COLUMNS:
        op.drop_column("staff_members", column)
