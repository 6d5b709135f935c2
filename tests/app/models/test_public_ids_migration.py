"""Upgrading a database from before public ids keeps every row, gives each a unique public id, and from then on a
deleted row's id is never handed out again (SQLite reuses the highest rowid otherwise)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, text
from sqlmodel import Session, select

from app.db import create_db_engine, downgrade, upgrade
from app.models import Conversation, Customer

BEFORE_PUBLIC_IDS = "0002_outbox_retry_schedule"
NOW = "2026-11-01 10:00:00+00:00"


def _legacy_database(tmp_path: Path) -> Engine:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'legacy.db'}")
    upgrade(engine, revision=BEFORE_PUBLIC_IDS)
    with engine.begin() as connection:
        for customer in (1, 2, 3):
            connection.execute(
                text("INSERT INTO customers (id, name, created_at) VALUES (:id, :name, :now)"),
                {"id": customer, "name": f"Customer {customer}", "now": NOW},
            )
            connection.execute(
                text(
                    "INSERT INTO conversations (id, customer_id, status, title, created_at, updated_at) "
                    "VALUES (:id, :id, 'bot', 'Help', :now, :now)"
                ),
                {"id": customer, "now": NOW},
            )
            connection.execute(
                text(
                    "INSERT INTO messages (conversation_id, role, content, author, private, created_at) "
                    "VALUES (:id, 'user', :content, 'customer', 0, :now)"
                ),
                {"id": customer, "content": f"hello from {customer}", "now": NOW},
            )
    return engine


def test_upgrading_keeps_every_row_and_gives_each_a_unique_public_id(tmp_path: Path) -> None:
    engine = _legacy_database(tmp_path)
    try:
        upgrade(engine)
        with Session(engine) as session:
            customers = session.exec(select(Customer).order_by(Customer.id)).all()
            conversations = session.exec(select(Conversation).order_by(Conversation.id)).all()
            assert [c.name for c in customers] == ["Customer 1", "Customer 2", "Customer 3"]
            assert [c.customer_id for c in conversations] == [1, 2, 3]
            public_ids = [c.public_id for c in customers] + [c.public_id for c in conversations]
            assert len(set(public_ids)) == 6
            assert all(p.startswith(("cus_", "cnv_")) and len(p) > 20 for p in public_ids)
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM messages")).scalar() == 3
            assert connection.execute(text("PRAGMA foreign_key_check")).first() is None
            assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1, "foreign keys are back on"
    finally:
        engine.dispose()


def test_after_the_upgrade_a_deleted_customers_id_is_never_reused(tmp_path: Path) -> None:
    engine = _legacy_database(tmp_path)
    try:
        upgrade(engine)
        with Session(engine) as session:
            newest = session.get(Customer, 3)
            assert newest is not None
            session.delete(newest)  # cascades to its conversation and message
            session.commit()
            again = Customer(name="Someone new")
            session.add(again)
            session.commit()
            conversation = Conversation(customer_id=again.id or 0, title="New")
            session.add(conversation)
            session.commit()
            assert again.id == 4 and conversation.id == 4
    finally:
        engine.dispose()


def test_the_upgrade_can_be_undone(tmp_path: Path) -> None:
    engine = _legacy_database(tmp_path)
    try:
        upgrade(engine)
        downgrade(engine, revision=BEFORE_PUBLIC_IDS)
        with engine.connect() as connection:
            columns = {row[1] for row in connection.execute(text("PRAGMA table_info(customers)"))}
            assert "public_id" not in columns
            assert connection.execute(text("SELECT count(*) FROM messages")).scalar() == 3
    finally:
        engine.dispose()
