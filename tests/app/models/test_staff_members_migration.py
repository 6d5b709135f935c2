"""Upgrading a database from before staff members had their own name keeps every row and finds it under the new
names, with the models' exact schema and working foreign keys, on SQLite and PostgreSQL; a downgrade brings the old
names and values back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, inspect, text
from sqlmodel import Session, col, select

from app.db import create_db_engine, current_revision, downgrade, upgrade
from app.models import (
    AuditEvent,
    Conversation,
    ConversationRead,
    HandoffSummary,
    Message,
    MessageAuthor,
    StaffMember,
    StaffRole,
    StaffSession,
)
from tests.app.models.test_models_and_migrations import HEAD, schema_differences

BEFORE_STAFF_MEMBERS = "0009_job_queue"
NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Legacy:
    """The ids of the rows written before the upgrade."""

    sam: int
    kim: int
    conversation: int
    messages: tuple[int, int, int]  # the customer's question, Sam's reply, Kim's private note


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = (
        f"sqlite:///{tmp_path / 'legacy.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    )
    db_engine = create_db_engine(url)
    upgrade(db_engine, revision=BEFORE_STAFF_MEMBERS)
    yield db_engine
    db_engine.dispose()


def _insert(connection: Connection, table: str, **values: Any) -> int:
    columns = ", ".join(values)
    binds = ", ".join(f":{name}" for name in values)
    return int(
        connection.execute(text(f"INSERT INTO {table} ({columns}) VALUES ({binds}) RETURNING id"), values).one()[0]
    )


def _seed(engine: Engine) -> Legacy:
    with engine.begin() as connection:

        def member(email: str, name: str, role: str) -> int:
            return _insert(connection, "agents", email=email, name=name, role=role, active=True, password_hash="-",
                           created_at=NOW)  # fmt: skip

        def message(author: str, content: str, agent_id: int | None = None, *, private: bool = False) -> int:
            role = "user" if author == "customer" else "assistant"
            return _insert(connection, "messages", conversation_id=conversation, role=role, author=author,
                           agent_id=agent_id, content=content, private=private, created_at=NOW)  # fmt: skip

        sam = member("sam@example.com", "Sam Rivera", "agent")
        kim = member("kim@example.com", "Kim Lee", "supervisor")
        customer = _insert(connection, "customers", name="Ada", public_id="cus_legacy", created_at=NOW)
        conversation = _insert(connection, "conversations", customer_id=customer, public_id="cnv_legacy",
                               status="human", assigned_agent_id=sam, title="Late parcel", created_at=NOW,
                               updated_at=NOW)  # fmt: skip
        question = message("customer", "Where is my parcel?")
        reply = message("agent", "Sam here, looking into it.", sam)
        note = message("agent", "Second late parcel this month.", kim, private=True)
        _insert(connection, "staff_sessions", token_digest="d" * 64, agent_id=sam, csrf_token="c" * 64,
                created_at=NOW, last_seen_at=NOW)  # fmt: skip
        connection.execute(
            text("INSERT INTO conversation_reads (agent_id, conversation_id, last_read_message_id, read_at) "
                 "VALUES (:agent, :conversation, :message, :now)"),
            {"agent": sam, "conversation": conversation, "message": question, "now": NOW},
        )  # fmt: skip
        _insert(connection, "handoff_summaries", conversation_id=conversation, through_message_id=question,
                summary="Wants the parcel.", fallback_used=False, requested_by=kim, created_at=NOW)  # fmt: skip
        for actor, action, target_type, target_id in (
            ("cli", "staff.added", "agent", sam),
            (f"agent:{sam}", "console.login", "agent", sam),
            (f"agent:{sam}", "console.take_over", "conversation", conversation),
            ("bot", "order.cancel", "order", "#W1234567"),
        ):
            _insert(connection, "audit_events", actor=actor, action=action, target_type=target_type,
                    target_id=str(target_id), detail="{}", created_at=NOW)  # fmt: skip
    return Legacy(sam, kim, conversation, (question, reply, note))


def _names_of_keys_and_indexes(engine: Engine) -> list[str]:
    inspector = inspect(engine)
    names: list[str | None] = []
    for table in inspector.get_table_names():
        names.append(inspector.get_pk_constraint(table)["name"])
        names += [key["name"] for key in inspector.get_foreign_keys(table)]
        names += [index["name"] for index in inspector.get_indexes(table)]
        names += [unique["name"] for unique in inspector.get_unique_constraints(table)]
    return [name for name in names if name]


def test_the_upgrade_finds_every_row_under_the_staff_names(engine: Engine) -> None:
    legacy = _seed(engine)
    upgrade(engine)
    assert current_revision(engine) == HEAD
    with Session(engine) as session:
        members = session.exec(select(StaffMember).order_by(col(StaffMember.id))).all()
        assert [(m.id, m.name, m.role) for m in members] == [
            (legacy.sam, "Sam Rivera", StaffRole.AGENT), (legacy.kim, "Kim Lee", StaffRole.SUPERVISOR),
        ]  # fmt: skip
        conversation = session.get(Conversation, legacy.conversation)
        assert conversation is not None and conversation.assigned_staff_id == legacy.sam
        messages = session.exec(select(Message).order_by(col(Message.id))).all()
        assert [(m.id, m.author, m.staff_id, m.private) for m in messages] == [
            (legacy.messages[0], MessageAuthor.CUSTOMER, None, False),
            (legacy.messages[1], MessageAuthor.STAFF, legacy.sam, False),
            (legacy.messages[2], MessageAuthor.STAFF, legacy.kim, True),
        ]
        assert [s.staff_id for s in session.exec(select(StaffSession)).all()] == [legacy.sam]
        reads = session.exec(select(ConversationRead)).all()
        assert [(r.staff_id, r.conversation_id, r.last_read_message_id) for r in reads] == [
            (legacy.sam, legacy.conversation, legacy.messages[0])
        ]
        assert [h.requested_by for h in session.exec(select(HandoffSummary)).all()] == [legacy.kim]
        events = session.exec(select(AuditEvent).order_by(col(AuditEvent.id))).all()
        assert [(e.actor, e.action, e.target_type, e.target_id) for e in events] == [
            ("cli", "staff.added", "staff", str(legacy.sam)),
            (f"staff:{legacy.sam}", "console.login", "staff", str(legacy.sam)),
            (f"staff:{legacy.sam}", "console.take_over", "conversation", str(legacy.conversation)),
            ("bot", "order.cancel", "order", "#W1234567"),
        ]
    assert schema_differences(engine) == []
    assert [name for name in _names_of_keys_and_indexes(engine) if "agent" in name] == []
    assert "agents" not in inspect(engine).get_table_names()
    if engine.dialect.name == "postgresql":
        sequences = inspect(engine).get_sequence_names()
        assert "staff_members_id_seq" in sequences and "agents_id_seq" not in sequences


def test_after_the_upgrade_the_foreign_keys_still_act_when_a_staff_member_goes(engine: Engine) -> None:
    legacy = _seed(engine)
    upgrade(engine)
    with Session(engine) as session:
        newcomer = StaffMember(email="lee@example.com", name="Lee", password_hash="-")
        session.add(newcomer)
        session.commit()
        assert newcomer.id is not None and newcomer.id > legacy.kim
        for member_id in (legacy.sam, legacy.kim):
            session.delete(session.get(StaffMember, member_id))
        session.commit()
        session.expire_all()
        conversation = session.get(Conversation, legacy.conversation)
        assert conversation is not None and conversation.assigned_staff_id is None
        assert [m.staff_id for m in session.exec(select(Message)).all()] == [None, None, None]
        assert [h.requested_by for h in session.exec(select(HandoffSummary)).all()] == [None]
        assert session.exec(select(StaffSession)).all() == []
        assert session.exec(select(ConversationRead)).all() == []


def test_the_downgrade_brings_back_the_old_names_and_values(engine: Engine) -> None:
    legacy = _seed(engine)
    upgrade(engine)
    downgrade(engine, revision=BEFORE_STAFF_MEMBERS)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT id, name FROM agents ORDER BY id")).all() == [
            (legacy.sam, "Sam Rivera"), (legacy.kim, "Kim Lee"),
        ]  # fmt: skip
        assert connection.execute(text("SELECT assigned_agent_id FROM conversations")).scalar() == legacy.sam
        authors = connection.execute(text("SELECT author, agent_id FROM messages ORDER BY id")).all()
        assert authors == [("customer", None), ("agent", legacy.sam), ("agent", legacy.kim)]
        assert connection.execute(text("SELECT agent_id FROM staff_sessions")).scalar() == legacy.sam
        assert connection.execute(text("SELECT agent_id FROM conversation_reads")).scalar() == legacy.sam
        events = connection.execute(text("SELECT actor, target_type FROM audit_events ORDER BY id")).all()
        sam = f"agent:{legacy.sam}"
        assert events == [("cli", "agent"), (sam, "agent"), (sam, "conversation"), ("bot", "order")]
    names = _names_of_keys_and_indexes(engine)
    assert "fk_messages_agent_id_agents" in names and "ix_conversations_assigned_agent_id" in names
    assert [name for name in names if "staff_members" in name or "staff_id" in name] == []
    upgrade(engine)
    assert schema_differences(engine) == []


def test_on_sqlite_the_rebuilt_tables_still_never_reuse_an_id(tmp_path: Path) -> None:
    db_engine = create_db_engine(f"sqlite:///{tmp_path / 'legacy.db'}")
    try:
        upgrade(db_engine, revision=BEFORE_STAFF_MEMBERS)
        _seed(db_engine)
        upgrade(db_engine)
        with db_engine.connect() as connection:
            for table in ("conversations", "messages"):
                sql = connection.execute(text("SELECT sql FROM sqlite_master WHERE name = :t"), {"t": table}).scalar()
                assert "AUTOINCREMENT" in str(sql), table
            assert connection.execute(text("PRAGMA foreign_key_check")).first() is None
    finally:
        db_engine.dispose()
