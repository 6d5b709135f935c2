"""Conversations that existed before outcomes were recorded get theirs from their transcript and audit trail."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session, select

from app.db import create_db_engine, current_revision, upgrade
from app.models import ConversationOutcome, HandoffReason, Resolution
from tests.app.models.test_models_and_migrations import HEAD, schema_differences

BEFORE_OUTCOMES = "0014_knowledge"
START = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    sqlite = request.param == "sqlite"
    url = f"sqlite:///{tmp_path / 'legacy.db'}" if sqlite else request.getfixturevalue("postgres_url")
    db_engine = create_db_engine(url)
    upgrade(db_engine, revision=BEFORE_OUTCOMES)
    yield db_engine
    db_engine.dispose()


def _conversation(engine: Engine, name: str, status: str, messages: list[tuple[str, str]], audit: list[str]) -> int:
    """A conversation with ``messages`` as (author, text), one minute apart, and audit events by their action."""
    with engine.begin() as connection:
        customer = connection.execute(
            text("INSERT INTO customers (name, public_id, created_at) VALUES (:name, :id, :now) RETURNING id"),
            {"name": name, "id": f"cus_{name}", "now": START},
        ).scalar_one()
        conversation = connection.execute(
            text(
                "INSERT INTO conversations (customer_id, public_id, status, title, created_at, updated_at) "
                "VALUES (:customer, :id, :status, 'Help', :now, :later) RETURNING id"
            ),
            {"customer": customer, "id": f"cnv_{name}", "status": status, "now": START,
             "later": START + timedelta(hours=1)},
        ).scalar_one()  # fmt: skip
        for minute, (author, content) in enumerate(messages):
            role = "user" if author == "customer" else "assistant"
            connection.execute(
                text(
                    "INSERT INTO messages (conversation_id, public_id, role, content, author, private, created_at) "
                    "VALUES (:conversation, :id, :role, :content, :author, false, :at)"
                ),
                {"conversation": conversation, "id": f"msg_{name}{minute}", "role": role, "content": content,
                 "author": author, "at": START + timedelta(minutes=minute)},
            )  # fmt: skip
        for minute, action in enumerate(audit, start=30):
            connection.execute(
                text(
                    "INSERT INTO audit_events (actor, action, target_type, target_id, detail, created_at) "
                    "VALUES ('bot', :action, 'conversation', :target, '{}', :at)"
                ),
                {"action": action, "target": str(conversation), "at": START + timedelta(minutes=minute)},
            )
    return int(conversation)


def test_the_upgrade_gives_every_earlier_conversation_its_outcome(engine: Engine) -> None:
    by_bot = _conversation(engine, "bot", "closed", [("customer", "hi"), ("bot", "Hello!")], ["console.close"])
    by_human = _conversation(
        engine,
        "human",
        "closed",
        [("customer", "refund?"), ("bot", "Let me get a person."), ("staff", "Done.")],
        ["conversation.handoff", "console.close"],
    )
    left = _conversation(engine, "left", "closed", [("customer", "hello?"), ("bot", "One moment.")],
                         ["conversation.handoff", "console.close"])  # fmt: skip
    still_open = _conversation(engine, "open", "needs_human", [("customer", "help")], [])
    upgrade(engine)
    assert current_revision(engine) == HEAD and schema_differences(engine) == []
    with Session(engine) as session:
        outcomes = {row.conversation_id: row for row in session.exec(select(ConversationOutcome))}
    assert {key: outcomes[key].resolution for key in outcomes} == {
        by_bot: Resolution.BOT,
        by_human: Resolution.HUMAN,
        left: Resolution.ABANDONED,
        still_open: Resolution.OPEN,
    }
    assert outcomes[by_bot].first_bot_reply_at == START + timedelta(minutes=1)
    assert outcomes[by_bot].closed_at == START + timedelta(minutes=30) and outcomes[by_bot].handoff_reason is None
    assert outcomes[by_human].first_human_reply_at == START + timedelta(minutes=2)
    assert outcomes[by_human].handoff_reason == HandoffReason.OTHER
    assert outcomes[by_human].handed_off_at == START + timedelta(minutes=30)
    assert outcomes[still_open].handed_off_at == START + timedelta(hours=1)  # waiting, with no handoff event
    assert outcomes[still_open].closed_at is None and outcomes[still_open].first_bot_reply_at is None
    # Each row carries its conversation's start and its first replies' delays, which the overview counts.
    assert outcomes[by_bot].started_at == START and outcomes[by_bot].bot_response_s == pytest.approx(60, abs=0.01)
    # The handoff event came after the person's reply, so the delay runs from the start.
    assert outcomes[by_human].human_response_s == pytest.approx(120, abs=0.01)
    assert outcomes[still_open].bot_response_s is None and outcomes[still_open].started_at == START
