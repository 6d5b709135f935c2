"""Routing: each staff member's availability, capacity and last routed time, and the desk's settings (whether
routing is on), which supervisors change in the console.

Revision ID: 0027_routing
Revises: 0026_conversation_labels
Create Date: 2026-12-04

Everyone starts offline with a capacity of 3, and routing starts off: nothing changes until a supervisor turns it
on and agents say they are online.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027_routing"
down_revision: str | None = "0026_conversation_labels"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "staff_members", sa.Column("availability", sa.String(length=32), nullable=False, server_default="offline")
    )
    op.add_column("staff_members", sa.Column("capacity", sa.Integer(), nullable=False, server_default="3"))
    op.add_column("staff_members", sa.Column("last_routed_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "desk_settings",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("updated_by", sa.Integer(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["updated_by"], ["staff_members.id"], name=op.f("fk_desk_settings_updated_by_staff_members"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_desk_settings")),
    )  # fmt: skip


def downgrade() -> None:
    op.drop_table("desk_settings")
    for column in ("last_routed_at", "capacity", "availability"):
        op.drop_column("staff_members", column)
