"""The job queue's tables on PostgreSQL (procrastinate's own schema); nothing on SQLite, where background work runs
in the server process.

Revision ID: 0009_job_queue
Revises: 0008_message_index
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

from app.jobs.schema import apply_job_queue_schema, job_queue_schema_sql

revision: str = "0009_job_queue"
down_revision: str | None = "0008_message_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Everything the schema creates, found by its prefix (the set differs between procrastinate versions): tables first
# (CASCADE takes their triggers and indexes), then functions, then types.
DROP_JOB_QUEUE = """
DO $$
DECLARE item record;
BEGIN
    FOR item IN SELECT tablename FROM pg_tables
            WHERE schemaname = current_schema() AND tablename LIKE 'procrastinate\\_%' LOOP
        EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', item.tablename);
    END LOOP;
    FOR item IN SELECT oid::regprocedure AS signature FROM pg_proc WHERE proname LIKE 'procrastinate\\_%' LOOP
        EXECUTE 'DROP FUNCTION IF EXISTS ' || item.signature || ' CASCADE';
    END LOOP;
    FOR item IN SELECT typname FROM pg_type WHERE typname LIKE 'procrastinate\\_%' AND typtype IN ('e', 'c') LOOP
        EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', item.typname);
    END LOOP;
END $$;
"""


def upgrade() -> None:
    context = op.get_context()
    if context.dialect.name != "postgresql":
        return
    if context.as_sql:  # ``--sql``: the script a DBA applies, exactly as procrastinate ships it
        context.impl.static_output(job_queue_schema_sql())
        return
    apply_job_queue_schema(op.get_bind())


def downgrade() -> None:
    context = op.get_context()
    if context.dialect.name != "postgresql":
        return
    if context.as_sql:
        context.impl.static_output(DROP_JOB_QUEUE)
        return
    driver = op.get_bind().connection.driver_connection
    assert driver is not None
    driver.execute(DROP_JOB_QUEUE)
