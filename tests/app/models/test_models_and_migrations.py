"""The schema: migrations produce exactly the models' metadata, and the engine and columns behave as promised."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, select

from app.cli import main
from app.db import alembic_config, create_db_engine, current_revision, downgrade, get_session, migrate, upgrade
from app.jobs.schema import include_name
from app.models import (
    Compaction,
    Conclusion,
    ConclusionKind,
    ConclusionSource,
    ContextSegment,
    Conversation,
    ConversationPublic,
    ConversationStatus,
    Customer,
    Message,
    MessageAuthor,
    MessagePublic,
    MessageRole,
    Order,
    OutboxStatus,
    SegmentReason,
    StaffMember,
    segment_title,
)

HEAD = "0027_routing"
SessionDep = Annotated[Session, Depends(get_session)]
ALL_TABLES = {
    "staff_members", "audit_events", "customers", "conversations", "messages", "context_segments", "compactions",
    "conclusions", "products", "orders", "order_items", "shipments", "refunds", "sync_runs",
    "staff_sessions", "login_throttles", "conversation_reads", "handoff_summaries",
    "conversation_events", "conversation_event_sequences", "rate_limit_windows",
    "knowledge_sources", "knowledge_documents", "knowledge_chunks", "message_sources", "knowledge_gaps",
    "conversation_outcomes",
    "promise_records",
    "eval_runs",
    "playbook_runs",
    "playbook_versions",
    "canned_replies",
    "conversation_labels",
    "desk_settings",
}  # fmt: skip
# The search indexes on SQLite: the FTS5 tables and their shadow tables (no content table: external content), and
# the knowledge chunks' embeddings and their count.
SEARCH_TABLES = {
    f"{index}{shadow}"
    for index in ("messages_search", "knowledge_chunks_search")
    for shadow in ("", "_data", "_idx", "_docsize", "_config")
} | {"knowledge_vectors", "knowledge_chunk_counts"}
# Tables a later migration renamed: the offline script creates them under their first name.
RENAMED_TABLES = {"staff_members": "agents"}


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'data' / 'memdesk.db'}"


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    migrate(database_url)
    db_engine = create_db_engine(database_url)
    yield db_engine
    db_engine.dispose()


def schema_differences(engine: Engine) -> list[object]:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True, "include_name": include_name})
        return list(compare_metadata(context, SQLModel.metadata))


def make_conversation(session: Session) -> tuple[Customer, Conversation]:
    customer = Customer(name="Ada", email="ada@example.com")
    session.add(customer)
    session.flush()
    assert customer.id is not None
    conversation = Conversation(customer_id=customer.id, title="Help")
    session.add(conversation)
    session.flush()
    return customer, conversation


# --- migrations --------------------------------------------------------------------------------------------------


def test_migrations_produce_exactly_the_models_schema(engine: Engine) -> None:
    assert set(inspect(engine).get_table_names()) == ALL_TABLES | SEARCH_TABLES | {"alembic_version"}
    assert schema_differences(engine) == []


def test_schema_comparison_notices_a_difference(engine: Engine) -> None:
    # Guards the test above against comparing nothing: drop an index the models declare and it must show up.
    with engine.begin() as connection:
        connection.execute(text("DROP INDEX ix_conversations_status"))
    assert any("ix_conversations_status" in repr(diff) for diff in schema_differences(engine))


def test_migrate_creates_the_data_directory_and_is_idempotent(database_url: str, tmp_path: Path) -> None:
    migrate(database_url)
    migrate(database_url)
    assert (tmp_path / "data" / "memdesk.db").exists()
    db_engine = create_db_engine(database_url)
    try:
        assert current_revision(db_engine) == HEAD
    finally:
        db_engine.dispose()


def test_downgrade_to_base_removes_every_table_and_upgrade_restores_them(engine: Engine) -> None:
    downgrade(engine, revision="base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == HEAD
    assert schema_differences(engine) == []


def test_the_help_articles_table_is_dropped_and_a_downgrade_restores_it(engine: Engine) -> None:
    assert "help_articles" not in inspect(engine).get_table_names()
    downgrade(engine, revision="0015_outcomes")
    columns = {column["name"] for column in inspect(engine).get_columns("help_articles")}
    assert columns == {"id", "slug", "title", "body", "tags"}
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO help_articles (slug, title, body, tags) VALUES ('a', 'A', 'b', '[]')"))
    upgrade(engine)
    assert "help_articles" not in inspect(engine).get_table_names()
    assert schema_differences(engine) == []


def test_migration_renders_for_postgresql() -> None:
    buffer = io.StringIO()
    config = alembic_config(output_buffer=buffer)
    config.set_main_option("sqlalchemy.url", "postgresql://memdesk@localhost/memdesk")
    command.upgrade(config, "head", sql=True)
    sql = buffer.getvalue()
    for table in ALL_TABLES:
        assert f"CREATE TABLE {RENAMED_TABLES.get(table, table)} (" in sql
    for table, first_name in RENAMED_TABLES.items():
        assert f"ALTER TABLE {first_name} RENAME TO {table}" in sql
    assert "created_at TIMESTAMP WITH TIME ZONE NOT NULL" in sql
    assert "CONSTRAINT uq_conclusions_customer_id_content_hash UNIQUE (customer_id, content_hash)" in sql
    assert "ON DELETE CASCADE" in sql
    # memdesk's enums are plain VARCHAR; the only types are the job queue's
    created_types = [line for line in sql.splitlines() if line.startswith("CREATE TYPE")]
    assert created_types and all(line.startswith("CREATE TYPE procrastinate_") for line in created_types)
    assert "CREATE TABLE procrastinate_jobs" in sql


def test_cli_migrate_reports_the_revision(database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--database-url", database_url]) == 0
    assert f"up to date (revision {HEAD})" in capsys.readouterr().out


# --- engine ------------------------------------------------------------------------------------------------------


def test_sqlite_engine_uses_wal_and_foreign_keys(engine: Engine) -> None:
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    with Session(engine) as session:
        session.add(Conversation(customer_id=12345, title="orphan"))
        with pytest.raises(IntegrityError):
            session.commit()


def test_sqlite_savepoints_and_transactional_ddl(engine: Engine) -> None:
    with Session(engine) as session:
        customer, _ = make_conversation(session)
        nested = session.begin_nested()
        session.add(Customer(name="Rolled back"))
        session.flush()
        nested.rollback()
        session.commit()
        assert [c.name for c in session.exec(select(Customer))] == [customer.name]
    with engine.connect() as connection:
        connection.execute(text("CREATE TABLE scratch (id INTEGER)"))
        connection.rollback()
    assert "scratch" not in inspect(engine).get_table_names()


def test_sqlite_engine_works_across_threads(engine: Engine) -> None:
    with Session(engine) as session:
        make_conversation(session)
        session.commit()
    counts: list[int] = []

    def count() -> None:
        with Session(engine) as session:
            counts.append(len(session.exec(select(Conversation)).all()))

    worker = threading.Thread(target=count)
    worker.start()
    worker.join()
    assert counts == [1]


def test_in_memory_sqlite_shares_one_database() -> None:
    memory = create_db_engine("sqlite://")
    try:
        SQLModel.metadata.create_all(memory)
        with Session(memory) as session:
            make_conversation(session)
            session.commit()
        with Session(memory) as session:
            assert len(session.exec(select(Customer)).all()) == 1
    finally:
        memory.dispose()


def test_get_session_dependency_uses_the_app_engine(engine: Engine) -> None:
    app = FastAPI()
    app.state.db = engine

    @app.get("/customers")
    def count_customers(session: SessionDep) -> dict[str, int]:
        return {"customers": len(session.exec(select(Customer)).all())}

    with TestClient(app) as client:
        assert client.get("/customers").json() == {"customers": 0}

    bare = FastAPI()

    @bare.get("/customers")
    def needs_engine(session: SessionDep) -> dict[str, int]:
        return {}

    with TestClient(bare) as client, pytest.raises(RuntimeError, match=r"app\.state\.db"):
        client.get("/customers")


# --- columns -----------------------------------------------------------------------------------------------------


def test_timestamps_are_stored_and_returned_in_utc(engine: Engine) -> None:
    eastern = timezone(timedelta(hours=-5))
    with Session(engine) as session:
        customer = Customer(name="Tz", created_at=datetime(2026, 3, 1, 7, 30, tzinfo=eastern))
        session.add(customer)
        session.commit()
        session.expire_all()
        loaded = session.exec(select(Customer)).one()
    assert loaded.created_at == datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    assert loaded.created_at.tzinfo is UTC


def test_enums_are_stored_as_their_values(engine: Engine) -> None:
    with Session(engine) as session:
        _, conversation = make_conversation(session)
        conversation.status = ConversationStatus.NEEDS_HUMAN
        session.commit()
        raw = session.connection().execute(text("SELECT status FROM conversations")).scalar()
        session.expire_all()
        loaded = session.exec(select(Conversation)).one()
    assert raw == "needs_human"
    assert loaded.status is ConversationStatus.NEEDS_HUMAN


def test_messages_keep_tool_calls_and_private_notes(engine: Engine) -> None:
    tool_calls = [{"id": "call_1", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}]
    with Session(engine) as session:
        _, conversation = make_conversation(session)
        assert conversation.id is not None
        session.add_all([
            Message(conversation_id=conversation.id, role=MessageRole.ASSISTANT, author=MessageAuthor.BOT,
                    tool_calls=tool_calls, prompt_tokens=120, completion_tokens=8),
            Message(conversation_id=conversation.id, role=MessageRole.TOOL, author=MessageAuthor.SYSTEM,
                    tool_call_id="call_1", content='{"status": "pending"}'),
            Message(conversation_id=conversation.id, role=MessageRole.ASSISTANT, author=MessageAuthor.STAFF,
                    content="VIP customer", private=True),
        ])  # fmt: skip
        session.commit()
        raw_nulls = session.connection().execute(text("SELECT COUNT(*) FROM messages WHERE tool_calls IS NULL"))
        messages = session.exec(select(Message).order_by(Message.id)).all()
        public = [MessagePublic.of(message, conversation_public_id=conversation.public_id) for message in messages]
    assert raw_nulls.scalar() == 2  # SQL NULL, not the JSON text 'null'
    assert messages[0].tool_calls == tool_calls and public[0].has_tool_calls and public[0].role is MessageRole.ASSISTANT
    assert messages[1].tool_call_id == "call_1" and public[2].private
    assert [message.customer_visible for message in public] == [False, False, False], "tool traffic and a note"


def test_conclusion_content_hash_is_unique_per_customer(engine: Engine) -> None:
    with Session(engine) as session:
        first, _ = make_conversation(session)
        second = Customer(name="Other")
        session.add(second)
        session.flush()
        assert first.id is not None and second.id is not None

        def conclusion(customer_id: int) -> Conclusion:
            return Conclusion(
                customer_id=customer_id,
                kind=ConclusionKind.PROMISE,
                text="Refund $42.10 for order #W2378156 by 2026-12-02",
                identifiers=["#W2378156", "$42.10"],
                source=ConclusionSource.COMPACTION,
                content_hash="a" * 64,
            )

        session.add_all([conclusion(first.id), conclusion(second.id)])
        session.commit()
        stored = session.exec(select(Conclusion)).first()
        assert stored is not None and stored.status is OutboxStatus.PENDING and stored.attempts == 0
        assert stored.identifiers == ["#W2378156", "$42.10"]
        session.add(conclusion(first.id))
        with pytest.raises(IntegrityError):
            session.commit()


def test_deleting_a_conversation_removes_its_messages_segments_and_compactions(engine: Engine) -> None:
    with Session(engine) as session:
        _, conversation = make_conversation(session)
        assert conversation.id is not None
        messages = [
            Message(
                conversation_id=conversation.id, role=MessageRole.USER, author=MessageAuthor.CUSTOMER, content=str(i)
            )
            for i in range(3)
        ]
        session.add_all(messages)
        session.flush()
        start = ContextSegment(
            conversation_id=conversation.id,
            reason=SegmentReason.START,
            number=1,
            title=segment_title(1, SegmentReason.START),
            first_message_id=messages[0].id,
        )
        session.add(start)
        session.flush()
        second = ContextSegment(
            conversation_id=conversation.id,
            parent_id=start.id,
            reason=SegmentReason.COMPRESSION,
            number=2,
            title=segment_title(2, SegmentReason.COMPRESSION),
        )
        session.add(second)
        session.flush()
        assert second.id is not None and messages[0].id is not None and messages[1].id is not None
        session.add(
            Compaction(
                conversation_id=conversation.id,
                segment_id=second.id,
                first_message_id=messages[0].id,
                last_message_id=messages[1].id,
                summary="Customer asked twice.",
                main_model="m",
                tokens_before=900,
                tokens_after=300,
                trace_event={"strategy": "summary"},
            )
        )
        session.commit()  # fmt: skip
        assert second.title == "Segment 2 (compression)"
        session.delete(conversation)
        session.commit()
        for table in ("messages", "context_segments", "compactions"):
            assert session.connection().execute(text(f"SELECT COUNT(*) FROM {table}")).scalar() == 0


def test_staff_member_deletion_keeps_messages_and_unassigns_conversations(engine: Engine) -> None:
    with Session(engine) as session:
        member = StaffMember(email="sam@example.com", name="Sam", password_hash="x")
        session.add(member)
        _, conversation = make_conversation(session)
        assert member.id is not None and conversation.id is not None
        conversation.assigned_staff_id = member.id
        session.add(Message(conversation_id=conversation.id, role=MessageRole.ASSISTANT, author=MessageAuthor.STAFF,
                            staff_id=member.id, content="Hi, Sam here."))  # fmt: skip
        session.commit()
        session.delete(member)
        session.commit()
        session.expire_all()
        assert session.exec(select(Conversation)).one().assigned_staff_id is None
        assert session.exec(select(Message)).one().staff_id is None


def test_public_models_read_from_tables(engine: Engine) -> None:
    with Session(engine) as session:
        customer, conversation = make_conversation(session)
        assert customer.id is not None
        order = Order(number="#W1234567", customer_id=customer.id, total_cents=4210, shipping_name="Ada",
                      shipping_line1="1 Loop St", shipping_city="Boston", shipping_postal_code="02110",
                      shipping_country="US")  # fmt: skip
        session.add(order)
        session.commit()
        conversation_public = ConversationPublic.of(conversation)
    assert conversation_public.id == conversation.public_id and conversation_public.status is ConversationStatus.BOT
    assert conversation_public.updated_at.tzinfo is not None
