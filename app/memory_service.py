"""Long-term memory inside the running app: the recall section of every turn and the outbox delivery loop.

``MemoryService.section`` is the agent's ``MemorySection`` hook: the customer's memories relevant to the latest
message plus every active promise, rendered as escaped reference data (a memory cannot close the
``<customer-memory>`` frame or start lines of its own). Recall runs in a worker thread with a timeout, and any
failure yields an empty section: memory degrades a reply, it never blocks one.

``run`` is a background task: it delivers due outbox rows whenever ``kick`` is called (after a compaction queued
conclusions) and every ``OUTBOX_POLL_S`` otherwise, so failed deliveries are retried with their backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
from collections.abc import Sequence

import anyio

from app.memory_outbox import SqlOutboxRepository, memory_customer_id
from memory.conclusions import MemoryItem
from memory.outbox import ConclusionOutbox, DeliveryReport
from memory.store import CustomerMemory

logger = logging.getLogger(__name__)

RECALL_TIMEOUT_S = 2.0
RECALL_LIMIT = 8
OUTBOX_POLL_S = 30.0


def _safe(text: str) -> str:
    """One memory as one escaped line, whole: what is stored is already short, and a cut could split an
    identifier (a tracking number) that the customer needs."""
    return html.escape(" ".join(text.split()), quote=False)


def _line(item: MemoryItem) -> str:
    label = item.kind or "note"
    if item.due_date is not None:
        label += f", due {item.due_date.isoformat()}"
    if item.locked:
        label += ", confirmed by staff"
    return f"- [{label}] {_safe(item.text)}"


def format_memory_section(recalled: Sequence[MemoryItem], promises: Sequence[MemoryItem]) -> str:
    """The text that goes inside ``<customer-memory>``; empty when there is nothing to say."""
    lines: list[str] = []
    if promises:
        lines.append("Open promises to this customer (keep them, and say so if one is late):")
        lines += [_line(item) for item in promises]
    promised = {item.id for item in promises}
    others = [item for item in recalled if item.id not in promised]
    if others:
        lines.append("What we know about this customer from earlier conversations:")
        lines += [_line(item) for item in others]
    return "\n".join(lines)


class MemoryService:
    def __init__(self, memory: CustomerMemory, repository: SqlOutboxRepository) -> None:
        self.memory = memory
        self.repository = repository
        self.outbox = ConclusionOutbox(repository, memory)
        self._wake = asyncio.Event()

    def _recall(self, customer_id: int, query: str) -> str:
        memory_id = memory_customer_id(customer_id)
        recalled = self.memory.recall(memory_id, query, limit=RECALL_LIMIT)
        return format_memory_section(recalled, self.memory.active_promises(memory_id))

    async def section(self, customer_id: int, latest_message: str) -> str:
        try:
            return await asyncio.wait_for(
                anyio.to_thread.run_sync(self._recall, customer_id, latest_message), RECALL_TIMEOUT_S
            )
        except Exception:
            logger.exception("Memory recall failed for customer %s; answering without it", customer_id)
            return ""

    def kick(self) -> None:
        """Deliver queued conclusions soon (called after a compaction committed outbox rows)."""
        self._wake.set()

    async def deliver_now(self) -> DeliveryReport:
        return await anyio.to_thread.run_sync(self.outbox.deliver_due)

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), OUTBOX_POLL_S)
            self._wake.clear()
            try:
                await self.deliver_now()
            except Exception:  # the repository itself failed (database down): try again next round
                logger.exception("Outbox delivery round failed")
