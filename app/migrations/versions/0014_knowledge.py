"""Knowledge: imported sources, documents and chunks, their full-text index and embeddings, citations, gaps.

Revision ID: 0014_knowledge
Revises: 0013_message_public_id
Create Date: 2026-12-02

The ORM tables are those of ``app.models.knowledge``. Two more are kept beside ``knowledge_chunks``, outside the
ORM because their column types differ by database:

- the full-text index: on SQLite ``knowledge_chunks_search``, an FTS5 table with external content (the text stays
  in ``knowledge_chunks``) kept in sync by triggers, as ``0012_message_search`` does for messages; on PostgreSQL a
  GIN expression index over the chunk's heading path and text, with the ``simple`` configuration (no stemming that
  would favour one language over the German or Chinese a help center may also hold);
- ``knowledge_vectors``: one embedding per chunk, deleted with it. On SQLite a float32 BLOB; on PostgreSQL a
  pgvector ``vector(384)`` column with an HNSW index for cosine distance (the extension is created if missing).

The SQLite FTS5 tokenizer is ``trigram``: a question in Chinese has no spaces for ``unicode61`` to split on, while
trigrams match any script, and a misspelled word still shares most of its trigrams with the right one.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_knowledge"
down_revision: str | None = "0013_message_public_id"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EMBEDDING_DIMS = 384
SEARCH_TABLE = "knowledge_chunks_search"
VECTOR_TABLE = "knowledge_vectors"
PG_SEARCH_INDEX = "ix_knowledge_chunks_search"
PG_VECTOR_INDEX = "ix_knowledge_vectors_embedding"
# Repeated exactly by the search's WHERE clause, which is what lets the planner use the GIN index.
PG_DOCUMENT = "to_tsvector('simple'::regconfig, heading_path || ' ' || left(text, 200000))"

_SQLITE_SEARCH = (
    f"CREATE VIRTUAL TABLE {SEARCH_TABLE} USING fts5(heading_path, text, content='knowledge_chunks', "
    "content_rowid='id', tokenize='trigram')",
    f"CREATE TRIGGER knowledge_chunks_search_insert AFTER INSERT ON knowledge_chunks BEGIN "
    f"INSERT INTO {SEARCH_TABLE}(rowid, heading_path, text) VALUES (new.id, new.heading_path, new.text); END",
    f"CREATE TRIGGER knowledge_chunks_search_delete AFTER DELETE ON knowledge_chunks BEGIN "
    f"INSERT INTO {SEARCH_TABLE}({SEARCH_TABLE}, rowid, heading_path, text) "
    "VALUES ('delete', old.id, old.heading_path, old.text); END",
    f"CREATE TRIGGER knowledge_chunks_search_update AFTER UPDATE OF heading_path, text ON knowledge_chunks BEGIN "
    f"INSERT INTO {SEARCH_TABLE}({SEARCH_TABLE}, rowid, heading_path, text) "
    "VALUES ('delete', old.id, old.heading_path, old.text); "
    f"INSERT INTO {SEARCH_TABLE}(rowid, heading_path, text) VALUES (new.id, new.heading_path, new.text); END",
    f"CREATE TABLE {VECTOR_TABLE} (chunk_id INTEGER NOT NULL PRIMARY KEY "
    "REFERENCES knowledge_chunks (id) ON DELETE CASCADE, embedding BLOB NOT NULL)",
)
_PG_SEARCH = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    f"CREATE INDEX {PG_SEARCH_INDEX} ON knowledge_chunks USING gin (({PG_DOCUMENT}))",
    f"CREATE TABLE {VECTOR_TABLE} (chunk_id INTEGER NOT NULL PRIMARY KEY "
    f"REFERENCES knowledge_chunks (id) ON DELETE CASCADE, embedding vector({EMBEDDING_DIMS}) NOT NULL)",
    f"CREATE INDEX {PG_VECTOR_INDEX} ON {VECTOR_TABLE} USING hnsw (embedding vector_cosine_ops)",
)


def _timestamp(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _foreign_key(table: str, column: str, target: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=op.f(f"fk_{table}_{column}_{target}"), ondelete=ondelete
    )


def upgrade() -> None:
    _create_sources_and_documents()
    _create_chunks()
    _create_citations_and_gaps()
    statements = _SQLITE_SEARCH if op.get_context().dialect.name == "sqlite" else _PG_SEARCH
    for statement in statements:
        op.execute(statement)


def _create_sources_and_documents() -> None:
    op.create_table(
        "knowledge_sources",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        _timestamp("created_at"),
        _timestamp("last_import_at", nullable=True),
        sa.Column("last_import_report", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("origins", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_sources")),
        sa.UniqueConstraint("name", name=op.f("uq_knowledge_sources_name")),
    )
    op.create_table(
        "knowledge_documents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("locator", sa.String(length=2000), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=True),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("headings", sa.JSON(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        _timestamp("source_updated_at", nullable=True),
        _timestamp("imported_at"),
        sa.Column("citation_count", sa.Integer(), nullable=False),
        _foreign_key("knowledge_documents", "source_id", "knowledge_sources", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_documents")),
        sa.UniqueConstraint("source_id", "locator", name=op.f("uq_knowledge_documents_source_id_locator")),
    )
    op.create_index(op.f("ix_knowledge_documents_source_id"), "knowledge_documents", ["source_id"], unique=False)


def _create_chunks() -> None:
    op.create_table(
        "knowledge_chunks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("heading_path", sa.String(length=1000), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        _foreign_key("knowledge_chunks", "document_id", "knowledge_documents", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_chunks")),
        sa.UniqueConstraint("document_id", "position", name=op.f("uq_knowledge_chunks_document_id_position")),
        sqlite_autoincrement=True,
    )


def _create_citations_and_gaps() -> None:
    op.create_table(
        "message_sources",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("chunk_id", sa.Integer(), nullable=True),
        sa.Column("marker", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("heading_path", sa.String(length=1000), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=True),
        _foreign_key("message_sources", "message_id", "messages", "CASCADE"),
        _foreign_key("message_sources", "chunk_id", "knowledge_chunks", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_message_sources")),
    )
    op.create_index(op.f("ix_message_sources_message_id"), "message_sources", ["message_id"], unique=False)
    op.create_index(op.f("ix_message_sources_chunk_id"), "message_sources", ["chunk_id"], unique=False)
    op.create_table(
        "knowledge_gaps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=True),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("best_score", sa.Float(), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        _timestamp("created_at"),
        _timestamp("resolved_at", nullable=True),
        sa.Column("resolved_by", sa.Integer(), nullable=True),
        _foreign_key("knowledge_gaps", "conversation_id", "conversations", "CASCADE"),
        _foreign_key("knowledge_gaps", "message_id", "messages", "CASCADE"),
        _foreign_key("knowledge_gaps", "resolved_by", "staff_members", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_gaps")),
    )
    op.create_index(op.f("ix_knowledge_gaps_conversation_id"), "knowledge_gaps", ["conversation_id"], unique=False)
    op.create_index(op.f("ix_knowledge_gaps_status"), "knowledge_gaps", ["status"], unique=False)


def downgrade() -> None:
    op.execute(f"DROP TABLE {VECTOR_TABLE}")
    if op.get_context().dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER knowledge_chunks_search_{trigger}")
        op.execute(f"DROP TABLE {SEARCH_TABLE}")
    for table in ("knowledge_gaps", "message_sources", "knowledge_chunks", "knowledge_documents", "knowledge_sources"):
        op.drop_table(table)
