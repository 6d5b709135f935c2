"""PostgreSQL keeps each knowledge chunk's full-text document in a stored generated column, indexed by GIN.

Revision ID: 0018_knowledge_search_document
Revises: 0017_promises
Create Date: 2026-12-03

``0014_knowledge`` indexed an expression, ``to_tsvector(...)`` of the chunk. The index finds the matching rows, but
ranking them with ``ts_rank`` needs each row's tsvector, which the expression index does not hand back: PostgreSQL
computed ``to_tsvector`` again for every matching chunk of every search, most of a search's time at 100k chunks. A
stored column is computed once, when the chunk is written. SQLite is untouched: its FTS5 table already stores the
index it ranks with.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0018_knowledge_search_document"
down_revision: str | None = "0017_promises"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PG_SEARCH_INDEX = "ix_knowledge_chunks_search"
PG_DOCUMENT_COLUMN = "search_document"
PG_DOCUMENT = "to_tsvector('simple'::regconfig, heading_path || ' ' || left(text, 200000))"


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(f"DROP INDEX {PG_SEARCH_INDEX}")
    op.execute(
        f"ALTER TABLE knowledge_chunks ADD COLUMN {PG_DOCUMENT_COLUMN} tsvector "
        f"GENERATED ALWAYS AS ({PG_DOCUMENT}) STORED"
    )
    op.execute(f"CREATE INDEX {PG_SEARCH_INDEX} ON knowledge_chunks USING gin ({PG_DOCUMENT_COLUMN})")


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(f"DROP INDEX {PG_SEARCH_INDEX}")
    op.execute(f"ALTER TABLE knowledge_chunks DROP COLUMN {PG_DOCUMENT_COLUMN}")
    op.execute(f"CREATE INDEX {PG_SEARCH_INDEX} ON knowledge_chunks USING gin (({PG_DOCUMENT}))")
