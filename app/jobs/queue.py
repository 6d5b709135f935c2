"""Background work on PostgreSQL: a procrastinate job queue in the application's database.

Several ``memdesk serve`` processes may share one PostgreSQL database; background work must then be done once, by
any one of them. Each server runs an in-process procrastinate worker (a task on its event loop) that takes jobs from
the shared queue:

- ``memdesk.deliver_outbox`` delivers due outbox rows until none is left (``MemoryService.deliver_all``). A
  compaction that queued conclusions defers one (``request_delivery``, which ``MemoryService.kick`` calls): its
  queueing lock keeps a burst of requests to one waiting job, its lock keeps two rounds from running at once. The
  same task runs every minute as a periodic job, for the rows whose retry backoff has ended.
- ``memdesk.conclusion_sync``: the daily conclusion sync at ``MEMDESK_SYNC_AT`` in ``MEMDESK_TIMEZONE``
  (``app.sync.timetable``); ``Services.sync_once`` does the work and writes the ``SyncRun`` record.
- ``memdesk.backfill_conclusions``, every ``MEMDESK_BACKFILL_INTERVAL_S`` (in whole minutes): the quick backfill
  after a summary-model outage (``app.sync.backfill``); its lock keeps a slow tick and the next from overlapping.
- ``memdesk.retry_stalled_jobs``, every minute: a job left running by a server that stopped sending heartbeats (it
  was killed) is queued again, which also frees its lock.

Every worker defers the periodic jobs, but procrastinate records one job per task and tick in the database, so each
tick runs once across all servers. A tick missed while no server ran is deferred at the next start if it is less
than ten minutes old.

Lifecycle: ``Services.start`` builds the ``JobQueue`` and calls ``start``; its worker opens a small connection pool
and runs until ``close``, which lets a running job finish for ``SHUTDOWN_GRACE_S`` and then aborts it (rows being
delivered stay leased and come back, a sync run resumes next time). If the database goes away, the worker starts
again after a pause. Jobs that succeed are deleted; a failed one stays in ``procrastinate_jobs`` for operators.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import procrastinate
from procrastinate.exceptions import AlreadyEnqueued
from sqlalchemy import Engine

from app.infra.worker_pool import in_daemon_thread
from app.jobs.schema import psycopg_conninfo
from app.sync import SyncAlreadyRunningError, SyncReport
from app.sync.backfill import BackfillReport, log_tick
from app.sync.runner import latest_sync_run
from app.sync.timetable import SyncTimetable

logger = logging.getLogger(__name__)

DELIVER_OUTBOX = "memdesk.deliver_outbox"
CONCLUSION_SYNC = "memdesk.conclusion_sync"
RETRY_STALLED_JOBS = "memdesk.retry_stalled_jobs"
BACKFILL_CONCLUSIONS = "memdesk.backfill_conclusions"
EVERY_MINUTE = "* * * * *"
# The worker's own connections (jobs, LISTEN, heartbeats); the jobs' database work uses the app's engine.
POOL_MIN_SIZE = 1
POOL_MAX_SIZE = 4
# A running job's time to finish when the server stops; the whole stop waits at most STOP_TIMEOUT_S.
SHUTDOWN_GRACE_S = 5.0
STOP_TIMEOUT_S = 10.0
# A worker that sent no heartbeat for this long (it sends one every 10 s) is dead, and its jobs are queued again.
STALLED_WORKER_S = 60.0
# Pauses before starting a failed worker again, growing with consecutive failures.
RESTART_DELAYS_S = (1.0, 5.0, 15.0, 60.0)
# How often this server reads the latest sync run, which another server may have made.
SYNC_STATUS_REFRESH_S = 60.0
QUIET_LOGGERS = ("procrastinate.worker", "procrastinate.periodic")

Deliver = Callable[[], Awaitable[int]]
RunSync = Callable[[], SyncReport]
RunBackfill = Callable[[], BackfillReport]


class JobQueue:
    """The procrastinate app with memdesk's jobs, and this server's worker for it."""

    def __init__(
        self,
        db: Engine,
        *,
        deliver: Deliver | None = None,
        run_sync: RunSync | None = None,
        timetable: SyncTimetable | None = None,
        backfill: RunBackfill | None = None,
        backfill_cron: str = EVERY_MINUTE,
    ) -> None:
        self.db = db
        self.deliver = deliver
        self.run_sync = run_sync
        self.timetable = timetable
        self.backfill = backfill
        self.backfill_cron = backfill_cron
        connector = procrastinate.PsycopgConnector(
            conninfo=psycopg_conninfo(db), min_size=POOL_MIN_SIZE, max_size=POOL_MAX_SIZE
        )
        self.app = procrastinate.App(connector=connector)
        self._register_jobs()
        self._ready = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- jobs ----------------------------------------------------------------------------------------------------
    def _register_jobs(self) -> None:
        app = self.app
        if self.deliver is not None:
            deliver = app.task(name=DELIVER_OUTBOX, lock=DELIVER_OUTBOX, queueing_lock=DELIVER_OUTBOX)(
                self._deliver_outbox
            )
            app.periodic(cron=EVERY_MINUTE, periodic_id="retries")(deliver)
        if self.run_sync is not None and self.timetable is not None:
            sync = app.task(name=CONCLUSION_SYNC, lock=CONCLUSION_SYNC, queueing_lock=CONCLUSION_SYNC)(
                self._conclusion_sync
            )
            for tick in self.timetable.ticks():
                app.periodic(cron=tick.cron, periodic_id=tick.periodic_id)(sync)
        if self.backfill is not None:
            backfill = app.task(
                name=BACKFILL_CONCLUSIONS, lock=BACKFILL_CONCLUSIONS, queueing_lock=BACKFILL_CONCLUSIONS
            )(self._backfill_conclusions)
            app.periodic(cron=self.backfill_cron, periodic_id="backfill")(backfill)
        stalled = app.task(name=RETRY_STALLED_JOBS, queueing_lock=RETRY_STALLED_JOBS)(self._retry_stalled_jobs)
        app.periodic(cron=EVERY_MINUTE)(stalled)

    async def _deliver_outbox(self, timestamp: int | None = None) -> None:
        assert self.deliver is not None
        delivered = await self.deliver()
        if delivered:
            logger.info("Outbox delivery job: %s conclusions delivered", delivered)

    async def _conclusion_sync(self, timestamp: int) -> None:
        assert self.run_sync is not None and self.timetable is not None
        if not self.timetable.is_sync_time(timestamp):
            return  # the tick of the UTC offset the zone does not have today
        try:
            report = await in_daemon_thread(self.run_sync, name="conclusion-sync")
        except SyncAlreadyRunningError as error:
            logger.info("Scheduled conclusion sync skipped: %s", error)
            return
        record = report.record  # ``run_sync`` has made it this server's ``last_run`` already
        if record is not None:
            logger.info(
                "Conclusion sync (job): %s conversations scanned, %s conclusions written",
                record.scanned,
                record.conclusions_written,
            )

    async def _backfill_conclusions(self, timestamp: int) -> None:
        assert self.backfill is not None
        log_tick(await in_daemon_thread(self.backfill, name="conclusion-backfill"))

    async def _retry_stalled_jobs(self, timestamp: int) -> None:
        manager = self.app.job_manager
        for job in await manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_WORKER_S):
            logger.warning("Job %s (%s) of a stopped worker is queued again", job.id, job.task_name)
            await manager.retry_job(job)

    # -- deferring -----------------------------------------------------------------------------------------------
    def request_delivery(self) -> None:
        """Defer a delivery job soon, without blocking the caller (after a compaction); callable from any thread."""
        if self.deliver is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._spawn, self._defer_delivery())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _defer_delivery(self) -> None:
        await self._ready.wait()
        try:
            await self.app.configure_task(DELIVER_OUTBOX).defer_async()
        except AlreadyEnqueued:
            pass  # a delivery is waiting already, and it will take these rows too
        except Exception:  # the periodic round delivers them within a minute
            logger.exception("Could not queue an outbox delivery job")

    # -- lifecycle -----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker on the running event loop."""
        # procrastinate logs every job and every periodic tick at INFO, several lines a minute per server; its
        # warnings and errors (a failed job) still show.
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
        self._loop = asyncio.get_running_loop()
        self._worker = self._loop.create_task(self._work_forever(), name="job-queue-worker")
        if self.timetable is not None:
            self._spawn(self._watch_sync_runs())

    async def _work_forever(self) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        while True:
            started = loop.time()
            try:
                async with self.app.open_async():
                    self._ready.set()
                    await self.app.run_worker_async(
                        name=f"{socket.gethostname()}:{os.getpid()}",
                        install_signal_handlers=False,
                        delete_jobs="successful",
                        shutdown_graceful_timeout=SHUTDOWN_GRACE_S,
                        stalled_worker_timeout=STALLED_WORKER_S,
                    )
            except Exception:  # the database went away, say: background work must come back by itself
                logger.exception("The job queue worker stopped")
            finally:
                self._ready.clear()
            if loop.time() - started > RESTART_DELAYS_S[-1]:
                failures = 0  # it had been working: start the backoff over
            delay = RESTART_DELAYS_S[min(failures, len(RESTART_DELAYS_S) - 1)]
            failures += 1
            logger.warning("Starting the job queue worker again in %s s", delay)
            await asyncio.sleep(delay)

    async def _watch_sync_runs(self) -> None:
        assert self.timetable is not None
        while True:
            try:
                self.timetable.last_run = await asyncio.to_thread(latest_sync_run, self.db)
            except Exception:  # the status only: read it again next time
                logger.warning("Could not read the latest conclusion sync run", exc_info=True)
            await asyncio.sleep(SYNC_STATUS_REFRESH_S)

    async def close(self) -> None:
        """Stop the worker (a running job gets ``SHUTDOWN_GRACE_S``) and the side tasks; bounded."""
        tasks = [task for task in (self._worker, *self._tasks) if task is not None]
        for task in tasks:
            task.cancel()
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
        if pending:
            logger.warning("The job queue worker did not stop within %s s; leaving it", STOP_TIMEOUT_S)
        for task in tasks:
            if task.done() and not task.cancelled():
                with contextlib.suppress(Exception):
                    task.result()
