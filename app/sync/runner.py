"""One run of the conclusion sync: pick the conversations that need it, sync them in parallel, deliver, record.

1. Pick the conversations whose customer or a staff member wrote after their watermark and that are closed or idle for
   ``MEMDESK_SYNC_IDLE_MINUTES`` (``select_conversations``).
2. Sync each (``app.sync.conversation``) on up to ``MEMDESK_SYNC_CONCURRENCY`` threads (one on the embedded model);
   the summary calls are the slow part. The gateway retries 429 and 5xx with backoff; a model still busy after
   that slows the whole run down and its conversation is tried again (``app.sync.pace``). Each conversation has
   its deadline (``MEMDESK_SYNC_CONVERSATION_DEADLINE_S``). A failed conversation keeps its watermark and is
   retried next run.
3. Deliver the outbox (``deliver``), after giving failed rows whose error may pass another chance; then count what
   the new memories superseded and mark promises past their grace period expired (``app.sync.upkeep``).
4. The ``SyncRun`` row, written at the start, gets its counts, tokens and cost by model, and errors at the end.

Only one run at a time (``app.sync.lock``). A run killed at any point leaves its record ``running`` (marked
``interrupted`` by the next) and every conversation either synced (watermark and outbox rows committed together) or
not, so the next run resumes with no duplicate and nothing skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Engine, and_, func, or_, update
from sqlmodel import Session, col, select

from app.llm import LLMGateway, UsageLedger
from app.models import (
    Conclusion,
    Conversation,
    ConversationStatus,
    Message,
    MessageAuthor,
    MessageRole,
    OutboxStatus,
    SyncRun,
)
from app.models.base import utc_now
from app.models.sync import SyncRunStatus
from app.settings import SYNC_CONVERSATION_DEADLINE_S, Settings
from app.sync.conversation import ConversationSync, ConversationSyncer, EngineFactory, Outcome
from app.sync.pace import SyncPace
from app.sync.upkeep import MemoryUpkeep, UpkeepReport, run_upkeep
from app.turns.context_engines import default_compressor
from memory.outbox import ConclusionOutbox, DeliveryReport
from memory.store import CustomerMemory

MAX_ERRORS = 50
# Errors of outbox rows that another attempt will not fix; every other failed row is retried by the sync.
PERMANENT_ERRORS = ("InvalidCustomerIdError", "MemoryNotFoundError")

Deliver = Callable[[], DeliveryReport]
Progress = Callable[[ConversationSync], None]


@dataclass(frozen=True)
class SyncOptions:
    idle_minutes: int
    concurrency: int
    dry_run: bool = False
    limit: int | None = None
    conversation: str | None = None  # a public id: sync just this one, idle or not


@dataclass
class SyncReport:
    """What a run did; ``record`` is its row (None for a dry run, which writes nothing)."""

    conversations: list[ConversationSync] = field(default_factory=list)
    delivered: int = 0
    upkeep: UpkeepReport = field(default_factory=UpkeepReport)
    record: SyncRun | None = None

    def count(self, outcome: Outcome) -> int:
        return sum(item.outcome == outcome for item in self.conversations)


def select_conversations(session: Session, options: SyncOptions, now: datetime) -> list[int]:
    """Internal ids of the conversations to sync, oldest activity first: those where the customer or a staff member
    wrote after the watermark (a staff member's promise often comes after the customer's last word)."""
    last_written = (
        select(Message.conversation_id, func.max(Message.id).label("last_id"))
        .where(
            or_(
                col(Message.role) == MessageRole.USER,
                and_(col(Message.author) == MessageAuthor.STAFF, col(Message.private).is_(False)),
            )
        )
        .group_by(col(Message.conversation_id))
        .subquery()
    )
    statement = select(Conversation.id).join(last_written, last_written.c.conversation_id == Conversation.id)
    statement = statement.where(last_written.c.last_id > func.coalesce(Conversation.synced_through_message_id, 0))
    if options.conversation is not None:
        statement = statement.where(Conversation.public_id == options.conversation)
    else:
        idle_before = now - timedelta(minutes=options.idle_minutes)
        statement = statement.where(
            or_(col(Conversation.status) == ConversationStatus.CLOSED, col(Conversation.updated_at) <= idle_before)
        )
    statement = statement.order_by(col(Conversation.updated_at), col(Conversation.id))
    if options.limit is not None:
        statement = statement.limit(options.limit)
    return [key for key in session.exec(statement).all() if key is not None]


def retry_failed_outbox(session: Session) -> int:
    """Failed outbox rows whose error may pass go back to pending; returns how many."""
    permanent = [col(Conclusion.last_error).startswith(name) for name in PERMANENT_ERRORS]
    statement = (
        update(Conclusion)
        .where(col(Conclusion.status) == OutboxStatus.FAILED, ~or_(*permanent))
        .values(status=OutboxStatus.PENDING, attempts=0, next_attempt_at=None)
    )
    retried = int(session.execute(statement).rowcount or 0)  # type: ignore[attr-defined]
    session.commit()
    return retried


class SyncRunner:
    def __init__(
        self,
        db: Engine,
        engine_factory: EngineFactory,
        ledger: UsageLedger,
        *,
        deliver: Deliver | None = None,
        memory: MemoryUpkeep | None = None,
        clock: Callable[[], datetime] = utc_now,
        conversation_deadline_s: float = SYNC_CONVERSATION_DEADLINE_S,
    ) -> None:
        self.db = db
        self.conversation_deadline_s = conversation_deadline_s
        self.engine_factory = engine_factory
        self.ledger = ledger
        self.deliver = deliver
        self.memory = memory
        self.clock = clock

    def run(self, options: SyncOptions, *, progress: Progress | None = None) -> SyncReport:
        report = SyncReport()
        with Session(self.db, expire_on_commit=False) as session:
            keys = select_conversations(session, options, self.clock())
            if not options.dry_run:
                report.record = self._start_record(session)
                report.record.outbox_retried = retry_failed_outbox(session)
            session.commit()
        pace = SyncPace(options.concurrency)
        syncer = ConversationSyncer(
            self.db, self.engine_factory, dry_run=options.dry_run, pace=pace, deadline_s=self.conversation_deadline_s
        )
        for outcome in self._in_parallel(syncer, keys, pace):
            report.conversations.append(outcome)
            if progress is not None:
                progress(outcome)
        if not options.dry_run:
            report.delivered = self._deliver_all()
            if self.memory is not None and report.record is not None:
                report.upkeep = run_upkeep(self.db, self.memory, report.record, self.clock().date())
            self._finish_record(report)
        return report

    @staticmethod
    def _in_parallel(syncer: ConversationSyncer, keys: list[int], pace: SyncPace) -> Iterator[ConversationSync]:
        def paced(key: int) -> ConversationSync:
            with pace.slot():
                return syncer.sync(key)

        with ThreadPoolExecutor(max_workers=pace.ceiling, thread_name_prefix="sync") as pool:
            yield from pool.map(paced, keys)

    def _deliver_all(self) -> int:
        delivered = 0
        while self.deliver is not None:
            report = self.deliver()
            delivered += report.delivered
            if not report.delivered:  # nothing left that is due (failures wait for their backoff)
                break
        return delivered

    def _start_record(self, session: Session) -> SyncRun:
        session.execute(
            update(SyncRun).where(col(SyncRun.status) == SyncRunStatus.RUNNING).values(status=SyncRunStatus.INTERRUPTED)
        )
        record = SyncRun()
        session.add(record)
        session.flush()
        return record

    def _finish_record(self, report: SyncReport) -> None:
        record = report.record
        assert record is not None
        record.status = SyncRunStatus.FINISHED
        record.finished_at = self.clock()
        record.scanned = len(report.conversations)
        record.summarized = report.count(Outcome.SUMMARIZED)
        record.skipped = report.count(Outcome.SKIPPED)
        record.failed = report.count(Outcome.FAILED)
        record.conclusions_written = report.delivered
        record.conclusions_superseded = report.upkeep.superseded
        record.promises_expired = report.upkeep.expired
        record.usage = self._usage(report.conversations)
        record.errors = [
            {"conversation_id": item.conversation_id, "error": item.error}
            for item in report.conversations
            if item.outcome == Outcome.FAILED
        ]
        record.errors += [{"conversation_id": None, "error": error} for error in report.upkeep.errors]
        record.errors = record.errors[:MAX_ERRORS]
        with Session(self.db, expire_on_commit=False) as session:
            session.add(record)
            session.commit()

    def _usage(self, conversations: list[ConversationSync]) -> dict[str, dict[str, float | int | None]]:
        totals: dict[str, dict[str, float | int | None]] = {}
        for item in conversations:
            if item.model is None or item.usage is None:
                continue
            entry = totals.setdefault(item.model, {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None})
            entry["prompt_tokens"] = int(entry["prompt_tokens"] or 0) + item.usage.prompt_tokens
            entry["completion_tokens"] = int(entry["completion_tokens"] or 0) + item.usage.completion_tokens
            cost = self.ledger.cost(item.model, item.usage)
            if cost is not None:
                entry["cost_usd"] = float(entry["cost_usd"] or 0.0) + cost
        return totals


def latest_sync_run(db: Engine) -> SyncRun | None:
    """The most recent finished run, if any."""
    with Session(db, expire_on_commit=False) as session:
        statement = select(SyncRun).where(SyncRun.status == SyncRunStatus.FINISHED).order_by(col(SyncRun.id).desc())
        found = session.exec(statement.limit(1)).first()
        session.commit()
        return found


def app_sync_runner(
    db: Engine,
    gateway: LLMGateway,
    settings: Settings,
    *,
    memory: CustomerMemory | None,
    outbox: ConclusionOutbox | None,
) -> SyncRunner:
    """The sync as the app runs it, in the server and in ``memdesk sync``: the compressor every conversation gets,
    the gateway's usage ledger, delivery through the conclusions outbox and upkeep of ``memory``."""
    return SyncRunner(
        db,
        lambda: default_compressor(gateway, settings),
        gateway.ledger,
        deliver=outbox.deliver_due if outbox is not None else None,
        memory=memory,
        conversation_deadline_s=settings.sync_conversation_deadline_s,
    )
