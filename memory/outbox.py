"""``ConclusionOutbox``: delivers the durable outbox of conclusions to ``CustomerMemory``, exactly once.

The outbox rows live in the application's database (the ``conclusions`` table), written in the same transaction
as whatever produced them (a compaction, for instance). This module owns the delivery rules
and reaches the rows through ``OutboxRepository``, which the application implements:

1. ``claim_due`` hands out pending rows whose next attempt is due.
2. Each is stored with ``CustomerMemory.remember``, which is idempotent by content hash: a retry after a crash
   between the write to Mem0 and ``mark_delivered`` finds the memory already there and adds nothing.
3. Success: ``mark_delivered`` with the memory id. Failure: ``mark_failed`` with the error and the next attempt time
   (exponential backoff, capped); after ``max_attempts`` the row is marked failed and stays visible with its last
   error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from memory.conclusions import Conclusion

logger = logging.getLogger(__name__)

BACKOFF_BASE_S = 2.0
BACKOFF_MAX_S = 600.0
MAX_ATTEMPTS = 12
DELIVERY_BATCH = 100
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class PendingConclusion:
    row_id: int
    conclusion: Conclusion
    attempts: int


class OutboxRepository(Protocol):
    def claim_due(self, now: datetime, limit: int) -> list[PendingConclusion]: ...

    def mark_delivered(self, row_id: int, memory_id: str, now: datetime) -> None: ...

    def mark_failed(self, row_id: int, error: str, next_attempt_at: datetime | None) -> None: ...


class Remembers(Protocol):
    def remember(self, conclusions: Sequence[Conclusion]) -> list[str]: ...


@dataclass
class DeliveryReport:
    delivered: int = 0
    failed: int = 0
    gave_up: int = 0
    errors: list[str] = field(default_factory=list)


def backoff_s(attempts: int, *, base_s: float = BACKOFF_BASE_S, cap_s: float = BACKOFF_MAX_S) -> float:
    """Seconds to wait after the ``attempts``-th failure: 2, 4, 8, … capped at ten minutes."""
    return float(min(cap_s, base_s * 2 ** max(0, attempts - 1)))


class ConclusionOutbox:
    def __init__(
        self,
        repository: OutboxRepository,
        memory: Remembers,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.repository = repository
        self.memory = memory
        self.max_attempts = max_attempts
        self.clock = clock
        self.delivered_total = 0
        self.failed_total = 0

    def deliver_due(self, *, limit: int = DELIVERY_BATCH) -> DeliveryReport:
        """Deliver every due row (one batch); never raises for a delivery failure."""
        report = DeliveryReport()
        started = time.perf_counter()
        for pending in self.repository.claim_due(self.clock(), limit):
            try:
                (memory_id,) = self.memory.remember([pending.conclusion])
            except Exception as error:  # Mem0 or the embedder failed: retry later, never lose the row
                attempts = pending.attempts + 1
                message = f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]
                give_up = attempts >= self.max_attempts
                next_at = None if give_up else self.clock() + timedelta(seconds=backoff_s(attempts))
                self.repository.mark_failed(pending.row_id, message, next_at)
                report.failed += 1
                report.gave_up += give_up
                report.errors.append(message)
                self.failed_total += 1
                logger.warning("Conclusion %s not delivered (attempt %s): %s", pending.row_id, attempts, message)
                continue
            self.repository.mark_delivered(pending.row_id, memory_id, self.clock())
            report.delivered += 1
            self.delivered_total += 1
        if report.delivered or report.failed:
            logger.info(
                "Outbox: %s delivered, %s failed in %.1f ms",
                report.delivered,
                report.failed,
                (time.perf_counter() - started) * 1000,
            )
        return report
