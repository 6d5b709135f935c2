"""The conclusion sync: every conversation's conclusions reach long-term memory exactly once, even the conversations
too short to ever be compacted.

``memdesk sync`` runs it once; ``memdesk serve`` runs it every day at ``MEMDESK_SYNC_AT`` (``MEMDESK_TIMEZONE``):
on SQLite through APScheduler's cron trigger (``SyncSchedule``), on PostgreSQL as a periodic job of the shared job
queue, which one of the servers runs (``app.jobs``, ``timetable``). All go through ``SyncRunner`` (``runner``), one
conversation at a time per thread (``conversation``), under a lock that admits one run at a time (``lock``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import time
from typing import Any
from zoneinfo import ZoneInfo

import anyio
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from app.models import SyncRun
from app.settings import Settings
from app.sync.lock import SyncAlreadyRunningError, exclusive_sync
from app.sync.runner import Progress, SyncOptions, SyncReport, SyncRunner

__all__ = [
    "SyncAlreadyRunningError",
    "SyncOptions",
    "SyncReport",
    "SyncRunner",
    "SyncSchedule",
    "exclusive_sync",
    "options_from",
    "parse_sync_at",
    "run_standalone",
]

logger = logging.getLogger(__name__)


def parse_sync_at(value: str) -> time | None:
    """``"03:00"`` as a time of day; an empty value means no scheduled sync."""
    if not value.strip():
        return None
    return time.fromisoformat(value.strip())


class SyncSchedule:
    """Runs ``run_once`` every day at ``at`` in ``timezone``, from the server's event loop, in a thread."""

    def __init__(self, run_once: Callable[[], SyncReport], *, at: time, timezone: str) -> None:
        self.run_once = run_once
        self.scheduler = AsyncIOScheduler(timezone=ZoneInfo(timezone))
        trigger = CronTrigger(hour=at.hour, minute=at.minute, timezone=ZoneInfo(timezone))
        self.scheduler.add_job(self._run, trigger, id="conclusion-sync", coalesce=True, max_instances=1)
        self.last_run: SyncRun | None = None

    async def _run(self) -> None:
        try:
            report = await anyio.to_thread.run_sync(self.run_once)
        except SyncAlreadyRunningError as error:
            logger.info("Scheduled conclusion sync skipped: %s", error)
            return
        except Exception:
            logger.exception("Scheduled conclusion sync failed; the next run resumes where it stopped")
            return
        logger.info("Conclusion sync: %s", _summary(report))

    def start(self) -> None:
        self.scheduler.start()

    def stop(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    def next_run(self) -> str | None:
        job = self.scheduler.get_job("conclusion-sync")
        return job.next_run_time.isoformat() if job is not None and job.next_run_time else None


def options_from(settings: Settings, **overrides: Any) -> SyncOptions:
    values: dict[str, Any] = {"idle_minutes": settings.sync_idle_minutes, "concurrency": settings.sync_concurrency}
    return SyncOptions(**{**values, **overrides})


def run_standalone(settings: Settings, options: SyncOptions, *, progress: Progress | None = None) -> SyncReport:
    """One run outside the server (``memdesk sync``): its own database engine, gateway and memory store."""
    from app.db import create_db_engine, upgrade
    from app.llm import LLMGateway
    from app.memory_outbox import SqlOutboxRepository
    from app.services import memory_options
    from app.turn_context import default_compressor
    from memory.outbox import ConclusionOutbox
    from memory.store import CustomerMemory

    db = create_db_engine(settings.resolved_database_url)
    gateway = LLMGateway.from_settings(settings)
    store: CustomerMemory | None = None
    try:
        upgrade(db)
        with exclusive_sync(db, settings.data_dir):
            if settings.memory_enabled and not options.dry_run:
                store = CustomerMemory(memory_options(settings))
            deliver = ConclusionOutbox(SqlOutboxRepository(db), store).deliver_due if store else None
            runner = SyncRunner(
                db, lambda: default_compressor(gateway, settings), gateway.ledger, deliver=deliver, memory=store
            )
            return runner.run(options, progress=progress)
    finally:
        if store is not None:
            store.close()
        gateway.close()
        db.dispose()


def _summary(report: SyncReport) -> str:
    record = report.record
    if record is None:
        return "dry run"
    return (
        f"{record.scanned} conversations scanned, {record.summarized} summarized, {record.skipped} skipped, "
        f"{record.failed} failed; {record.conclusions_written} conclusions written, "
        f"{record.conclusions_superseded} superseded, {record.promises_expired} promises expired"
    )
