"""Per-visitor rate limits: a sliding one-minute window per key.

``RateLimiter`` keeps the windows in memory (one server process, the SQLite mode). ``PostgresRateLimiter`` keeps them
in the ``rate_limit_windows`` table, so a limit holds across every process on one PostgreSQL database: one statement
per hit reads and updates the key's row under its row lock (concurrent hits on one key wait for each other, hits on
other keys do not), on the database's clock (the processes' clocks may differ). Both answer ``VisitorRateLimiter``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

from sqlalchemy import Engine, text

WINDOW_S = 60.0
MAX_TRACKED_KEYS = 50_000


def customer_rate_key(customer_public_id: str) -> str:
    """The key of a customer's message window."""
    return f"customer:{customer_public_id}"


class VisitorRateLimiter(Protocol):
    def retry_after(self, key: str) -> float | None:
        """Record a hit for ``key``; None when allowed, else the seconds until the next hit would be."""
        ...

    def forget(self, key: str) -> None:
        """Drop ``key``'s window (its owner was erased)."""
        ...


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


IDLE_WINDOW_CLEANUP_S = 300.0
# The key's row, locked by the upsert: the hits still inside the window, plus this one when there is room for it.
_RECENT_HITS = """
    SELECT CAST(hit.at AS float8) AS at FROM json_array_elements_text(rate.hits) AS hit(at)
    WHERE CAST(hit.at AS float8) > extract(epoch FROM now()) - CAST(:window_s AS float8)
"""
HIT_SQL = text(
    f"""
    INSERT INTO rate_limit_windows AS rate (key, hits, allowed, updated_at)
    VALUES (:key, json_build_array(CAST(extract(epoch FROM now()) AS float8)), true, now())
    ON CONFLICT (key) DO UPDATE SET
        allowed = (SELECT count(*) FROM ({_RECENT_HITS}) AS recent) < CAST(:per_minute AS integer),
        hits = (
            SELECT coalesce(json_agg(kept.at ORDER BY kept.at), CAST('[]' AS json)) FROM (
                {_RECENT_HITS}
                UNION ALL
                SELECT CAST(extract(epoch FROM now()) AS float8)
                WHERE (SELECT count(*) FROM ({_RECENT_HITS}) AS recent) < CAST(:per_minute AS integer)
            ) AS kept
        ),
        updated_at = now()
    RETURNING allowed,
        CAST(hits ->> 0 AS float8) - (CAST(extract(epoch FROM now()) AS float8) - CAST(:window_s AS float8))
    """
)
FORGET_SQL = text("DELETE FROM rate_limit_windows WHERE key = :key")
CLEANUP_SQL = text(
    "DELETE FROM rate_limit_windows WHERE updated_at < now() - make_interval(secs => CAST(:window_s AS float8))"
)


class PostgresRateLimiter:
    """The per-visitor limit shared by every server process on one PostgreSQL database."""

    def __init__(self, db: Engine, per_minute: int) -> None:
        self.per_minute = per_minute
        self._db = db.execution_options(isolation_level="AUTOCOMMIT")
        self._next_cleanup = 0.0

    def retry_after(self, key: str) -> float | None:
        parameters = {"key": key, "per_minute": self.per_minute, "window_s": WINDOW_S}
        with self._db.connect() as connection:
            allowed, wait = connection.execute(HIT_SQL, parameters).one()
            if time.monotonic() >= self._next_cleanup:
                self._next_cleanup = time.monotonic() + IDLE_WINDOW_CLEANUP_S
                connection.execute(CLEANUP_SQL, {"window_s": WINDOW_S})
        return None if allowed else max(0.0, float(wait))

    def forget(self, key: str) -> None:
        with self._db.connect() as connection:
            connection.execute(FORGET_SQL, {"key": key})
