"""The overview's outcome figures: how the conversations started in the last ``WINDOW_DAYS`` days turned out.

The database counts them, in five statements whatever the window holds: the conversations started per day
(``ix_conversations_created_at``), and over the window's outcome rows (a range of ``ix_conversation_outcomes_window``,
which holds every column counted) the rows per day and resolution, per reason, score and reopen, and each median as
the middle one or two delays in order. Each row carries its conversation's start and its delays (written with the
events), so nothing is joined or computed per conversation. Fetching a row per conversation to count in Python cost
14 µs a row (timestamp parsing), half a second for a busy month; a join with date arithmetic, 30 ms for 8,000.

- Bot resolution rate: of the window's closed conversations, the share resolved by the bot (``bot``); likewise
  ``human`` and ``abandoned``.
- Handoff rate, overall and by reason category: the share of the window's conversations handed to a person.
- Reopen rate: of the conversations that were ever closed, the share reopened at least once.
- CSAT: the average score and the count of each score from 1 to 5.
- Median first response: of the bot, from the conversation's start to its first bot reply; of people, from the
  handoff (or the start, when a person replied without one before) to the first staff reply.
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
from app.outcomes.sql_time import utc_day

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


def _recorded(since: datetime, *columns: Any) -> sa.Select[Any]:
    """``columns`` over the outcome rows of the conversations started since ``since``: a range of the window index."""
    return sa.select(*columns).where(col(ConversationOutcome.started_at) >= since)


def _day(value: date | str) -> date:
    """SQLite's ``date()`` answers text, PostgreSQL's a date."""
    return value if isinstance(value, date) else date.fromisoformat(value)


def _started_by_day(session: Session, since: datetime) -> Counter[date]:
    """Every conversation started, with an outcome row or not yet (``ix_conversations_created_at``)."""
    day = utc_day(session.get_bind().dialect.name, col(Conversation.created_at))
    statement = sa.select(day, sa.func.count()).where(col(Conversation.created_at) >= since).group_by(day)
    return Counter({_day(found[0]): found[1] for found in session.execute(statement)})


def _by_day(session: Session, since: datetime) -> list[tuple[date, Resolution, bool, int]]:
    outcome = ConversationOutcome
    day = utc_day(session.get_bind().dialect.name, col(outcome.started_at))
    resolution, handed = col(outcome.resolution), col(outcome.handoff_reason).is_not(None)
    statement = _recorded(since, day, resolution, handed, sa.func.count()).group_by(day, resolution, handed)
    return [(_day(found[0]), Resolution(found[1]), bool(found[2]), found[3]) for found in session.execute(statement)]


def _add_by_day(figures: OutcomeFigures, session: Session, now: datetime) -> None:
    """Per day and in total; a conversation without an outcome row yet is open."""
    started = _started_by_day(session, figures.since)
    handed: Counter[date] = Counter()
    resolved: dict[date, Counter[Resolution]] = {}
    for day, resolution, handed_off, count in _by_day(session, figures.since):
        handed[day] += count if handed_off else 0
        resolved.setdefault(day, Counter())[resolution] += count
    for day, count in started.items():
        counts = resolved.setdefault(day, Counter())
        counts[Resolution.OPEN] += max(0, count - counts.total())
    totals = sum(resolved.values(), Counter[Resolution]())
    figures.started = started.total()
    figures.resolutions = {kind: totals[kind] for kind in Resolution}
    day = figures.since.date()
    while day <= now.date():
        counts = resolved.get(day, Counter())
        figures.days.append(DayFigures(day, started[day], {kind: counts[kind] for kind in Resolution}, handed[day]))
        day += timedelta(days=1)


def _add_totals(session: Session, figures: OutcomeFigures) -> tuple[int, int]:
    """Reasons, scores and reopens; returns how many bot and human first replies are known."""
    outcome = ConversationOutcome
    reopened = col(outcome.reopen_count) > 0
    ever_closed = sa.or_(col(outcome.closed_at).is_not(None), reopened)
    keys = (col(outcome.handoff_reason), col(outcome.csat_score), reopened, ever_closed)
    counts = (sa.func.count(), sa.func.count(col(outcome.bot_response_s)),
              sa.func.count(col(outcome.human_response_s)))  # fmt: skip
    handoffs: Counter[HandoffReason] = Counter()
    scores: Counter[int] = Counter()
    bot_known = human_known = 0
    for reason, score, was_reopened, was_closed, count, bots, humans in session.execute(
        _recorded(figures.since, *keys, *counts).group_by(*keys)
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


def _median(session: Session, since: datetime, delay: Any, known: int) -> float | None:
    """The middle delay (the mean of the middle two for an even count) of the ``known`` ones that are not null."""
    if not known:
        return None
    middle = _recorded(since, delay).where(delay.is_not(None)).order_by(delay).limit(2).offset((known - 1) // 2)
    values = [float(value) for value in session.execute(middle).scalars()]
    if not values:  # on PostgreSQL each statement reads anew: an erasure in between may have removed them
        return None
    median = values[0] if known % 2 else statistics.fmean(values)
    return max(0.0, median)  # a clock step back must not show a negative time


def load_outcome_figures(session: Session, *, now: datetime | None = None) -> OutcomeFigures:
    moment = now or datetime.now(UTC)
    figures = OutcomeFigures(since=window_start(moment))
    _add_by_day(figures, session, moment)
    bot_known, human_known = _add_totals(session, figures)
    outcome = ConversationOutcome
    figures.median_bot_response_s = _median(session, figures.since, col(outcome.bot_response_s), bot_known)
    figures.median_human_response_s = _median(session, figures.since, col(outcome.human_response_s), human_known)
    return figures
