"""Idle conversations close by themselves: one the bot answered and the customer left is closed as resolved by the
bot and audited, once however many processes look; one waiting for a reply, or held by a person, stays open."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.db import create_db_engine, upgrade
from app.models import (
    AuditEvent,
    Conversation,
    ConversationOutcome,
    ConversationStatus,
    Message,
    MessageAuthor,
    MessageRole,
    utc_now,
)
from app.models.outcomes import Resolution
from app.outcomes.idle import IDLE_ACTION, close_idle
from app.outcomes.recording import record_first_reply
from tests.support.rows import add_customer_conversation

DAY_S = 86_400.0


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Engine]:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'idle.db'}")
    upgrade(engine)
    yield engine
    engine.dispose()


def _conversation(db: Engine, *, last: MessageAuthor, hours_ago: float, status: ConversationStatus) -> int:
    at = utc_now() - timedelta(hours=hours_ago)
    with Session(db) as session:
        _, conversation_id = add_customer_conversation(session)
        conversation = session.get(Conversation, conversation_id)
        assert conversation is not None
        conversation.status = status
        session.add(
            Message(
                conversation_id=conversation_id,
                role=MessageRole.USER,
                author=MessageAuthor.CUSTOMER,
                content="Where is my parcel?",
                created_at=at - timedelta(minutes=1),
            )
        )
        if last != MessageAuthor.CUSTOMER:
            role = MessageRole.ASSISTANT
            session.add(
                Message(conversation_id=conversation_id, role=role, author=last, content="Friday.", created_at=at)
            )
            record_first_reply(session, conversation_id, last, at)
        session.commit()
        return conversation_id


def test_a_conversation_the_bot_answered_and_the_customer_left_closes_as_resolved_by_the_bot(db: Engine) -> None:
    quiet = _conversation(db, last=MessageAuthor.BOT, hours_ago=30, status=ConversationStatus.BOT)
    recent = _conversation(db, last=MessageAuthor.BOT, hours_ago=2, status=ConversationStatus.BOT)
    assert close_idle(db, idle_after_s=DAY_S) == [quiet]
    with Session(db) as session:
        assert session.get(Conversation, quiet).status == ConversationStatus.CLOSED  # type: ignore[union-attr]
        assert session.get(Conversation, recent).status == ConversationStatus.BOT  # type: ignore[union-attr]
        outcome = session.get(ConversationOutcome, quiet)
        assert outcome is not None and outcome.resolution == Resolution.BOT
        audit = session.exec(select(AuditEvent).where(AuditEvent.action == IDLE_ACTION)).all()
        assert [event.target_id for event in audit] == [str(quiet)]


def test_a_conversation_waiting_for_a_reply_or_held_by_a_person_stays_open(db: Engine) -> None:
    waiting = _conversation(db, last=MessageAuthor.CUSTOMER, hours_ago=30, status=ConversationStatus.BOT)
    queued = _conversation(db, last=MessageAuthor.BOT, hours_ago=30, status=ConversationStatus.NEEDS_HUMAN)
    held = _conversation(db, last=MessageAuthor.STAFF, hours_ago=30, status=ConversationStatus.HUMAN)
    assert close_idle(db, idle_after_s=DAY_S) == []
    with Session(db) as session:
        statuses = [session.get(Conversation, key).status for key in (waiting, queued, held)]  # type: ignore[union-attr]
    assert statuses == [ConversationStatus.BOT, ConversationStatus.NEEDS_HUMAN, ConversationStatus.HUMAN]


def test_a_second_pass_or_process_closes_nothing_twice(db: Engine) -> None:
    quiet = _conversation(db, last=MessageAuthor.BOT, hours_ago=30, status=ConversationStatus.BOT)
    other_process = create_db_engine(str(db.url))
    try:
        assert close_idle(db, idle_after_s=DAY_S) == [quiet]
        assert close_idle(other_process, idle_after_s=DAY_S) == []
    finally:
        other_process.dispose()
    with Session(db) as session:
        assert len(session.exec(select(AuditEvent).where(AuditEvent.action == IDLE_ACTION)).all()) == 1
