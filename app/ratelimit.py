"""Per-visitor rate limits: a sliding one-minute window kept in memory (one server process)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

WINDOW_S = 60.0
MAX_TRACKED_KEYS = 50_000


def customer_rate_key(customer_public_id: str) -> str:
    """The key of a customer's message window."""
    return f"customer:{customer_public_id}"


class RateLimiter:
    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, key: str) -> float | None:
        """Record a hit for ``key``; None when allowed, else the seconds until the next hit would be."""
        now = self.clock()
        with self._lock:
            hits = self._hits.get(key)
            if hits is None:
                if len(self._hits) >= MAX_TRACKED_KEYS:
                    self._forget_idle(now)
                hits = self._hits[key] = deque()
            while hits and hits[0] <= now - WINDOW_S:
                hits.popleft()
            if len(hits) >= self.per_minute:
                return max(0.0, hits[0] + WINDOW_S - now)
            hits.append(now)
            return None

    def forget(self, key: str) -> None:
        """Drop ``key``'s window (its owner was erased)."""
        with self._lock:
            self._hits.pop(key, None)

    def _forget_idle(self, now: float) -> None:
        for key in [k for k, hits in self._hits.items() if not hits or hits[-1] <= now - WINDOW_S]:
            del self._hits[key]
