"""Long-term memory inside the running app: the recall section of every turn and the outbox delivery loop.

``MemoryService.section`` is the agent's ``MemorySection`` hook: the customer's memories relevant to the latest
message plus every active promise, rendered as neutralised reference data (a memory cannot close the
``<customer-memory>`` frame or start lines of its own). Any failure yields an empty section: memory degrades a
reply, it never blocks one.

Every Mem0 call (hence every embedder and vector-store call) runs on the service's own ``BoundedWorkerPool`` of
``MEMORY_WORKERS`` threads with a timeout (``RECALL_TIMEOUT_S``, ``REMEMBER_TIMEOUT_S``): a hung dependency costs a
turn at most the recall timeout, ties up at most the pool's threads, and once all of them are stuck, calls fail at
once until one comes back.

Staff read and change memories through it too (``list``, ``history``, ``add_locked``, ``edit``, ``lock``, ``delete``,
by the app's customer id): on the same pool, with the timeouts a person waits for in the console.

On SQLite, ``run`` is a background task: it delivers due outbox rows whenever ``kick`` is called (after a
compaction queued conclusions) and every ``OUTBOX_POLL_S`` otherwise, so failed deliveries are retried with their
backoff. On PostgreSQL the job queue (``app.jobs.queue``) takes over instead: ``deliver_on_request`` makes ``kick``
defer a delivery job, and the queue's jobs call ``deliver_all``. A delivery round runs in a daemon thread of its own
and each conclusion goes through the pool, so stopping the app never waits for it; the rows are durable and the next
round (or the next start) delivers them.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, tzinfo
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Engine

from app.customer_memory.ids import memory_customer_id
from app.customer_memory.options import memory_options
from app.customer_memory.outbox import SqlOutboxRepository
from app.infra.metrics import Metrics
from app.infra.worker_pool import BoundedWorkerPool, DependencyUnavailableError, in_daemon_thread
from app.settings import Settings
from memory.conclusions import Conclusion, MemoryItem
from memory.migrate import upgrade_embedded_store
from memory.outbox import DELIVERY_BATCH, ConclusionOutbox, DeliveryReport
from memory.store import CustomerMemory

logger = logging.getLogger(__name__)

RECALL_TIMEOUT_S = 2.0
# A delivery is not on a customer's path: it may wait longer than a recall (one retried embedding request).
REMEMBER_TIMEOUT_S = 15.0
# Recall embeds and searches in parallel on these threads; a few also leave room for some hung calls.
MEMORY_WORKERS = 4
# Calls allowed to wait for a worker (a burst of turns); beyond that a call fails at once.
MEMORY_MAX_WAITING = 64
RECALL_LIMIT = 8
OUTBOX_POLL_S = 30.0
# A staff member waits this long for the console's memory list (a slow store costs the panel its list, not the page)
# and for a change or a history, which may embed text.
STAFF_READ_TIMEOUT_S = 5.0
STAFF_CHANGE_TIMEOUT_S = 10.0


# Angle brackets become look-alikes, so no memory can open or close a tag of the prompt. Not HTML entities: a model
# shown "&amp;" and "&#39;" learns to write them in its replies.
_TAG_SAFE = str.maketrans({"<": "\u2039", ">": "\u203a"})


def _safe(text: str) -> str:
    """One memory as one line, whole: what is stored is already short, and a cut could split an identifier (a
    tracking number) that the customer needs."""
    return " ".join(text.split()).translate(_TAG_SAFE)


def _overdue(item: MemoryItem, today: date | None) -> bool:
    return today is not None and item.due_date is not None and item.due_date < today


def _line(item: MemoryItem, today: date | None = None) -> str:
    label = item.kind or "note"
    if item.due_date is not None:
        label += f", due {item.due_date.isoformat()}"
    if _overdue(item, today):
        label += ", OVERDUE"
    if item.locked:
        label += ", confirmed by staff"
    return f"- [{label}] {_safe(item.text)}"


def format_memory_section(
    recalled: Sequence[MemoryItem], promises: Sequence[MemoryItem], *, today: date | None = None
) -> str:
    """The text that goes inside ``<customer-memory>``; empty when there is nothing to say. Overdue promises come
    first (a customer writing in past a due date most likely writes about it), each marked as such."""
    lines: list[str] = []
    if promises:
        ordered = sorted(promises, key=lambda item: not _overdue(item, today))  # stable: due order within each
        lines.append("Open promises to this customer (keep them, and say so if one is late):")
        lines += [_line(item, today) for item in ordered]
    promised = {item.id for item in promises}
    others = [item for item in recalled if item.id not in promised]
    if others:
        lines.append("What we know about this customer from earlier conversations:")
        lines += [_line(item) for item in others]
    return "\n".join(lines)


class _ContainedMemory:
    """What the outbox delivers to: ``CustomerMemory.remember`` on the memory pool, with a timeout."""

    def __init__(self, pool: BoundedWorkerPool, memory: CustomerMemory, *, timeout_s: float) -> None:
        self.pool = pool
        self.store = memory
        self.timeout_s = timeout_s

    def remember(self, conclusions: Sequence[Conclusion]) -> list[str]:
        return self.pool.call(self.store.remember, conclusions, timeout_s=self.timeout_s)


class MemoryService:
    def __init__(
        self,
        memory: CustomerMemory,
        repository: SqlOutboxRepository,
        *,
        workers: int = MEMORY_WORKERS,
        max_waiting: int = MEMORY_MAX_WAITING,
        recall_timeout_s: float = RECALL_TIMEOUT_S,
        remember_timeout_s: float = REMEMBER_TIMEOUT_S,
        metrics: Metrics | None = None,
        timezone: tzinfo = UTC,
    ) -> None:
        self.store = memory
        # Due dates are days on the shop's calendar: whether one has passed is asked of that calendar.
        self.timezone = timezone
        self.repository = repository
        self.recall_timeout_s = recall_timeout_s
        self.metrics = metrics or Metrics()
        self.pool = BoundedWorkerPool("memory", workers=workers, max_waiting=max_waiting)
        contained = _ContainedMemory(self.pool, memory, timeout_s=remember_timeout_s)
        self.outbox = ConclusionOutbox(repository, contained)
        repository.active_promise_ids = self._active_promise_ids
        self._wake = asyncio.Event()
        self._delivery_requested: Callable[[], None] | None = None

    def _recall(self, customer_id: int, query: str) -> str:
        memory_id = memory_customer_id(customer_id)
        recalled = self.store.recall(memory_id, query, limit=RECALL_LIMIT)
        today = datetime.now(self.timezone).date()
        marked = self.repository.marked_promises(customer_id)
        promises = [item for item in self.store.active_promises(memory_id) if item.id not in marked]
        recalled = [item for item in recalled if item.id not in marked]
        return format_memory_section(recalled, promises, today=today)

    async def section(self, customer_id: int, latest_message: str) -> str:
        started = time.perf_counter()
        try:
            section = await self.pool.run(self._recall, customer_id, latest_message, timeout_s=self.recall_timeout_s)
            self.metrics.recall_seconds.observe(time.perf_counter() - started)
            return section
        except DependencyUnavailableError as error:
            logger.warning("Answering customer %s without memory: %s", customer_id, error)
        except Exception:
            logger.exception("Memory recall failed for customer %s; answering without it", customer_id)
        self.metrics.recall_failures.inc()
        return ""

    def _active_promise_ids(self, customer_id: int) -> set[str]:
        promises = self.pool.call(
            self.store.active_promises, memory_customer_id(customer_id), timeout_s=STAFF_READ_TIMEOUT_S
        )
        return {item.id for item in promises}

    @property
    def busy(self) -> bool:
        """Every worker is stuck on a call that did not return in time: new calls fail at once."""
        return self.pool.stuck >= self.pool.workers

    # -- what staff do in the console ----------------------------------------------------------------------------
    async def list(self, customer_id: int) -> builtins.list[MemoryItem]:
        """Every memory of the customer, whatever its status."""
        return await self.pool.run(self.store.list, memory_customer_id(customer_id), timeout_s=STAFF_READ_TIMEOUT_S)

    async def history(self, customer_id: int, memory_id: str) -> builtins.list[dict[str, Any]]:
        call = partial(self.store.history, memory_customer_id(customer_id), memory_id)
        return await self.pool.run(call, timeout_s=STAFF_CHANGE_TIMEOUT_S)

    async def add_locked(self, conclusion: Conclusion, *, editor: str, expiration_date: date | None) -> MemoryItem:
        call = partial(self.store.add_locked, conclusion, editor=editor, expiration_date=expiration_date)
        return await self.pool.run(call, timeout_s=STAFF_CHANGE_TIMEOUT_S)

    async def edit(
        self,
        customer_id: int,
        memory_id: str,
        text: str,
        *,
        editor: str,
        due_date: date | None,
        expiration_date: date | None,
    ) -> MemoryItem:
        store_id = memory_customer_id(customer_id)
        call = partial(
            self.store.edit,
            store_id,
            memory_id,
            text,
            editor=editor,
            due_date=due_date,
            expiration_date=expiration_date,
        )
        return await self.pool.run(call, timeout_s=STAFF_CHANGE_TIMEOUT_S)

    async def lock(self, customer_id: int, memory_id: str, *, editor: str) -> MemoryItem:
        call = partial(self.store.lock, memory_customer_id(customer_id), memory_id, editor=editor)
        return await self.pool.run(call, timeout_s=STAFF_CHANGE_TIMEOUT_S)

    async def delete(self, customer_id: int, memory_id: str) -> None:
        call = partial(self.store.delete, memory_customer_id(customer_id), memory_id)
        await self.pool.run(call, timeout_s=STAFF_CHANGE_TIMEOUT_S)

    # -- the outbox ----------------------------------------------------------------------------------------------
    # The conclusions outbox as ``/metrics`` reads it (``app.infra.metrics.OutboxView``).
    def counts(self) -> dict[str, int]:
        return self.repository.counts()

    def delivery_totals(self) -> tuple[int, int]:
        return self.outbox.delivered_total, self.outbox.failed_total

    def deliver_on_request(self, request: Callable[[], None]) -> None:
        """From now on ``kick`` calls ``request`` (a job queue deferring a delivery) instead of waking ``run``."""
        self._delivery_requested = request

    def kick(self) -> None:
        """Deliver queued conclusions soon (called after a compaction committed outbox rows)."""
        if self._delivery_requested is not None:
            self._delivery_requested()
        else:
            self._wake.set()

    async def deliver_now(self) -> DeliveryReport:
        """One delivery round: at most one batch (``memory.outbox.DELIVERY_BATCH``) of due rows."""
        return await in_daemon_thread(self.outbox.deliver_due, name="memory-outbox-delivery")

    async def deliver_all(self) -> int:
        """Rounds until one comes back short of a full batch (nothing more is due); returns how many were delivered.
        A failed row waits for its backoff, so this ends even while Mem0 is down."""
        delivered = 0
        while True:
            report = await self.deliver_now()
            delivered += report.delivered
            if report.delivered + report.failed < DELIVERY_BATCH:
                return delivered

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), OUTBOX_POLL_S)
            self._wake.clear()
            try:
                await self.deliver_now()
            except Exception:  # the repository itself failed (database down): try again next round
                logger.exception("Outbox delivery round failed")

    def close(self) -> None:
        """Stop taking memory calls and release the store, without waiting for a call that is stuck."""
        self.pool.close()
        self.store.close()


def build_memory_service(settings: Settings, db: Engine, metrics: Metrics) -> MemoryService:
    """Mem0 behind ``CustomerMemory`` plus the outbox deliverer (slow to build: run it off the event loop). A data
    directory from before the SQLite store has its Qdrant memories moved over first."""
    options = memory_options(settings)
    upgrade_embedded_store(options)
    store = CustomerMemory(options)
    store.warm_up()
    return MemoryService(store, SqlOutboxRepository(db), metrics=metrics, timezone=ZoneInfo(settings.timezone))
