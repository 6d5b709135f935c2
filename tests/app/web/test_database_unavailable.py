"""A database that cannot take a request now is a 503 with ``Retry-After`` on every face (JSON for the APIs, the
console's own page), never a 500, and the refused request stored nothing; an error that is a bug stays a 500.

The SQLite outage here is real: another connection holds the database's write lock for longer than the busy
timeout, as a long-running migration or a backup tool would. The PostgreSQL outage (stopped, restarted) is in
``tests/app/cli/test_pg_database_outage.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, select

from app.db import create_db_engine, is_database_unavailable
from app.models import Message, StaffRole
from tests.support.console_support import console_app, signed_in
from tests.support.database_outage import sqlite_write_lock
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.servers import free_port


def write_lock_held(live: LiveApp) -> AbstractContextManager[None]:
    database = live.services.db.url.database
    assert database is not None
    return sqlite_write_lock(database)


@pytest.fixture
def live_console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def test_sqlite_locked_past_its_busy_timeout_is_a_503_with_retry_after_and_the_message_is_not_stored(
    live_console: LiveApp,
) -> None:
    live_app = live_console
    client, _ = live_app.visitor()
    conversation = live_app.conversation(client)
    staff = signed_in(live_app, StaffRole.AGENT)
    with write_lock_held(live_app):
        posted = client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "Hello?"})
        page = staff.get("/console")
    assert posted.status_code == 503, posted.text
    assert int(posted.headers["Retry-After"]) > 0
    assert "database is unavailable" in posted.json()["detail"]
    assert page.status_code == 503, page.text[:500]
    assert int(page.headers["Retry-After"]) > 0
    assert page.headers["content-type"].startswith("text/html") and "database is unavailable" in page.text

    with live_app.db() as session:
        assert session.exec(select(Message).where(Message.content == "Hello?")).all() == []
    again = client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "Hello?"})
    assert again.status_code == 202, again.text


def _sqlite_error(tmp_path: Path, statement: str, *, hold_lock: bool = False) -> SQLAlchemyError:
    """What the app's engine raises for ``statement`` (with another connection holding the write lock, if told)."""
    engine = create_db_engine(f"sqlite:///{tmp_path / 'errors.db'}")
    holder = sqlite3.connect(tmp_path / "errors.db", isolation_level=None)
    try:
        if hold_lock:
            holder.execute("BEGIN IMMEDIATE")
        with engine.connect() as connection:
            connection.execute(text(statement))
    except SQLAlchemyError as error:
        return error
    finally:
        holder.close()
        engine.dispose()
    raise AssertionError(f"{statement!r} did not fail")


def _postgres_error(url: str, statement: str) -> SQLAlchemyError:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text(statement))
    except SQLAlchemyError as error:
        return error
    finally:
        engine.dispose()
    raise AssertionError(f"{statement!r} did not fail")


ErrorMaker = Callable[[Path, Any], SQLAlchemyError]
CASES: dict[str, tuple[ErrorMaker, bool]] = {
    "sqlite locked": (lambda tmp, pg: _sqlite_error(tmp, "SELECT 1", hold_lock=True), True),
    "sqlite no such table": (lambda tmp, pg: _sqlite_error(tmp, "SELECT * FROM missing"), False),
    "sqlite syntax error": (lambda tmp, pg: _sqlite_error(tmp, "SELEC 1"), False),
    "postgresql refused": (
        lambda tmp, pg: _postgres_error(f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/none", "SELECT 1"),
        True,
    ),
    "postgresql undefined table": (lambda tmp, pg: _postgres_error(pg, "SELECT * FROM missing"), False),
    "postgresql division by zero": (lambda tmp, pg: _postgres_error(pg, "SELECT 1 / 0"), False),
    "postgresql connection ended by the server": (
        lambda tmp, pg: _postgres_error(pg, "SELECT pg_terminate_backend(pg_backend_pid())"),
        True,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_only_errors_that_say_the_database_cannot_take_the_step_now_count_as_unavailable(
    case: str, tmp_path: Path, postgres_url: str
) -> None:
    make, unavailable = CASES[case]
    error = make(tmp_path, postgres_url)
    assert is_database_unavailable(error) is unavailable, repr(error)


def test_a_database_error_that_is_a_bug_is_still_a_500(live_app: LiveApp) -> None:
    with Session(live_app.services.db) as session:
        session.execute(text("DROP TABLE messages_search"))  # a schema that lost a table: a bug, not an outage
        session.commit()
    client, _ = live_app.visitor()
    conversation = live_app.conversation(client)
    response = client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "Find me"})
    assert response.status_code == 500, response.text
    assert "Retry-After" not in response.headers
