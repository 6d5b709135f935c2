"""What the memory benchmark measures on an open ``CustomerMemory``: recall and remember latency (with the time spent
inside the vector store's own calls), and whether what was loaded is what the store lists and recalls."""

from __future__ import annotations

import math
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.harness.measure import percentile
from benchmarks.memory.data import BenchmarkSettings, bulk_draw, customer_bulk_indices, customer_id
from memory.conclusions import Conclusion
from memory.store import CustomerMemory

MIN_SAMPLES = 20
FLUSH_PROBE_COMMITS = 200
FLUSH_PROBE_BYTES = 2_000  # about one memory row: a 384-dim float32 vector and its payload
KIB_PER_MIB = 1024


def rss_mib() -> float:
    """Resident memory of this process (VmRSS), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / KIB_PER_MIB, 1)
    return math.nan


def latency_summary(prefix: str, seconds: Sequence[float]) -> dict[str, float]:
    ms = [value * 1000 for value in seconds]
    return {
        f"{prefix}_p50_ms": round(percentile(ms, 0.50), 3),
        f"{prefix}_p95_ms": round(percentile(ms, 0.95), 3),
        f"{prefix}_max_ms": round(max(ms), 3),
    }


class CallTimer:
    """Times the calls of some methods of one object, by shadowing them on the instance while active."""

    def __init__(self, target: Any, names: Sequence[str]) -> None:
        self._target = target
        self._names = names
        self.spent = dict.fromkeys(names, 0.0)

    def _timed(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.spent[name] += time.perf_counter() - started

        return timed

    def reset(self) -> None:
        self.spent = dict.fromkeys(self._names, 0.0)

    @contextmanager
    def active(self) -> Iterator[CallTimer]:
        for name in self._names:
            setattr(self._target, name, self._timed(name, getattr(self._target, name)))
        try:
            yield self
        finally:
            for name in self._names:
                delattr(self._target, name)


def within_budget(samples: int, deadline: float) -> bool:
    return samples < MIN_SAMPLES or time.perf_counter() < deadline


def measure_recall(
    store: CustomerMemory, pairs: Sequence[tuple[str, str]], settings: BenchmarkSettings
) -> dict[str, Any]:
    """``CustomerMemory.recall`` latency after a warm-up, with the time inside the vector store's semantic search
    and keyword search per recall."""
    for customer, question in pairs[: settings.recall_warmup]:
        store.recall(customer, question)
    totals: list[float] = []
    inside: dict[str, list[float]] = {"search": [], "keyword_search": []}
    results: list[int] = []
    deadline = time.perf_counter() + settings.phase_budget_s
    with CallTimer(store._mem0.vector_store, list(inside)).active() as timer:
        for customer, question in pairs[settings.recall_warmup :]:
            if not within_budget(len(totals), deadline):
                break
            timer.reset()
            started = time.perf_counter()
            recalled = store.recall(customer, question)
            totals.append(time.perf_counter() - started)
            results.append(len(recalled))
            for name, spent in timer.spent.items():
                inside[name].append(spent)
    return {
        **latency_summary("recall", totals),
        "recall_mean_ms": round(sum(totals) / len(totals) * 1000, 3),
        "recall_samples": len(totals),
        "recall_results_mean": round(sum(results) / len(results), 2),
        **latency_summary("vector_search", inside["search"]),
        **latency_summary("keyword_search", inside["keyword_search"]),
    }


def measure_remember(
    store: CustomerMemory, conclusions: Sequence[Conclusion], settings: BenchmarkSettings
) -> tuple[dict[str, Any], list[Conclusion]]:
    """``CustomerMemory.remember`` one conclusion at a time, with the time inside the vector store's ``list`` (the
    content-hash and supersession lookups) and ``insert`` per call; returns the figures and the conclusions stored."""
    spent: list[float] = []
    inside: dict[str, list[float]] = {"list": [], "insert": []}
    stored: list[Conclusion] = []
    deadline = time.perf_counter() + settings.phase_budget_s
    with CallTimer(store._mem0.vector_store, list(inside)).active() as timer:
        for conclusion in conclusions:
            if not within_budget(len(spent), deadline):
                break
            timer.reset()
            started = time.perf_counter()
            store.remember([conclusion])
            spent.append(time.perf_counter() - started)
            stored.append(conclusion)
            for name, seconds in timer.spent.items():
                inside[name].append(seconds)
    figures = {
        "remember_per_s": round(len(spent) / sum(spent), 2),
        **latency_summary("remember", spent),
        "remember_samples": len(spent),
        **latency_summary("remember_lookups", inside["list"]),
        **latency_summary("remember_insert", inside["insert"]),
    }
    return figures, stored


def check_bulk_visible(
    store: CustomerMemory, loaded: int, remembered: dict[str, set[str]], settings: BenchmarkSettings
) -> dict[str, Any]:
    """Sampled customers: ``list`` returns exactly the texts loaded (and remembered) for them, and ``recall`` of
    one of their active memories' own text ranks that memory first."""
    rng = random.Random(f"{settings.seed}:sanity:{loaded}")
    sample = rng.sample(range(min(settings.customers, loaded)), min(settings.sanity_customers, loaded))
    listed_ok = recalled_ok = 0
    for number in sample:
        customer = customer_id(number)
        expected = {
            bulk_draw(index, settings).conclusion.text for index in customer_bulk_indices(number, loaded, settings)
        }
        expected |= remembered.get(customer, set())
        listed = store.list(customer)
        listed_ok += {item.text for item in listed} == expected and all(item.customer_id == customer for item in listed)
        probe = rng.choice([item.text for item in listed if item.active])
        recalled = store.recall(customer, probe)
        recalled_ok += bool(recalled) and recalled[0].text == probe
    return {
        "customers_checked": len(sample),
        "list_matches_loaded": listed_ok,
        "recall_ranks_own_text_first": recalled_ok,
        "ok": listed_ok == recalled_ok == len(sample),
    }


def flushed_commits_per_s(directory: Path, commits: int = FLUSH_PROBE_COMMITS) -> float:
    """Commits per second of a bare SQLite table in ``directory`` with the memory store's settings (WAL,
    ``synchronous=FULL``: the disk is flushed at every commit): the ceiling of one-write-per-call throughput on this
    disk at this moment."""
    path = directory / "flush-probe.db"
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute("CREATE TABLE IF NOT EXISTS probe (payload BLOB)")
        started = time.perf_counter()
        for _ in range(commits):
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO probe VALUES (?)", (bytes(FLUSH_PROBE_BYTES),))
            connection.execute("COMMIT")
        return round(commits / (time.perf_counter() - started), 1)
    finally:
        connection.close()
        for leftover in directory.glob("flush-probe.db*"):
            leftover.unlink()
