"""The overview's outcome figures: how the conversations started in the last ``WINDOW_DAYS`` days turned out.

All figures come from one read of the window's conversations with their outcome rows (``conversations`` by
``created_at``, indexed, joined to ``conversation_outcomes``), aggregated here: the window of a desk with a large
history is a small part of it, and medians and per-day series are simpler and exact in Python.

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
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col

from app.models import Conversation
from app.models.outcomes import ConversationOutcome, HandoffReason, Resolution

WINDOW_DAYS = 30
SCORES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class OutcomeRow:
    """One conversation of the window, as the figures read it."""

    conversation_id: int
    started_at: datetime
    resolution: Resolution
    handoff_reason: HandoffReason | None
    handed_off_at: datetime | None
    first_bot_reply_at: datetime | None
    first_human_reply_at: datetime | None
    closed_at: datetime | None
    reopen_count: int
    csat_score: int | None

    @property
    def ever_closed(self) -> bool:
        return self.closed_at is not None or self.reopen_count > 0

    def bot_response_s(self) -> float | None:
        if self.first_bot_reply_at is None:
            return None
        return max(0.0, (self.first_bot_reply_at - self.started_at).total_seconds())

    def human_response_s(self) -> float | None:
        if self.first_human_reply_at is None:
            return None
        asked = self.handed_off_at if self.handed_off_at and self.handed_off_at <= self.first_human_reply_at else None
        return max(0.0, (self.first_human_reply_at - (asked or self.started_at)).total_seconds())


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


def _columns() -> list[Any]:
    outcome = ConversationOutcome
    return [
        col(Conversation.id),
        col(Conversation.created_at),
        col(outcome.resolution),
        col(outcome.handoff_reason),
        col(outcome.handed_off_at),
        col(outcome.first_bot_reply_at),
        col(outcome.first_human_reply_at),
        col(outcome.closed_at),
        col(outcome.reopen_count),
        col(outcome.csat_score),
    ]


def window_rows(session: Session, since: datetime) -> list[OutcomeRow]:
    """The conversations started since ``since``; one without an outcome row yet is open with nothing recorded."""
    statement = (
        sa.select(*_columns())
        .select_from(Conversation)
        .outerjoin(ConversationOutcome, col(ConversationOutcome.conversation_id) == col(Conversation.id))
        .where(col(Conversation.created_at) >= since)
        .order_by(col(Conversation.created_at))
    )
    rows = []
    for found in session.execute(statement):
        rows.append(
            OutcomeRow(
                conversation_id=found[0],
                started_at=found[1],
                resolution=found[2] or Resolution.OPEN,
                handoff_reason=found[3],
                handed_off_at=found[4],
                first_bot_reply_at=found[5],
                first_human_reply_at=found[6],
                closed_at=found[7],
                reopen_count=found[8] or 0,
                csat_score=found[9],
            )
        )
    return rows


def _median(values: Iterable[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def _days(rows: list[OutcomeRow], since: datetime, now: datetime) -> list[DayFigures]:
    started: Counter[date] = Counter(row.started_at.date() for row in rows)
    handed: Counter[date] = Counter(row.started_at.date() for row in rows if row.handoff_reason is not None)
    resolved: dict[date, Counter[Resolution]] = {}
    for row in rows:
        resolved.setdefault(row.started_at.date(), Counter())[row.resolution] += 1
    days, day = [], since.date()
    while day <= now.date():
        counts = resolved.get(day, Counter())
        days.append(DayFigures(day, started[day], {kind: counts[kind] for kind in Resolution}, handed[day]))
        day += timedelta(days=1)
    return days


def outcome_figures(rows: list[OutcomeRow], since: datetime, now: datetime) -> OutcomeFigures:
    resolutions = Counter(row.resolution for row in rows)
    handoffs = Counter(row.handoff_reason for row in rows if row.handoff_reason is not None)
    scores = Counter(row.csat_score for row in rows if row.csat_score in SCORES)
    return OutcomeFigures(
        since=since,
        started=len(rows),
        resolutions={kind: resolutions[kind] for kind in Resolution},
        handoffs={reason: handoffs[reason] for reason in HandoffReason},
        ever_closed=sum(1 for row in rows if row.ever_closed),
        reopened=sum(1 for row in rows if row.reopen_count > 0),
        csat={score: scores[score] for score in SCORES},
        median_bot_response_s=_median(row.bot_response_s() for row in rows),
        median_human_response_s=_median(row.human_response_s() for row in rows),
        days=_days(rows, since, now),
    )


def load_outcome_figures(session: Session, *, now: datetime | None = None) -> OutcomeFigures:
    moment = now or datetime.now(UTC)
    since = window_start(moment)
    return outcome_figures(window_rows(session, since), since, moment)
