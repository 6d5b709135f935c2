"""Upgrading to message public ids gives every stored message a unique random one, drops the stored live events
(they name messages by their integer ids), and leaves the message search working, on SQLite and PostgreSQL; a
downgrade keeps every message."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, insert, inspect, text
from sqlmodel import Session, col, select

from app.db import create_db_engine, current_revision, downgrade, upgrade
from app.models import Message, MessageAuthor, MessageRole
from app.tools import ToolContext, build_tool_registry
from app.tools.conversation_search import TOOL_NAME
from tests.app.models.test_models_and_migrations import HEAD, schema_differences

BEFORE_MESSAGE_IDS = "0012_message_search"
NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
MESSAGE_ID = re.compile(r"msg_[A-Za-z0-9_-]{20,36}")


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    sqlite = request.param == "sqlite"
    url = f"sqlite:///{tmp_path / 'legacy.db'}" if sqlite else request.getfixturevalue("postgres_url")
    db_engine = create_db_engine(url)
    upgrade(db_engine, revision=BEFORE_MESSAGE_IDS)
    yield db_engine
    db_engine.dispose()


def _legacy_conversation(engine: Engine) -> tuple[int, int]:
    with engine.begin() as connection:
        customer = connection.execute(
            text("INSERT INTO customers (name, public_id, created_at) VALUES ('Ada', 'cus_legacy', :now) RETURNING id"),
            {"now": NOW},
        ).scalar_one()
        conversation = connection.execute(
            text(
                "INSERT INTO conversations (customer_id, public_id, status, title, created_at, updated_at) "
                "VALUES (:customer, 'cnv_legacy', 'bot', 'Parcel', :now, :now) RETURNING id"
            ),
            {"customer": customer, "now": NOW},
        ).scalar_one()
        for content in ("Where is parcel #W2378156?", "It ships today.", "Thanks!"):
            connection.execute(
                text(
                    "INSERT INTO messages (conversation_id, role, content, author, private, created_at) "
                    "VALUES (:conversation, 'user', :content, 'customer', false, :now)"
                ),
                {"conversation": conversation, "content": content, "now": NOW},
            )
        connection.execute(
            text(
                "INSERT INTO conversation_events (conversation_id, sequence, type, data, created_at) "
                "VALUES (:conversation, 1, 'message.created', :data, :now)"
            ),
            {"conversation": conversation, "data": json.dumps({"id": 1}), "now": NOW},
        )
    return int(customer), int(conversation)


def _public_ids(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return list(session.exec(select(Message.public_id).order_by(col(Message.id))).all())


def test_the_upgrade_gives_every_message_a_unique_random_id_and_drops_the_stored_events(engine: Engine) -> None:
    customer, conversation = _legacy_conversation(engine)
    upgrade(engine)
    assert current_revision(engine) == HEAD
    assert schema_differences(engine) == []
    backfilled = _public_ids(engine)
    assert len(backfilled) == len(set(backfilled)) == 3
    assert all(MESSAGE_ID.fullmatch(public_id) for public_id in backfilled), backfilled
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM conversation_events")).scalar_one() == 0
    with Session(engine) as session:  # new rows get their own, through the ORM and through Core alike
        session.add(Message(conversation_id=conversation, role=MessageRole.USER, author=MessageAuthor.CUSTOMER,
                            content="Is #W2378156 late?"))  # fmt: skip
        session.commit()
        rows = [{"conversation_id": conversation, "role": MessageRole.ASSISTANT, "author": MessageAuthor.BOT,
                 "content": "No.", "private": False, "created_at": NOW}] * 2  # fmt: skip
        session.execute(insert(Message), rows)
        session.commit()
        context = ToolContext(session=session, customer_id=customer, conversation_id=conversation)
        found = build_tool_registry().execute(TOOL_NAME, json.dumps({"query": "#W2378156"}), context)
    every = _public_ids(engine)
    assert len(every) == len(set(every)) == 6 and every[:3] == backfilled
    assert found.ok and len(found.payload["results"]) == 2, "the search index still follows new messages"


def test_the_downgrade_keeps_every_message(engine: Engine) -> None:
    _legacy_conversation(engine)
    upgrade(engine)
    downgrade(engine, revision=BEFORE_MESSAGE_IDS)
    assert "public_id" not in {column["name"] for column in inspect(engine).get_columns("messages")}
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM messages")).scalar_one() == 3
