"""The memory benchmark's own functions at a tiny size: what it loads is what Mem0 writes, and what it reports."""

from __future__ import annotations

from pathlib import Path

from benchmarks.memory.data import BenchmarkSettings, bulk_draw, fresh_conclusions, mem0_payload, recall_pairs
from benchmarks.memory.scale import (
    LABEL_PGVECTOR,
    LABEL_PGVECTOR_INDEXED,
    LABEL_QDRANT,
    LABEL_SQLITE,
    run_store,
    sanity_failed,
    verdict,
)
from benchmarks.memory.shared import run_shared
from memory.store import CustomerMemory

TINY_SIZE = 500
SHARED_RUN_S = 3.0
TINY = BenchmarkSettings(
    customers=50, recall_queries=20, recall_warmup=2, remember_count=10, phase_budget_s=5.0, sanity_customers=5
)
SIZE_KEYS = {
    "memories", "customers", "rss_mb", "recall_p50_ms", "recall_p95_ms", "recall_samples", "recall_results_mean",
    "vector_search_p50_ms", "keyword_search_p50_ms", "remember_per_s", "remember_samples", "meets_recall_target",
}  # fmt: skip


def test_bulk_payload_is_exactly_what_mem0_add_writes_for_remember(customer_memory: CustomerMemory) -> None:
    for conclusion in fresh_conclusions(8, "payload-check", TINY):  # promises (with expiry) and the other kinds
        (memory_id,) = customer_memory.remember([conclusion])
        stored = customer_memory._mem0.vector_store.get(memory_id).payload
        assert stored == mem0_payload(conclusion, created_at=stored["created_at"])


def test_generated_memories_are_deterministic_spread_evenly_and_questions_ask_about_them() -> None:
    drawn = [bulk_draw(index, TINY).conclusion for index in range(TINY_SIZE)]
    assert drawn == [bulk_draw(index, TINY).conclusion for index in range(TINY_SIZE)]
    per_customer = {conclusion.customer_id for conclusion in drawn}
    assert len(per_customer) == TINY.customers
    assert {conclusion.kind for conclusion in drawn} == {"promise", "decision", "preference", "fact"}
    assert all(c.due_date and c.identifiers for c in drawn if c.kind == "promise")
    pairs = recall_pairs(50, TINY_SIZE, TINY)
    assert pairs == recall_pairs(50, TINY_SIZE, TINY)
    assert {customer for customer, _ in pairs} <= per_customer


def _check_sizes(section: dict[str, object]) -> None:
    rows = section["sizes"]
    assert isinstance(rows, dict) and list(rows) == [str(TINY_SIZE)]
    row = rows[str(TINY_SIZE)]
    assert set(row) >= SIZE_KEYS
    assert row["recall_samples"] == TINY.recall_queries and row["remember_samples"] == TINY.remember_count
    assert 0 < row["recall_p50_ms"] <= row["recall_p95_ms"]
    assert row["remember_per_s"] > 0 and row["rss_mb"] > 0
    assert row["recall_results_mean"] > 0


def test_benchmark_on_qdrant_sees_the_bulk_and_reports_every_figure(tmp_path: Path) -> None:
    report = run_store("qdrant", [TINY_SIZE // 2, TINY_SIZE], data_dir=tmp_path, settings=TINY)
    assert list(report) == [LABEL_QDRANT]
    section = report[LABEL_QDRANT]
    for row in section["sizes"].values():
        assert row["sanity"] == {**row["sanity"], "ok": True, "customers_checked": TINY.sanity_customers}
    assert section["sizes"][str(TINY_SIZE)]["loaded_now"] == TINY_SIZE // 2
    section["sizes"].pop(str(TINY_SIZE // 2))
    _check_sizes(section)
    assert not sanity_failed({"stores": report})


def test_benchmark_on_pgvector_measures_with_and_without_the_customer_index(tmp_path: Path, postgres_url: str) -> None:
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    report = run_store("pgvector", [TINY_SIZE], data_dir=tmp_path, settings=TINY, pgvector_url=url)
    assert list(report) == [LABEL_PGVECTOR, LABEL_PGVECTOR_INDEXED]
    assert report[LABEL_PGVECTOR]["sizes"][str(TINY_SIZE)]["sanity"]["ok"]
    for section in report.values():
        _check_sizes(section)
        assert section["sizes"][str(TINY_SIZE)]["table_mb"] > 0
        assert section["pgvector"]
    assert report[LABEL_PGVECTOR_INDEXED]["sizes"][str(TINY_SIZE)]["customer_index_build_s"] >= 0
    summary = verdict(report, None)
    assert set(summary) == set(report)
    assert summary[LABEL_PGVECTOR]["recall_p95_ms"] == report[LABEL_PGVECTOR]["sizes"][str(TINY_SIZE)]["recall_p95_ms"]


def test_benchmark_on_the_embedded_store_reports_recall_with_the_local_embedder_too(tmp_path: Path) -> None:
    report = run_store("sqlite", [TINY_SIZE], data_dir=tmp_path, settings=TINY)
    assert list(report) == [LABEL_SQLITE]
    section = report[LABEL_SQLITE]
    _check_sizes(section)
    row = section["sizes"][str(TINY_SIZE)]
    assert row["sanity"]["ok"]
    local = row["local_embedder"]
    assert local["recall_samples"] == TINY.recall_queries and 0 < local["recall_p50_ms"] <= local["recall_p95_ms"]
    summary = verdict(report, None)
    assert summary[LABEL_SQLITE]["recall_p95_with_local_embedder_ms"] == local["recall_p95_ms"]


def test_two_processes_sharing_the_embedded_store_lose_no_write(tmp_path: Path) -> None:
    run_store("sqlite", [TINY_SIZE], data_dir=tmp_path, settings=TINY)
    shared = run_shared(tmp_path, seconds=SHARED_RUN_S, loaded=TINY_SIZE, settings=TINY)
    assert shared["errors"] == 0, shared
    assert shared["lost_writes"] == 0
    assert [process["remembered"] > 0 and process["recalled"] > 0 for process in shared["per_process"]] == [True] * 2
    assert shared["remembered"] == sum(process["remembered"] for process in shared["per_process"])
    summary = verdict({}, shared)
    assert summary["shared_store"] == {"processes": 2, "seconds": SHARED_RUN_S, "errors": 0, "lost_writes": 0}
