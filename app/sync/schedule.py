"""The daily conclusion sync inside a SQLite server (APScheduler's cron trigger), and the settings it reads."""

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
from app.sync.lock import SyncAlreadyRunningError
from app.sync.pace import sync_concurrency
from app.sync.runner import SyncOptions, SyncReport

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
    values: dict[str, Any] = {"idle_minutes": settings.sync_idle_minutes, "concurrency": sync_concurrency(settings)}
    return SyncOptions(**{**values, **overrides})


def _summary(report: SyncReport) -> str:
    record = report.record
    if record is None:
        return "dry run"
    return (
        f"{record.scanned} conversations scanned, {record.summarized} summarized, {record.skipped} skipped, "
        f"{record.failed} failed; {record.conclusions_written} conclusions written, "
        f"{record.conclusions_superseded} superseded, {record.promises_expired} promises expired"
    )
