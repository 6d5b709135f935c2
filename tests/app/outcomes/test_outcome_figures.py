"""The overview's outcome figures, counted by the database over the window's conversations (on SQLite and
PostgreSQL) from outcomes recorded as the app records them, and the chart drawn from them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from app.db import create_db_engine, migrate
from app.models import Conversation, ConversationStatus, Customer, MessageAuthor
from app.models.outcomes import HandoffReason, Resolution
from app.outcomes.chart import CHART_HEIGHT, outcome_chart
from app.outcomes.export import spreadsheet_safe
from app.outcomes.figures import OutcomeFigures, load_outcome_figures
from app.outcomes.recording import record_close, record_first_reply, record_handoff, record_rating, record_reopen

NOW = datetime(2026, 12, 2, 15, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = (
        f"sqlite:///{tmp_path / 'figures.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    )
    migrate(url)
    engine = create_db_engine(url)
    yield engine
    engine.dispose()


def _conversation(engine: Engine, days_ago: int, *events: Callable[[Session, int, datetime], object]) -> None:
    """A conversation started ``days_ago`` days before ``NOW`` (an hour earlier in the day), then ``events``
    recorded in order as the app records them, each given the conversation and its start."""
    started = NOW - timedelta(days=days_ago, hours=1)
    with Session(engine) as session:
        customer = Customer(name="Ada")
        session.add(customer)
        session.flush()
        conversation = Conversation(customer_id=customer.id, created_at=started, updated_at=started)
        session.add(conversation)
        session.flush()
        assert conversation.id is not None
        for event in events:
            event(session, conversation.id, started)
        session.commit()


def bot_reply(after_s: float) -> Callable[[Session, int, datetime], object]:
    return lambda s, key, start: record_first_reply(s, key, MessageAuthor.BOT, start + timedelta(seconds=after_s))


def staff_reply(after_min: float) -> Callable[[Session, int, datetime], object]:
    return lambda s, key, start: record_first_reply(s, key, MessageAuthor.STAFF, start + timedelta(minutes=after_min))


def handoff(reason: HandoffReason, after_min: float = 1) -> Callable[[Session, int, datetime], object]:
    return lambda s, key, start: record_handoff(s, key, reason, at=start + timedelta(minutes=after_min))


def closed(had_it: ConversationStatus = ConversationStatus.BOT) -> Callable[[Session, int, datetime], object]:
    return lambda s, key, start: record_close(s, key, had_it, at=start + timedelta(hours=1))


def rated(score: int) -> Callable[[Session, int, datetime], object]:
    return lambda s, key, start: record_rating(s, key, score, None, at=start + timedelta(hours=1))


def reopened(s: Session, key: int, start: datetime) -> None:
    record_reopen(s, key)


def _figures(engine: Engine) -> OutcomeFigures:
    with Session(engine) as session:
        return load_outcome_figures(session, now=NOW)


def test_rates_are_shares_of_closed_started_or_ever_closed_conversations(engine: Engine) -> None:
    _conversation(engine, 1, bot_reply(2), closed(), rated(5))
    _conversation(engine, 1, bot_reply(4), closed(), reopened, closed(), rated(4))
    _conversation(engine, 0, handoff(HandoffReason.POLICY, 10), staff_reply(20), closed(ConversationStatus.HUMAN),
                  rated(2))  # fmt: skip
    _conversation(engine, 0, handoff(HandoffReason.CUSTOMER_REQUEST), closed(ConversationStatus.NEEDS_HUMAN))
    _conversation(engine, 0, handoff(HandoffReason.CUSTOMER_REQUEST))  # still open
    _conversation(engine, 0)  # nothing recorded yet: open
    _conversation(engine, 40, bot_reply(1), closed(), rated(1))  # before the window
    figures = _figures(engine)
    assert (figures.started, figures.closed) == (6, 4)
    assert figures.resolutions[Resolution.OPEN] == 2
    assert figures.resolution_rate(Resolution.BOT) == 0.5
    assert figures.resolution_rate(Resolution.ABANDONED) == 0.25
    assert figures.handoff_rate == 0.5
    assert figures.handoffs[HandoffReason.CUSTOMER_REQUEST] == 2 and figures.handoffs[HandoffReason.POLICY] == 1
    assert figures.reopen_rate == 0.25  # one of the four that were ever closed
    assert figures.csat == {1: 0, 2: 1, 3: 0, 4: 1, 5: 1} and figures.csat_average == 11 / 3
    assert figures.median_bot_response_s == pytest.approx(3.0, abs=0.01)  # the mean of the middle two
    assert figures.median_human_response_s == pytest.approx(600.0, abs=0.01)  # from the handoff, not the start


def test_a_person_who_replied_before_any_handoff_is_timed_from_the_start(engine: Engine) -> None:
    for minutes in (5, 20, 90):
        _conversation(engine, 0, staff_reply(minutes), handoff(HandoffReason.OTHER, minutes + 1))
    assert _figures(engine).median_human_response_s == pytest.approx(20 * 60, abs=0.01)


def test_a_later_reply_does_not_replace_the_first_replys_delay(engine: Engine) -> None:
    _conversation(engine, 0, bot_reply(7), bot_reply(70), handoff(HandoffReason.OTHER, 2), staff_reply(4),
                  staff_reply(40))  # fmt: skip
    figures = _figures(engine)
    assert figures.median_bot_response_s == pytest.approx(7.0, abs=0.01)
    assert figures.median_human_response_s == pytest.approx(120.0, abs=0.01)


def test_an_empty_window_has_no_rates_and_a_flat_chart(engine: Engine) -> None:
    figures = _figures(engine)
    assert figures.resolution_rate(Resolution.BOT) is None and figures.handoff_rate is None
    assert figures.csat_average is None and figures.median_bot_response_s is None
    assert len(figures.days) == 30 and all(day.started == 0 for day in figures.days)
    chart = outcome_chart(figures.days)
    assert chart.peak == 0 and all(bar.segments == [] for bar in chart.bars)


def test_the_chart_stacks_each_days_resolutions_to_its_share_of_the_busiest_day(engine: Engine) -> None:
    _conversation(engine, 2, bot_reply(1), closed())
    _conversation(engine, 2, bot_reply(1), closed())
    _conversation(engine, 2)
    _conversation(engine, 2, staff_reply(3), closed(ConversationStatus.HUMAN))
    _conversation(engine, 0, closed(ConversationStatus.NEEDS_HUMAN))
    chart = outcome_chart(_figures(engine).days)
    busiest, today = chart.bars[-3], chart.bars[-1]
    assert chart.peak == 4
    assert [(s.resolution, s.count, s.height) for s in busiest.segments] == [
        (Resolution.BOT, 2, CHART_HEIGHT / 2), (Resolution.HUMAN, 1, CHART_HEIGHT / 4),
        (Resolution.OPEN, 1, CHART_HEIGHT / 4),
    ]  # fmt: skip
    assert busiest.segments[-1].y == 0 and busiest.segments[0].y == CHART_HEIGHT / 2
    assert [(s.resolution, s.height) for s in today.segments] == [(Resolution.ABANDONED, CHART_HEIGHT / 4)]
    assert "1 abandoned" in today.label


def test_a_comment_that_a_spreadsheet_would_run_is_kept_as_text() -> None:
    assert spreadsheet_safe('=HYPERLINK("http://evil","x")') == '\'=HYPERLINK("http://evil","x")'
    assert spreadsheet_safe("-1+2") == "'-1+2" and spreadsheet_safe("@SUM(A1)") == "'@SUM(A1)"
    assert spreadsheet_safe("Great, thanks") == "Great, thanks" and spreadsheet_safe(None) == ""
