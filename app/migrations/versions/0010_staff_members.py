"""Staff members: the humans at the console get their own name, apart from the AI agent.

Revision ID: 0010_staff_members
Revises: 0009_job_queue
Create Date: 2026-12-02

The table ``agents`` becomes ``staff_members``, and every column that points at it is named for it
(``assigned_staff_id``, ``staff_id``), together with its foreign key and index: their names follow
``app.models.base.NAMING_CONVENTION``, which is how later migrations (and SQLite's table rebuilds) find them, and an
index left under its old name would show up in the next autogenerate comparison. Stored values follow: a staff
member's message has the author ``staff``, and audit events name staff members as actor ``staff:<id>`` and target
type ``staff``. Every row is kept.

Tables and columns are renamed in place on both databases (SQLite rewrites the references in other tables itself).
PostgreSQL renames constraints and indexes in place as well, and the id sequence; SQLite cannot rename a constraint,
so the tables that hold one are rebuilt (batch mode), conversations and messages again with AUTOINCREMENT, as
``0003_public_ids`` made them. The rebuild needs foreign keys off, which ``app.db.upgrade`` arranges.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from alembic import op

revision: str = "0010_staff_members"
down_revision: str | None = "0009_job_queue"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_TABLE = "agents"
NEW_TABLE = "staff_members"
NEVER_REUSED = ("conversations", "messages")


@dataclass(frozen=True)
class Reference:
    """A column that points at the staff table: its name before and after, and what deleting the member does."""

    table: str
    old: str
    new: str
    ondelete: str
    indexed: bool = False


REFERENCES = (
    Reference("conversations", "assigned_agent_id", "assigned_staff_id", "SET NULL", indexed=True),
    Reference("messages", "agent_id", "staff_id", "SET NULL"),
    Reference("staff_sessions", "agent_id", "staff_id", "CASCADE", indexed=True),
    Reference("conversation_reads", "agent_id", "staff_id", "CASCADE"),
    Reference("handoff_summaries", "requested_by", "requested_by", "SET NULL"),
)

# The word for a staff member in stored values: a message's author, an audit event's actor prefix and target type.
OLD_WORD = "agent"
NEW_WORD = "staff"

messages = sa.table("messages", sa.column("author", sa.String))
audit_events = sa.table("audit_events", sa.column("actor", sa.String), sa.column("target_type", sa.String))


def upgrade() -> None:
    _rename_schema(OLD_TABLE, NEW_TABLE, [(ref, ref.old, ref.new) for ref in REFERENCES])
    _rewrite_values(OLD_WORD, NEW_WORD)


def downgrade() -> None:
    _rewrite_values(NEW_WORD, OLD_WORD)
    _rename_schema(NEW_TABLE, OLD_TABLE, [(ref, ref.new, ref.old) for ref in REFERENCES])


def _rename_schema(source: str, target: str, columns: list[tuple[Reference, str, str]]) -> None:
    sqlite = op.get_context().dialect.name == "sqlite"
    op.rename_table(source, target)
    if sqlite:
        with op.batch_alter_table(target, recreate="always") as batch:
            batch.drop_constraint(f"uq_{source}_email", type_="unique")
            batch.create_unique_constraint(f"uq_{target}_email", ["email"])
            batch.drop_constraint(f"pk_{source}", type_="primary")
            batch.create_primary_key(f"pk_{target}", ["id"])
    else:
        _rename_constraint(target, f"pk_{source}", f"pk_{target}")
        _rename_constraint(target, f"uq_{source}_email", f"uq_{target}_email")
        op.execute(f"ALTER SEQUENCE {source}_id_seq RENAME TO {target}_id_seq")

    for ref, before, after in columns:
        if before != after:
            op.alter_column(ref.table, before, new_column_name=after)
        old_key, new_key = f"fk_{ref.table}_{before}_{source}", f"fk_{ref.table}_{after}_{target}"
        old_index, new_index = f"ix_{ref.table}_{before}", f"ix_{ref.table}_{after}"
        if not sqlite:
            _rename_constraint(ref.table, old_key, new_key)
            if ref.indexed:
                op.execute(f"ALTER INDEX {old_index} RENAME TO {new_index}")
            continue
        autoincrement = {"sqlite_autoincrement": True} if ref.table in NEVER_REUSED else {}
        with op.batch_alter_table(ref.table, recreate="always", table_kwargs=autoincrement) as batch:
            batch.drop_constraint(old_key, type_="foreignkey")
            batch.create_foreign_key(new_key, target, [after], ["id"], ondelete=ref.ondelete)
            if ref.indexed:
                batch.drop_index(old_index)
                batch.create_index(new_index, [after])


def _rename_constraint(table: str, old: str, new: str) -> None:
    op.execute(f"ALTER TABLE {table} RENAME CONSTRAINT {old} TO {new}")


def _rewrite_values(old: str, new: str) -> None:
    op.execute(messages.update().where(messages.c.author == old).values(author=new))
    actor_id = sa.func.substr(audit_events.c.actor, len(old) + 2)  # what follows "<old>:"
    op.execute(
        audit_events.update()
        .where(audit_events.c.actor.like(f"{old}:%"))
        .values(actor=sa.literal(f"{new}:") + actor_id)
    )
    op.execute(audit_events.update().where(audit_events.c.target_type == old).values(target_type=new))
