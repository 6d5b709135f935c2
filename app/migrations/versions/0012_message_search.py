"""Message search: a full-text index over the transcript, for the model's ``search_conversation`` tool.

Revision ID: 0012_message_search
Revises: 0011_conclusion_said_by
Create Date: 2026-12-02

Only what the model may read is indexed: message text and tool results, never private staff notes nor system rows
(``app.tools.conversation_search`` filters the same way when it reads, so both must change together).

On SQLite, ``messages_search`` is an FTS5 table with external content: it keeps only the index and reads the text
from ``messages`` by rowid, so no customer text is stored twice and ``highlight()`` still works (a contentless table
cannot return text). Triggers keep it in sync; an external-content index must be told the exact old text to remove
a row, so the delete and update triggers pass it with FTS5's ``'delete'`` command, under the same conditions as the
insert, because deleting text that was never indexed would corrupt the index. The ``porter`` stemmer lets
"refunds" find "refund"; ``unicode61`` splits identifiers at punctuation, and the tool searches them as phrases of
their parts. A later migration that rebuilds ``messages`` in batch mode drops these triggers and must recreate
them.

On PostgreSQL, a GIN expression index on ``to_tsvector('english', content)`` (of its first 200,000 characters)
serves the same queries; the tool's ``WHERE`` clause repeats the expression exactly, which is what lets the planner
use it.

Existing rows are indexed by the upgrade (PostgreSQL builds the index from them; SQLite copies them in).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012_message_search"
down_revision: str | None = "0011_conclusion_said_by"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEARCH_TABLE = "messages_search"
PG_INDEX = "ix_messages_search"
# Capped so that no message exceeds PostgreSQL's 1 MB tsvector limit: text past it is simply not searchable.
PG_VECTOR = "to_tsvector('english'::regconfig, left(coalesce(content, ''), 200000))"
TRIGGERS = ("messages_search_insert", "messages_search_delete", "messages_search_update")

_SEARCHABLE_NEW = "NOT new.private AND new.role != 'system'"
_SEARCHABLE_OLD = "NOT old.private AND old.role != 'system'"
_SQLITE_STATEMENTS = (
    f"CREATE VIRTUAL TABLE {SEARCH_TABLE} USING fts5(content, content='messages', content_rowid='id', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    f"CREATE TRIGGER messages_search_insert AFTER INSERT ON messages WHEN {_SEARCHABLE_NEW} BEGIN "
    f"INSERT INTO {SEARCH_TABLE}(rowid, content) VALUES (new.id, new.content); END",
    f"CREATE TRIGGER messages_search_delete AFTER DELETE ON messages WHEN {_SEARCHABLE_OLD} BEGIN "
    f"INSERT INTO {SEARCH_TABLE}({SEARCH_TABLE}, rowid, content) VALUES ('delete', old.id, old.content); END",
    "CREATE TRIGGER messages_search_update AFTER UPDATE OF content, private, role ON messages BEGIN "
    f"INSERT INTO {SEARCH_TABLE}({SEARCH_TABLE}, rowid, content) SELECT 'delete', old.id, old.content "
    f"WHERE {_SEARCHABLE_OLD}; "
    f"INSERT INTO {SEARCH_TABLE}(rowid, content) SELECT new.id, new.content WHERE {_SEARCHABLE_NEW}; END",
    f"INSERT INTO {SEARCH_TABLE}(rowid, content) SELECT id, content FROM messages "
    "WHERE NOT private AND role != 'system'",
)


def upgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        for statement in _SQLITE_STATEMENTS:
            op.execute(statement)
        return
    op.execute(f"CREATE INDEX {PG_INDEX} ON messages USING gin ({PG_VECTOR})")


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        for trigger in TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute(f"DROP TABLE IF EXISTS {SEARCH_TABLE}")
        return
    op.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")
