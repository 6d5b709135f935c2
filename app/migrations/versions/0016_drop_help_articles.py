"""Drop the help-center articles table: the help center is knowledge now (``app.knowledge``), searched by
``search_knowledge``; the demo shop's articles are imported as the knowledge source ``demo-help-center``.

Revision ID: 0016_drop_help_articles
Revises: 0015_outcomes
Create Date: 2026-12-02

The rows are not copied into the knowledge: ``memdesk seed-demo`` imports the demo articles, and a shop's own help
center is imported from its files or site. Downgrade recreates the empty table as 0001 made it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_drop_help_articles"
down_revision: str | None = "0015_outcomes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_table("help_articles")


def downgrade() -> None:
    op.create_table(
        "help_articles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(length=120), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_help_articles")),
        sa.UniqueConstraint("slug", name=op.f("uq_help_articles_slug")),
    )
