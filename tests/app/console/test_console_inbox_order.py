"""The inbox lists conversations needing a person first, then by latest activity, page after page, whatever filter."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from app.console.inbox import PAGE_SIZE, STATUS_ORDER, InboxFilter, inbox_page
from app.db import create_db_engine, migrate
from app.models import (
    Conversation,
    ConversationStatus,
    Customer,
    Message,
    MessageAuthor,
    MessageRole,
    StaffMember,
    StaffRole,
    utc_now,
)

CONVERSATIONS = 320
STATUSES = list(ConversationStatus)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'inbox.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    migrate(url)
    engine = create_db_engine(url)
    yield engine
    engine.dispose()


def _seed(engine: Engine) -> tuple[int, list[Conversation]]:
    """Conversations of every status, activity times that collide, some assigned, some without messages."""
    start = utc_now() - timedelta(days=2)
    with Session(engine, expire_on_commit=False) as session:
        member = StaffMember(email="ann@example.com", name="Ann", role=StaffRole.AGENT, password_hash="-")
        customer = Customer(name="Many")
        session.add_all([member, customer])
        session.flush()
        assert member.id is not None and customer.id is not None
        conversations = [
            Conversation(
                customer_id=customer.id,
                status=STATUSES[(number * 7) % len(STATUSES)],
                updated_at=start + timedelta(minutes=(number * 37) % 90),
                assigned_staff_id=member.id if number % 3 == 0 else None,
            )
            for number in range(CONVERSATIONS)
        ]
        session.add_all(conversations)
        session.flush()
        session.add_all(
            Message(conversation_id=c.id, role=MessageRole.USER, author=MessageAuthor.CUSTOMER, content=f"hi {i}")
            for i, c in enumerate(conversations)
            if i % 11 != 0
        )
        session.commit()
        listed = [c for i, c in enumerate(conversations) if i % 11 != 0]
        return member.id, listed


@pytest.mark.parametrize(
    "wanted",
    [
        InboxFilter(),
        InboxFilter(mine=True),
        InboxFilter(status=ConversationStatus.NEEDS_HUMAN),
        InboxFilter(status=ConversationStatus.CLOSED, mine=True),
    ],
    ids=["open", "mine", "needs-human", "closed-mine"],
)
def test_every_page_of_the_inbox_follows_status_rank_then_latest_activity(engine: Engine, wanted: InboxFilter) -> None:
    staff_id, listed = _seed(engine)
    expected = sorted(
        (
            c
            for c in listed
            if (c.status == wanted.status if wanted.status else c.status != ConversationStatus.CLOSED)
            and (not wanted.mine or c.assigned_staff_id == staff_id)
        ),
        key=lambda c: (STATUS_ORDER.index(c.status), -c.updated_at.timestamp(), -(c.id or 0)),
    )
    shown: list[str] = []
    number = 1
    while True:
        with Session(engine) as session:
            page = inbox_page(session, staff_id, InboxFilter(wanted.status, wanted.mine, number))
        shown += [row.public_id for row in page.rows]
        if not page.has_more:
            break
        assert len(page.rows) == PAGE_SIZE
        number += 1
    assert len(expected) > PAGE_SIZE or wanted.status is not None
    assert shown == [c.public_id for c in expected]
