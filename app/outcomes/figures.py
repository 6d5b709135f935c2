"""The overview's outcome figures: how the conversations started in the last ``WINDOW_DAYS`` days turned out.

The window's conversations (``conversations`` by ``created_at``, indexed) joined to their outcome rows are
aggregated by the database: counts grouped by day and resolution, and by reason, score and reopen, and each median
as the middle one or two durations in order. Four statements whatever the window holds; fetching a row per
conversation to count in Python cost 14 µs a row (timestamp parsing), half a second for a busy month.

- Bot resolution rate: of the window's closed conversations, the share resolved by the bot (``bot``); likewise
  ``human`` and ``abandoned``.
- Handoff rate, overall and by reason category: the share of the window's conversations handed to a person.
- Reopen rate: of the conversations that were ever closed, the share reopened at least once.
- CSAT: the average score and the count of each score from 1 to 5.
- Median first response: of the bot, from the conversation's start to its first bot reply; of people, from the
  handoff (or the start, when a person replied without one) to the first staff reply.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col

from app.models import Conversation
from app.models.outcomes import ConversationOutcome, HandoffReason, Resolution
from app.outcomes.sql_time import seconds_between, utc_day

WINDOW_DAYS = 30
SCORES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class DayFigures:
    day: date
    started: int
    resolutions: dict[Resolution, int]
    handed_off: int


@dataclass
class OutcomeFigures:
    since: datetime
    started: int = 0
    resolutions: dict[Resolution, int] = field(default_factory=dict)
    handoffs: dict[HandoffReason, int] = field(default_factory=dict)
    ever_closed: int = 0
    reopened: int = 0
    csat: dict[int, int] = field(default_factory=dict)
    median_bot_response_s: float | None = None
    median_human_response_s: float | None = None
    days: list[DayFigures] = field(default_factory=list)

    @property
    def closed(self) -> int:
        return sum(self.resolutions.get(kind, 0) for kind in (Resolution.BOT, Resolution.HUMAN, Resolution.ABANDONED))

    def resolution_rate(self, kind: Resolution) -> float | None:
        return self.resolutions.get(kind, 0) / self.closed if self.closed else None

    @property
    def handed_off(self) -> int:
        return sum(self.handoffs.values())

    @property
    def handoff_rate(self) -> float | None:
        return self.handed_off / self.started if self.started else None

    @property
    def reopen_rate(self) -> float | None:
        return self.reopened / self.ever_closed if self.ever_closed else None

    @property
    def rated(self) -> int:
        return sum(self.csat.values())

    @property
    def csat_average(self) -> float | None:
        return sum(score * count for score, count in self.csat.items()) / self.rated if self.rated else None


def window_start(now: datetime, days: int = WINDOW_DAYS) -> datetime:
    return datetime.combine(now.date() - timedelta(days=days - 1), time.min, tzinfo=UTC)


def _window(since: datetime, *columns: Any) -> sa.Select[Any]:
    """``columns`` over the conversations started since ``since``; one without an outcome row yet is open."""
    return (
        sa.select(*columns)
        .select_from(Conversation)
        .outerjoin(ConversationOutcome, col(ConversationOutcome.conversation_id) == col(Conversation.id))
        .where(col(Conversation.created_at) >= since)
    )


def _day(value: date | str) -> date:
    """SQLite's ``date()`` answers text, PostgreSQL's a date."""
    return value if isinstance(value, date) else date.fromisoformat(value)


def _bot_response(dialect: str) -> Any:
    reply = col(ConversationOutcome.first_bot_reply_at)
    return reply, seconds_between(dialect, reply, col(Conversation.created_at))


def _human_response(dialect: str) -> Any:
    """From the handoff, or from the start when a person replied without one (or before it)."""
    reply, handed = col(ConversationOutcome.first_human_reply_at), col(ConversationOutcome.handed_off_at)
    asked = sa.case((handed <= reply, handed), else_=col(Conversation.created_at))
    return reply, seconds_between(dialect, reply, asked)


def _median(session: Session, since: datetime, response: tuple[Any, Any], known: int) -> float | None:
    """The middle duration (the mean of the middle two for an even count); ``known`` durations are not null."""
    if not known:
        return None
    reply, seconds = response
    middle = (
        _window(since, seconds.label("seconds")).where(reply.is_not(None)).order_by("seconds").limit(2)
        .offset((known - 1) // 2)
    )  # fmt: skip
    values = [float(value) for value in session.execute(middle).scalars()]
    median = values[0] if known % 2 else statistics.fmean(values)
    return max(0.0, median)  # a clock step back must not show a negative time


def _by_day(session: Session, since: datetime) -> list[tuple[date, Resolution, bool, int]]:
    outcome = ConversationOutcome
    day = utc_day(session.get_bind().dialect.name, col(Conversation.created_at))
    resolution = sa.func.coalesce(col(outcome.resolution), Resolution.OPEN.value)
    handed = col(outcome.handoff_reason).is_not(None)
    statement = _window(since, day, resolution, handed, sa.func.count()).group_by(day, resolution, handed)
    return [(_day(found[0]), Resolution(found[1]), bool(found[2]), found[3]) for found in session.execute(statement)]


def _add_by_day(figures: OutcomeFigures, rows: list[tuple[date, Resolution, bool, int]], now: datetime) -> None:
    started: Counter[date] = Counter()
    handed: Counter[date] = Counter()
    resolved: dict[date, Counter[Resolution]] = {}
    for day, resolution, handed_off, count in rows:
        started[day] += count
        handed[day] += count if handed_off else 0
        resolved.setdefault(day, Counter())[resolution] += count
    totals = sum(resolved.values(), Counter[Resolution]())
    figures.started = sum(started.values())
    figures.resolutions = {kind: totals[kind] for kind in Resolution}
    day = figures.since.date()
    while day <= now.date():
        counts = resolved.get(day, Counter())
        figures.days.append(DayFigures(day, started[day], {kind: counts[kind] for kind in Resolution}, handed[day]))
        day += timedelta(days=1)


def _add_totals(session: Session, figures: OutcomeFigures) -> tuple[int, int]:
    """Reasons, scores and reopens; returns how many bot and human first replies are known."""
    outcome = ConversationOutcome
    reopened = sa.func.coalesce(col(outcome.reopen_count), 0) > 0
    ever_closed = sa.or_(col(outcome.closed_at).is_not(None), reopened)
    keys = (col(outcome.handoff_reason), col(outcome.csat_score), reopened, ever_closed)
    counts = (sa.func.count(), sa.func.count(col(outcome.first_bot_reply_at)),
              sa.func.count(col(outcome.first_human_reply_at)))  # fmt: skip
    handoffs: Counter[HandoffReason] = Counter()
    scores: Counter[int] = Counter()
    bot_known = human_known = 0
    for reason, score, was_reopened, was_closed, count, bots, humans in session.execute(
        _window(figures.since, *keys, *counts).group_by(*keys)
    ):
        if reason is not None:
            handoffs[HandoffReason(reason)] += count
        if score in SCORES:
            scores[score] += count
        figures.reopened += count if was_reopened else 0
        figures.ever_closed += count if was_closed else 0
        bot_known, human_known = bot_known + bots, human_known + humans
    figures.handoffs = {reason: handoffs[reason] for reason in HandoffReason}
    figures.csat = {score: scores[score] for score in SCORES}
    return bot_known, human_known


def load_outcome_figures(session: Session, *, now: datetime | None = None) -> OutcomeFigures:
    moment = now or datetime.now(UTC)
    figures = OutcomeFigures(since=window_start(moment))
    _add_by_day(figures, _by_day(session, figures.since), moment)
    bot_known, human_known = _add_totals(session, figures)
    dialect = session.get_bind().dialect.name
    figures.median_bot_response_s = _median(session, figures.since, _bot_response(dialect), bot_known)
    figures.median_human_response_s = _median(session, figures.since, _human_response(dialect), human_known)
    return figures
