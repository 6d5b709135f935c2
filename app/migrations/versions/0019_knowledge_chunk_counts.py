"""SQLite keeps a count of the knowledge chunks and a revision that every chunk insert and delete raises.

Revision ID: 0019_knowledge_chunk_counts
Revises: 0018_knowledge_search_document
Create Date: 2026-12-03

The in-process vector matrix must notice every change to the chunks before a search, and the full-text side needs
how many chunks there are. ``SELECT count(*)`` over 100k chunks took 5.5 ms of every search; one row kept by
triggers is read in microseconds. PostgreSQL searches its own indexes and needs neither.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019_knowledge_chunk_counts"
down_revision: str | None = "0018_knowledge_search_document"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COUNTS_TABLE = "knowledge_chunk_counts"

_SQLITE = (
    f"CREATE TABLE {COUNTS_TABLE} (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1), "
    "chunks INTEGER NOT NULL, revision INTEGER NOT NULL)",
    f"INSERT INTO {COUNTS_TABLE} (id, chunks, revision) SELECT 1, count(*), 0 FROM knowledge_chunks",
    f"CREATE TRIGGER {COUNTS_TABLE}_insert AFTER INSERT ON knowledge_chunks BEGIN "
    f"UPDATE {COUNTS_TABLE} SET chunks = chunks + 1, revision = revision + 1 WHERE id = 1; END",
    f"CREATE TRIGGER {COUNTS_TABLE}_delete AFTER DELETE ON knowledge_chunks BEGIN "
    f"UPDATE {COUNTS_TABLE} SET chunks = chunks - 1, revision = revision + 1 WHERE id = 1; END",
)


def upgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    for statement in _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    for trigger in ("insert", "delete"):
        op.execute(f"DROP TRIGGER {COUNTS_TABLE}_{trigger}")
    op.execute(f"DROP TABLE {COUNTS_TABLE}")
