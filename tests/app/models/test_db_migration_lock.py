"""Several server processes that start at once on one PostgreSQL database each run the migrations: one migrates,
the others wait for it and find the database at the newest revision (no error, no half-built schema)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from alembic.script import ScriptDirectory

from app.db import alembic_config, create_db_engine, current_revision, migrate

RACING_MIGRATIONS = 3


def test_migrations_started_at_the_same_moment_on_an_empty_database_all_succeed(postgres_url: str) -> None:
    start_together = threading.Barrier(RACING_MIGRATIONS)

    def migrate_when_all_are_ready() -> None:
        start_together.wait()
        migrate(postgres_url)

    with ThreadPoolExecutor(max_workers=RACING_MIGRATIONS) as pool:
        runs = [pool.submit(migrate_when_all_are_ready) for _ in range(RACING_MIGRATIONS)]
        for run in runs:
            run.result(timeout=120)

    engine = create_db_engine(postgres_url)
    try:
        assert current_revision(engine) == ScriptDirectory.from_config(alembic_config()).get_current_head()
    finally:
        engine.dispose()
