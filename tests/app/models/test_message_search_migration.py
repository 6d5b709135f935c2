"""Upgrading to the message search index makes the messages already stored searchable (private notes and system
rows excepted), on SQLite and PostgreSQL; a downgrade removes the index and its triggers and keeps every message."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, inspect, text
from sqlmodel import Session

from app.db import create_db_engine, current_revision, downgrade, upgrade
from app.tools import ToolContext, build_tool_registry
from app.tools.conversation_search import TOOL_NAME
from tests.app.models.test_models_and_migrations import HEAD, schema_differences

BEFORE_SEARCH = "0011_conclusion_said_by"
NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    sqlite = request.param == "sqlite"
    url = f"sqlite:///{tmp_path / 'legacy.db'}" if sqlite else request.getfixturevalue("postgres_url")
    db_engine = create_db_engine(url)
    upgrade(db_engine, revision=BEFORE_SEARCH)
    yield db_engine
    db_engine.dispose()


def _insert(engine: Engine, table: str, **values: Any) -> int:
    columns, binds = ", ".join(values), ", ".join(f":{name}" for name in values)
    with engine.begin() as connection:
        statement = text(f"INSERT INTO {table} ({columns}) VALUES ({binds}) RETURNING id")
        return int(connection.execute(statement, values).one()[0])


def _message(engine: Engine, conversation: int, role: str, author: str, content: str, *, private: bool = False) -> int:
    return _insert(engine, "messages", conversation_id=conversation, role=role, author=author, content=content,
                   private=private, created_at=NOW)  # fmt: skip


def _found(engine: Engine, customer: int, conversation: int, query: str) -> list[int]:
    with Session(engine) as session:
        context = ToolContext(session=session, customer_id=customer, conversation_id=conversation)
        result = build_tool_registry().execute(TOOL_NAME, json.dumps({"query": query}), context)
    assert result.ok, result.content
    return [item["message_id"] for item in result.payload["results"]]


def _search_objects(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            rows = connection.execute(text("SELECT name FROM sqlite_master WHERE name LIKE 'messages_search%'"))
        else:
            rows = connection.execute(text("SELECT indexname FROM pg_indexes WHERE indexname = 'ix_messages_search'"))
        return {str(row[0]) for row in rows}


def test_the_upgrade_indexes_stored_messages_and_the_downgrade_removes_the_index(engine: Engine) -> None:
    customer = _insert(engine, "customers", name="Ada", public_id="cus_legacy", created_at=NOW)
    conversation = _insert(engine, "conversations", customer_id=customer, public_id="cnv_legacy", status="bot",
                           title="Late parcel", created_at=NOW, updated_at=NOW)  # fmt: skip
    question = _message(engine, conversation, "user", "customer", "Where is my parcel #W2378156?")
    result = _message(engine, conversation, "tool", "system", '{"tracking_number": "1Z999AA10123456784"}')
    _message(engine, conversation, "assistant", "staff", "Private: #W2378156 is a repeat complaint.", private=True)
    _message(engine, conversation, "system", "system", "System row about #W2378156.")

    upgrade(engine)
    assert current_revision(engine) == HEAD
    assert schema_differences(engine) == []
    assert _found(engine, customer, conversation, "#W2378156") == [question]
    assert _found(engine, customer, conversation, "1Z999AA10123456784") == [result]

    downgrade(engine, revision=BEFORE_SEARCH)
    assert _search_objects(engine) == set()
    assert len(inspect(engine).get_table_names()) > 0
    later = _message(engine, conversation, "user", "customer", "Any news on #W2378156?")  # no trigger left behind
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM messages")).scalar() == 5

    upgrade(engine)
    assert _search_objects(engine)
    assert sorted(_found(engine, customer, conversation, "#W2378156")) == [question, later]
