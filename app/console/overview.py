"""The dashboard's figures (``/console/overview``), from persisted data so that they survive restarts.

- Conversations started today and in the last 7 days and the share handed to a person, taken from the outcome
  figures' days (``app.outcomes.figures``), so both parts of the page count a handoff the same way.
- Compactions and the tokens they saved (tokens before minus after).
- LLM tokens and cost by model and purpose: chat turns (``messages.prompt_tokens``/``completion_tokens``, priced as
  the configured chat model, since a message does not record its model), compaction summaries (``compactions``)
  and handoff summaries (``handoff_summaries``), with what the summaries would have cost on the chat model.
- The conclusions outbox: rows per status and the failed rows, which a supervisor can send again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta

from sqlalchemy import case, func, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from app.llm import LLMGateway
from app.models import (
    Compaction,
    Conclusion,
    HandoffSummary,
    Message,
    OutboxStatus,
)
from app.outcomes.figures import OutcomeFigures
from compression.types import Usage

WEEK_DAYS = 7
FAILED_ROWS_SHOWN = 50


@dataclass(frozen=True)
class PeriodFigures:
    label: str
    conversations: int
    handed_off: int
    compactions: int
    tokens_saved: int

    @property
    def handoff_rate(self) -> float | None:
        return self.handed_off / self.conversations if self.conversations else None


@dataclass(frozen=True)
class UsageRow:
    model: str
    purpose: str
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    cost_on_chat_model_usd: float | None = None
    # Requests whose endpoint reported no usage: their tokens are memdesk's estimate from the texts.
    estimated: int = 0


@dataclass(frozen=True)
class FailedConclusion:
    id: int
    kind: str
    text: str
    attempts: int
    last_error: str | None


@dataclass
class Overview:
    periods: list[PeriodFigures]
    usage: list[UsageRow] = field(default_factory=list)
    outbox: dict[str, int] = field(default_factory=dict)
    failed: list[FailedConclusion] = field(default_factory=list)


def _period_start(now: datetime, days: int) -> datetime:
    return datetime.combine(now.date() - timedelta(days=days - 1), time.min, tzinfo=UTC)


def period_figures(session: Session, label: str, since: datetime, outcomes: OutcomeFigures) -> PeriodFigures:
    days = [day for day in outcomes.days if day.day >= since.date()]
    compacted = session.execute(
        sa_select(func.count(), func.coalesce(func.sum(Compaction.tokens_before - Compaction.tokens_after), 0)).where(
            col(Compaction.created_at) >= since
        )
    ).one()
    return PeriodFigures(
        label=label,
        conversations=sum(day.started for day in days),
        handed_off=sum(day.handed_off for day in days),
        compactions=int(compacted[0]),
        tokens_saved=int(compacted[1]),
    )


def usage_rows(session: Session, gateway: LLMGateway) -> list[UsageRow]:
    ledger, chat_model = gateway.ledger, gateway.chat_model
    chat = session.execute(
        sa_select(
            func.count(),
            func.sum(Message.prompt_tokens),
            func.sum(Message.completion_tokens),
            func.sum(case((col(Message.usage_estimated), 1), else_=0)),
        ).where(col(Message.prompt_tokens).is_not(None))
    ).one()
    rows = []
    if chat[0]:
        usage = Usage(int(chat[1] or 0), int(chat[2] or 0))
        rows.append(UsageRow(chat_model, "chat", int(chat[0]), usage.prompt_tokens, usage.completion_tokens,
                             ledger.cost(chat_model, usage), estimated=int(chat[3] or 0)))  # fmt: skip
    for table, model_column, prompt, completion, cost, purpose in (
        (Compaction, Compaction.summary_model, Compaction.summary_prompt_tokens,
         Compaction.summary_completion_tokens, Compaction.cost_usd, "summary (compaction)"),
        (HandoffSummary, HandoffSummary.model, HandoffSummary.prompt_tokens, HandoffSummary.completion_tokens,
         HandoffSummary.cost_usd, "summary (handoff)"),
    ):  # fmt: skip
        estimated = func.sum(case((col(table.usage_estimated), 1), else_=0))
        grouped = session.execute(
            sa_select(
                col(model_column), func.count(), func.sum(prompt), func.sum(completion), func.sum(cost), estimated
            )
            .where(col(model_column).is_not(None))
            .group_by(model_column)
        ).all()
        for model, count, prompt_sum, completion_sum, cost_sum, estimated_count in grouped:
            usage = Usage(int(prompt_sum or 0), int(completion_sum or 0))
            rows.append(UsageRow(model, purpose, int(count), usage.prompt_tokens, usage.completion_tokens,
                                 cost_sum, ledger.cost(chat_model, usage), int(estimated_count or 0)))  # fmt: skip
    return rows


def outbox_state(session: Session) -> tuple[dict[str, int], list[FailedConclusion]]:
    counts = {status.value: 0 for status in OutboxStatus}
    for status, count in session.execute(
        sa_select(col(Conclusion.status), func.count()).group_by(col(Conclusion.status))
    ).all():
        counts[str(status)] = int(count)
    failed = session.execute(
        sa_select(
            col(Conclusion.id),
            col(Conclusion.kind),
            col(Conclusion.text),
            col(Conclusion.attempts),
            col(Conclusion.last_error),
        )
        .where(col(Conclusion.status) == OutboxStatus.FAILED)
        .order_by(col(Conclusion.id).desc())
        .limit(FAILED_ROWS_SHOWN)
    ).all()
    return counts, [FailedConclusion(r.id, str(r.kind), r.text, r.attempts, r.last_error) for r in failed]


def load_overview(
    session: Session, gateway: LLMGateway, outcomes: OutcomeFigures, *, with_usage: bool, now: datetime | None = None
) -> Overview:
    """The page's figures; ``outcomes`` are the last 30 days' (``load_outcome_figures``), which hold today's and the
    week's conversations too."""
    moment = now or datetime.now(UTC)
    periods = [
        period_figures(session, "Today", _period_start(moment, 1), outcomes),
        period_figures(session, f"Last {WEEK_DAYS} days", _period_start(moment, WEEK_DAYS), outcomes),
    ]
    overview = Overview(periods)
    if with_usage:
        overview.usage = usage_rows(session, gateway)
        overview.outbox, overview.failed = outbox_state(session)
    session.commit()
    return overview


def retry_failed(session: Session, conclusion_ids: list[int] | None = None) -> int:
    """Send failed outbox rows again (all of them, or these ones): back to pending, due now. Returns how many."""
    conditions = [col(Conclusion.status) == OutboxStatus.FAILED]
    if conclusion_ids is not None:
        conditions.append(col(Conclusion.id).in_(conclusion_ids))
    result = session.execute(
        update(Conclusion).where(*conditions).values(status=OutboxStatus.PENDING, next_attempt_at=None, attempts=0)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
