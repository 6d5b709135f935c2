"""Quick backfill after a summary-model outage: the ranges the deterministic fallback compacted are summarized again
within minutes of a summary model answering, instead of waiting for the nightly sync.

A compaction made while both summary models were down (``Compaction.fallback_used``) yields no key decisions. Each
tick (``Backfill.tick``) finds the conversations that have such a compaction reaching beyond their sync watermark,
at most ``MAX_CONVERSATIONS_PER_TICK``, and runs the conclusion sync's own ``ConversationSyncer`` on each, up to the
last message the fallback compacted (later turns are still in the live context, and the next compaction summarizes
them with a model, so no turn is summarized twice), so what counts as covered, the watermark and exactly-once stay
the sync's; then it delivers the outbox. With no such
conversation a tick makes no LLM call. While the models are still down the first conversation comes back ``failed``
(the syncer will not keep fallback notes), and the tick stops there: the rest wait for the next tick. Conversations
are taken in turn (a tick starts after the last one this process tried), so one that fails for a reason of its own
holds up no other.

Where it runs: on SQLite, ``BackfillLoop`` in the server process, every ``MEMDESK_BACKFILL_INTERVAL_S``; on
PostgreSQL, the job queue's periodic ``memdesk.backfill_conclusions`` (``app.jobs.queue``), one job per tick across
the servers, with a lock so two ticks never overlap. A nightly run that meets the backfill on one conversation keeps
only one of the two summaries (``app.sync.conversation``).
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field

from sqlalchemy import Engine, func
from sqlmodel import Session, col, select

from app.infra.worker_pool import in_daemon_thread
from app.llm import LLMGateway
from app.models import Compaction, Conversation
from app.settings import Settings
from app.sync.conversation import ConversationSync, ConversationSyncer, EngineFactory, Outcome
from app.sync.runner import Deliver
from app.turns.context_engines import default_compressor
from memory.outbox import ConclusionOutbox

logger = logging.getLogger(__name__)

# Each conversation costs a summary call of a few seconds; more would wait for the next tick, two minutes later.
MAX_CONVERSATIONS_PER_TICK = 10
# The longest cron step the job queue can express in minutes (``*/59``); longer intervals run every hour.
MAX_CRON_STEP_MINUTES = 59


def conversations_to_backfill(session: Session, limit: int, *, after: int = 0) -> list[tuple[int, int]]:
    """Up to ``limit`` conversations with a fallback compaction past their watermark, each as its internal id and the
    last message id the fallback compacted, in id order from the first after ``after``, then around from the
    start."""
    statement = (
        select(Conversation.id, func.max(Compaction.last_message_id))
        .join(Compaction, col(Compaction.conversation_id) == col(Conversation.id))
        .where(
            col(Compaction.fallback_used).is_(True),
            col(Compaction.last_message_id) > func.coalesce(col(Conversation.synced_through_message_id), 0),
        )
        .group_by(col(Conversation.id))
        .order_by(col(Conversation.id))
    )
    found = list(session.exec(statement.where(col(Conversation.id) > after).limit(limit)).all())
    if len(found) < limit:
        found += session.exec(statement.where(col(Conversation.id) <= after).limit(limit - len(found))).all()
    return [(key, through) for key, through in found if key is not None and through is not None]


@dataclass
class BackfillReport:
    """What one tick did."""

    conversations: list[ConversationSync] = field(default_factory=list)
    delivered: int = 0

    @property
    def queued(self) -> int:
        return sum(item.conclusions_queued for item in self.conversations)


class Backfill:
    """One tick at a time of the quick backfill; see the module docstring."""

    def __init__(
        self,
        db: Engine,
        engine_factory: EngineFactory,
        *,
        deliver: Deliver | None = None,
        limit: int = MAX_CONVERSATIONS_PER_TICK,
        conversation_deadline_s: float | None = None,
    ) -> None:
        self.db = db
        self.syncer = ConversationSyncer(db, engine_factory, deadline_s=conversation_deadline_s)
        self.deliver = deliver
        self.limit = limit
        # The last conversation tried: the next tick starts after it, so one that always fails holds up no other.
        self.cursor = 0

    def tick(self) -> BackfillReport:
        report = BackfillReport()
        with Session(self.db) as session:
            keys = conversations_to_backfill(session, self.limit, after=self.cursor)
            session.commit()
        for key, through in keys:
            self.cursor = key
            outcome = self.syncer.sync(key, through_message_id=through)
            report.conversations.append(outcome)
            if outcome.outcome == Outcome.FAILED:
                break  # most likely the summary models are still down: spare them the rest until the next tick
        if report.queued:
            report.delivered = self._deliver_all()
        return report

    def _deliver_all(self) -> int:
        delivered = 0
        while self.deliver is not None:
            report = self.deliver()
            delivered += report.delivered
            if not report.delivered:
                break
        return delivered


def log_tick(report: BackfillReport) -> None:
    if not report.conversations:
        return
    failed = sum(item.outcome == Outcome.FAILED for item in report.conversations)
    logger.info(
        "Conclusion backfill: %s conversations, %s failed; %s conclusions queued, %s delivered",
        len(report.conversations),
        failed,
        report.queued,
        report.delivered,
    )


def cron_every(interval_s: float) -> str:
    """The job queue's cron line for a tick about every ``interval_s`` (whole minutes, at least one)."""
    minutes = max(1, math.ceil(interval_s / 60))
    return "0 * * * *" if minutes > MAX_CRON_STEP_MINUTES else f"*/{minutes} * * * *"


class BackfillLoop:
    """Ticks of ``backfill`` every ``interval_s`` in this process (a SQLite server), each in a daemon thread."""

    def __init__(self, backfill: Backfill, *, interval_s: float) -> None:
        self.backfill = backfill
        self.interval_s = interval_s

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                log_tick(await in_daemon_thread(self.backfill.tick, name="conclusion-backfill"))
            except Exception:  # the database went away, say: the next tick tries again
                logger.exception("Conclusion backfill tick failed")


def app_backfill(db: Engine, gateway: LLMGateway, settings: Settings, *, outbox: ConclusionOutbox | None) -> Backfill:
    """The backfill as the server runs it: the compressor every conversation gets, delivery through the outbox."""
    return Backfill(
        db,
        lambda: default_compressor(gateway, settings),
        deliver=outbox.deliver_due if outbox is not None else None,
        conversation_deadline_s=settings.sync_conversation_deadline_s,
    )
