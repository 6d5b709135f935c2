"""Customer memory at scale: recall latency, remember throughput, memory use and sharing between processes, on
each Mem0 vector store memdesk offers.

    python -m benchmarks.memory --json [--sizes 10000 100000] [--stores sqlite qdrant pgvector] [--shared-s 60]

1,000 customers share 10k, then 100k memories (``benchmarks.memory.data``: seeded support conclusions, the same in
every run). Each store runs in a process of its own, one store after the other (2 cores): the embedded default
(``memory.sqlite_store``, one SQLite file keyed by customer), Qdrant's local mode (a directory, ``on_disk``, as
memdesk configures it) and pgvector (a real PostgreSQL from the PyPI package ``pgserver``,
``benchmarks.memory.pgvector``), measured twice on pgvector: as Mem0 creates the table (HNSW on the vector, GIN on
the text, nothing on the customer) and with memdesk's index on ``payload->>'user_id'``, each on connections of its
own (see ``reopened``).

Per store and size, in this order: the bulk load (straight into Mem0's vector store, payloads exactly as Mem0's
``add(infer=False)`` writes them; 100k calls of ``CustomerMemory.remember`` would take most of the run), a sanity
check that ``CustomerMemory.list`` and ``recall`` see the bulk, the resident memory of the process,
``CustomerMemory.recall`` latency for random (customer, question) pairs with the vector search and keyword search
inside it timed apart, and ``CustomerMemory.remember`` throughput on fresh conclusions. Recall uses
the hashing embedder, so the store is what is measured; on the embedded default, recall is then measured again
through a ``CustomerMemory`` with the local MiniLM embedder on the same file (the stored vectors come from the
hashing embedder: exact search costs the same whatever the vectors hold). The parent process times query embedding
alone with both embedders. The larger size is reached by loading the difference into the same store. Each
measuring phase stops after its sample count or its time budget (but never below ``MIN_SAMPLES``): Qdrant's local
mode needs about a second per recall at 100k memories.

Last, two processes share the embedded default's file at the largest size for ``--shared-s`` seconds, each
remembering and recalling in a loop (``benchmarks.memory.shared``): errors, and writes a process reported done that
the store does not hold at the end (lost writes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from benchmarks.harness.report import print_report
from benchmarks.memory.data import (
    BenchmarkSettings,
    bulk_load,
    fresh_conclusions,
    recall_pairs,
)
from benchmarks.memory.measure import (
    MIN_SAMPLES,
    check_bulk_visible,
    flushed_commits_per_s,
    latency_summary,
    measure_recall,
    measure_remember,
    rss_mib,
)
from benchmarks.memory.pgvector import (
    DATABASE_NAME,
    HNSW_BUILD_MEMORY,
    BenchmarkPostgres,
    PgvectorTable,
    close_store,
    reopened,
)
from benchmarks.memory.shared import PROCESSES, SHARED_S, run_shared
from memory.config import EmbedderKind, MemoryOptions, VectorStoreKind, prepare_environment
from memory.store import RECALL_LIMIT, CustomerMemory

TARGET_RECALL_P95_MS = 10.0
TARGET_MEMORIES = 100_000
TARGET_REMEMBER_PER_S = 200.0
DEFAULT_SIZES = (10_000, 100_000)
STORES = ("sqlite", "qdrant", "pgvector")
LABEL_SQLITE = "sqlite_embedded"
LABEL_QDRANT = "qdrant_local"
LABEL_PGVECTOR = "pgvector"
LABEL_PGVECTOR_INDEXED = "pgvector_customer_index"
LABELS = {"sqlite": LABEL_SQLITE, "qdrant": LABEL_QDRANT, "pgvector": LABEL_PGVECTOR}
EMBEDDING_QUERIES = 200
EMBEDDING_WARMUP = 10
WORKER_TIMEOUT_S = 3_600


# -- measuring ------------------------------------------------------------------------------------------------------
def measured_size(
    store: CustomerMemory,
    table: PgvectorTable | None,
    label: str,
    loaded: int,
    remembered: dict[str, set[str]],
    settings: BenchmarkSettings,
) -> dict[str, Any]:
    """Recall then remember at the current size; what was remembered joins ``remembered``."""
    figures: dict[str, Any] = {"table_mb": table.size_mib()} if table is not None else {}
    figures.update(
        measure_recall(
            store, recall_pairs(settings.recall_warmup + settings.recall_queries, loaded, settings), settings
        )
    )
    figures["meets_recall_target"] = figures["recall_p95_ms"] <= TARGET_RECALL_P95_MS
    fresh = fresh_conclusions(settings.remember_count, f"remember:{loaded}:{label}", settings)
    remember_figures, stored = measure_remember(store, fresh, settings)
    for conclusion in stored:
        remembered.setdefault(conclusion.customer_id, set()).add(conclusion.text)
    per_s = remember_figures["remember_per_s"]
    log(f"{label} at {loaded}: recall p95 {figures['recall_p95_ms']} ms, remember {per_s}/s")
    return figures | remember_figures


def log(message: str) -> None:
    print(f"[benchmarks.memory {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def first_warnings(caught: Sequence[warnings.WarningMessage]) -> list[str]:
    """One line per distinct warning (numbers ignored), e.g. Qdrant's advice against local mode past 20k points."""
    seen: dict[str, str] = {}
    for warning in caught:
        text = f"{warning.category.__name__}: {warning.message}"
        seen.setdefault(re.sub(r"\d+", "N", text), text)
    return list(seen.values())


SETUPS = {
    LABEL_SQLITE: "memory.sqlite_store: one SQLite file (WAL), rows indexed by (collection, customer), float32 "
    "vectors, exact cosine in numpy over the customer's rows (memdesk's embedded default)",
    LABEL_QDRANT: "Qdrant local mode in a directory, on_disk vectors (memdesk's earlier embedded default)",
    LABEL_PGVECTOR: "Mem0's table as it creates it: HNSW (vector_cosine_ops) and GIN on text_lemmatized, nothing else",
    LABEL_PGVECTOR_INDEXED: "the same table plus CREATE INDEX ON <table> ((payload->>'user_id'))",
}


def run_store(
    store_name: str,
    sizes: Sequence[int],
    *,
    data_dir: Path,
    settings: BenchmarkSettings,
    pgvector_url: str | None = None,
) -> dict[str, Any]:
    """Everything measured on one store (``sqlite``, ``qdrant`` or ``pgvector``), sizes loaded one after the other."""
    kind = VectorStoreKind(store_name)
    options = MemoryOptions(data_dir, vector_store=kind, embedder=EmbedderKind.HASHING, pgvector_url=pgvector_url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = PgvectorTable(pgvector_url, options.collection) if pgvector_url else None
        try:
            by_label = _run_sizes(options, table, sorted(set(sizes)), settings)
            versions = table.versions() if table is not None else {}
        finally:
            if table is not None:
                table.close()
    report = {label: {"setup": SETUPS[label], **versions, "sizes": rows} for label, rows in by_label.items()}
    report[LABELS[store_name]]["warnings"] = first_warnings(caught)
    return report


def _run_sizes(
    options: MemoryOptions, table: PgvectorTable | None, sizes: Sequence[int], settings: BenchmarkSettings
) -> dict[str, dict[str, Any]]:
    label = LABELS[options.vector_store.value]
    by_label: dict[str, dict[str, Any]] = {label: {}} if table is None else {label: {}, LABEL_PGVECTOR_INDEXED: {}}
    remembered: dict[str, set[str]] = {}
    store = CustomerMemory(options)
    try:
        if table is not None:
            store._mem0.vector_store.create_col()  # Mem0 creates its table lazily; the DDL below needs it now
        loaded = 0
        for size in sizes:
            row: dict[str, Any] = {"memories": size, "customers": settings.customers, "loaded_now": size - loaded}
            if table is not None:
                # Inserting into a live HNSW graph costs ~5 ms a row here: load without it, then build it as Mem0
                # does.
                table.drop_vector_index()
                table.drop_customer_index()
                store = reopened(store)
            row["load_s"] = round(bulk_load(store, range(loaded, size), settings), 2)
            row["load_per_s"] = round((size - loaded) / row["load_s"], 1)
            if table is not None:
                row["vector_index_build_s"] = round(table.create_vector_index(), 2)
                row["vacuum_analyze_s"] = round(table.vacuum_analyze(), 2)
            loaded = size
            row["rss_mb"] = rss_mib()
            row["sanity"] = check_bulk_visible(store, loaded, remembered, settings)
            log(f"{label} at {size}: loaded {row['loaded_now']} in {row['load_s']} s; sanity {row['sanity']}")
            by_label[label][str(size)] = row | measured_size(store, table, label, loaded, remembered, settings)
            if options.vector_store is VectorStoreKind.SQLITE:
                by_label[label][str(size)]["local_embedder"] = recall_with_local_embedder(options, loaded, settings)
                by_label[label][str(size)]["disk_flushed_commits_per_s"] = flushed_commits_per_s(options.data_dir)
            if table is not None:
                row = {"memories": size, "customers": settings.customers}
                row["customer_index_build_s"] = round(table.create_customer_index(), 2)
                store = reopened(store)
                row["rss_mb"] = rss_mib()
                measured = measured_size(store, table, LABEL_PGVECTOR_INDEXED, loaded, remembered, settings)
                by_label[LABEL_PGVECTOR_INDEXED][str(size)] = row | measured
    finally:
        close_store(store)
    return by_label


def recall_with_local_embedder(options: MemoryOptions, loaded: int, settings: BenchmarkSettings) -> dict[str, Any]:
    """``CustomerMemory.recall`` as a memdesk server makes it by default: the same store file, the query embedded
    by the local MiniLM embedder (loaded before timing; each question is new, so none is answered from the query
    cache)."""
    try:
        store = CustomerMemory(replace(options, embedder=EmbedderKind.LOCAL))
        store.warm_up()
    except Exception as error:  # a missing model package is a result here, not a failure of the benchmark
        return {"skipped": f"{type(error).__name__}: {error}"}
    try:
        pairs = recall_pairs(settings.recall_warmup + settings.recall_queries, loaded, settings)
        figures = measure_recall(store, pairs, settings)
    finally:
        store.close()
    keys = ("recall_p50_ms", "recall_p95_ms", "recall_max_ms", "recall_samples", "vector_search_p95_ms")
    log(f"{LABEL_SQLITE} at {loaded} with the local embedder: recall p95 {figures['recall_p95_ms']} ms")
    return {"embedder": "local MiniLM-L6 int8 ONNX", **{key: figures[key] for key in keys}}


# -- query embedding ------------------------------------------------------------------------------------------------
def embedding_timings(queries: Sequence[str], data_dir: Path) -> dict[str, Any]:
    """Per-query embedding time of the hashing embedder and of memdesk's local MiniLM ONNX embedder."""
    prepare_environment(MemoryOptions(data_dir=data_dir))  # memory.embedders imports mem0
    from memory import embedders

    timings: dict[str, Any] = {"queries": len(queries)}
    candidates: dict[str, Callable[[], Any]] = {"hashing": embedders.HashingEmbedder}
    local = getattr(embedders, "local_embedder", None) or getattr(embedders, "MiniLMOnnxEmbedder", None)
    if local is None:
        timings["minilm_onnx"] = {"skipped": "memory.embedders has no local_embedder or MiniLMOnnxEmbedder"}
    else:
        candidates["minilm_onnx"] = local
    for name, factory in candidates.items():
        try:
            started = time.perf_counter()
            embedder = factory()
            embedder.embed(queries[0], "search")
            load_s = time.perf_counter() - started
            for query in queries[:EMBEDDING_WARMUP]:
                embedder.embed(query, "search")
            spent = []
            for query in queries:
                started = time.perf_counter()
                embedder.embed(query, "search")
                spent.append(time.perf_counter() - started)
        except Exception as error:  # a missing model package is a result here, not a failure of the benchmark
            timings[name] = {"skipped": f"{type(error).__name__}: {error}"}
            continue
        timings[name] = {
            "factory": f"memory.embedders.{getattr(factory, '__name__', '?')}",
            "first_call_s": round(load_s, 3),
            **latency_summary("embed", spent),
        }
    return timings


def worker_command(store_name: str, sizes: Sequence[int], data_dir: Path, settings: BenchmarkSettings,
                   pgvector_url: str | None) -> list[str]:  # fmt: skip
    command = [sys.executable, "-m", "benchmarks.memory", "--worker", store_name, "--data-dir", str(data_dir),
               "--settings", json.dumps(asdict(settings)), "--sizes", *map(str, sizes)]  # fmt: skip
    return command + (["--pgvector-url", pgvector_url] if pgvector_url else [])


def spawn_store(store_name: str, sizes: Sequence[int], data_dir: Path, settings: BenchmarkSettings,
                pgvector_url: str | None) -> dict[str, Any]:  # fmt: skip
    """Run one store in a fresh process (its own resident memory), progress on stderr, the result on stdout."""
    env = {**os.environ, "MEM0_DIR": str(data_dir / "mem0"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        worker_command(store_name, sizes, data_dir, settings, pgvector_url),
        cwd=Path(__file__).resolve().parents[2], env=env, stdout=subprocess.PIPE, text=True,
        timeout=WORKER_TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not done.stdout.strip():
        return {store_name: {"error": f"worker exited with status {done.returncode}; its stderr is above"}}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


METHOD = {
    "sizes": "each store loads the smaller size, is measured, then loads the difference and is measured again",
    "bulk_load": (
        "straight into Mem0's vector store (Memory.vector_store.insert, batches of 1000, vectors from the same "
        "HashingEmbedder) with payloads exactly as Mem0 2.2's add(infer=False) writes them for "
        "CustomerMemory.remember: memdesk's Conclusion.metadata(), user_id, expiration_date (promises), role, "
        "data, hash, created_at, updated_at, text_lemmatized. Mem0's history rows are not written for the bulk. "
        "pgvector: Mem0's HNSW index is dropped for the load and rebuilt after it with Mem0's definition "
        f"(maintenance_work_mem {HNSW_BUILD_MEMORY}), then VACUUM (ANALYZE) so that autovacuum does not run during "
        "the measurements"
    ),
    "sanity": "after each load, for sampled customers: CustomerMemory.list returns exactly the loaded and "
    "remembered texts; CustomerMemory.recall of one of their memories' own text ranks it first",
    "recall": f"CustomerMemory.recall(customer, question), limit {RECALL_LIMIT}, for random customers asking about "
    "one of their own memories, after warm-up calls; hashing embedder (query embedding included, see "
    "embedding.hashing); vector_search / keyword_search: time inside Mem0's vector_store.search / keyword_search",
    "local_embedder": "embedded default only: the same recall through a CustomerMemory with the local MiniLM "
    "embedder on the same file (model loaded before timing); the stored vectors are the hashing embedder's, and "
    "exact search costs the same whatever they hold",
    "disk_flushed_commits_per_s": "embedded default only, right after remember: commits per second of a bare "
    "SQLite table with the store's settings (WAL, synchronous=FULL) in the same directory; each remember flushes "
    "the disk once (Mem0's history file is not flushed), so this is its ceiling at that moment",
    "shared_store": "embedded default only, at the largest size: processes each open the store and alternate "
    "remember (fresh conclusions) and recall from a common start; lost_writes = completed writes missing from "
    "CustomerMemory.list afterwards (benchmarks/memory/shared.py)",
    "remember": "CustomerMemory.remember, one fresh conclusion per call (content-hash lookup, Mem0 add(infer=False), "
    "supersession lookup), after the recall measurement; those memories stay in the store; remember_lookups / "
    "remember_insert: time inside Mem0's vector_store.list / insert per call",
    "pgvector_variants": "each variant runs on new connections (CustomerMemory reopened after the index change): "
    "statements psycopg prepared may keep plans made before the customer-id index existed",
    "rss_mb": "VmRSS of the store's own process after loading each size, MiB; PostgreSQL's memory is not in it "
    "(table_mb is the table with its indexes)",
    "budget": f"each measuring phase stops at its sample count or after phase_budget_s, never below {MIN_SAMPLES}",
}


def verdict(stores: dict[str, Any], shared: dict[str, Any] | None) -> dict[str, Any]:
    """Each store's figures at its largest size against the targets, and the shared-store run's."""
    summary: dict[str, Any] = {}
    for label, section in stores.items():
        sizes = section.get("sizes") or {}
        if not sizes:
            continue
        largest = max(sizes, key=int)
        row = sizes[largest]
        summary[label] = {
            "memories": int(largest),
            "recall_p95_ms": row["recall_p95_ms"],
            "meets_recall_target": row["recall_p95_ms"] <= TARGET_RECALL_P95_MS,
            "remember_per_s": row["remember_per_s"],
            "meets_remember_target": row["remember_per_s"] >= TARGET_REMEMBER_PER_S,
            "at_target_size": int(largest) >= TARGET_MEMORIES,
        }
        local = row.get("local_embedder", {})
        if "recall_p95_ms" in local:
            summary[label]["recall_p95_with_local_embedder_ms"] = local["recall_p95_ms"]
    if shared is not None:
        summary["shared_store"] = {key: shared.get(key) for key in ("processes", "seconds", "errors", "lost_writes")}
    return summary


def run(
    sizes: Sequence[int], stores: Sequence[str], settings: BenchmarkSettings, *, shared_s: float = SHARED_S
) -> dict[str, Any]:
    started = time.perf_counter()
    report: dict[str, Any] = {
        "benchmark": "memory",
        # Other work on the machine moves every figure: the load average says how busy it was.
        "machine": {"cpus": os.cpu_count(), "load_average_at_start": os.getloadavg(), "python": sys.version.split()[0],
                    **{name: metadata.version(name) for name in ("mem0ai", "qdrant-client")},
                    # Mem0's optional extras: without spaCy it indexes the raw text for keyword search and extracts
                    # no entities; without fastembed its Qdrant store has no BM25 keyword search.
                    "installed": {name: find_spec(name) is not None for name in ("spacy", "fastembed")}},
        "target": {"recall_p95_ms": TARGET_RECALL_P95_MS, "memories": TARGET_MEMORIES,
                   "remember_per_s": TARGET_REMEMBER_PER_S, "shared_store": "0 errors, 0 lost writes"},
        "settings": asdict(settings),
        "sizes": sorted(set(sizes)),
        "method": METHOD,
        "stores": {},
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="memdesk-memory-bench-") as scratch:
        root = Path(scratch)
        postgres = BenchmarkPostgres(root) if "pgvector" in stores else None
        try:
            for store_name in stores:
                url = postgres.create_database(DATABASE_NAME) if postgres and store_name == "pgvector" else None
                log(f"{store_name}: starting")
                report["stores"].update(spawn_store(store_name, sizes, root / store_name, settings, url))
        finally:
            if postgres is not None:
                postgres.stop()
        shared = None
        if "sqlite" in stores and shared_s > 0 and "error" not in report["stores"].get(LABEL_SQLITE, {"error": 1}):
            log(f"sqlite: {PROCESSES} processes share the store for {shared_s:.0f} s")
            shared = run_shared(root / "sqlite", seconds=shared_s, loaded=max(sizes), settings=settings)
            report["shared_store"] = shared
        questions = [question for _, question in recall_pairs(EMBEDDING_QUERIES, max(sizes), settings)]
        report["embedding"] = embedding_timings(questions, root / "embedding")
    report["verdict"] = verdict(report["stores"], shared)
    report["machine"]["load_average_at_end"] = os.getloadavg()
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    return report


def sanity_failed(report: dict[str, Any]) -> bool:
    shared = report.get("shared_store") or {}
    return bool(shared.get("errors") or shared.get("lost_writes")) or any(
        "error" in section or not all(row.get("sanity", {"ok": True})["ok"] for row in section["sizes"].values())
        for section in report["stores"].values()
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object on one line")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), help="memories per store")
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    parser.add_argument("--customers", type=int, default=BenchmarkSettings.customers)
    parser.add_argument("--recall-queries", type=int, default=BenchmarkSettings.recall_queries)
    parser.add_argument("--remember-count", type=int, default=BenchmarkSettings.remember_count)
    parser.add_argument("--phase-budget-s", type=float, default=BenchmarkSettings.phase_budget_s)
    parser.add_argument("--shared-s", type=float, default=SHARED_S, help="two processes on the embedded store; 0: skip")
    parser.add_argument("--worker", choices=STORES, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    parser.add_argument("--pgvector-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        settings = BenchmarkSettings(**json.loads(args.settings))
        result = run_store(args.worker, args.sizes, data_dir=args.data_dir, settings=settings,
                           pgvector_url=args.pgvector_url)  # fmt: skip
        print(json.dumps(result))
        return 0
    if min(args.sizes) < args.customers:
        parser.error("every size needs at least one memory per customer (--sizes >= --customers)")
    settings = BenchmarkSettings(customers=args.customers, recall_queries=args.recall_queries,
                                 remember_count=args.remember_count, phase_budget_s=args.phase_budget_s)  # fmt: skip
    report = run(args.sizes, args.stores, settings, shared_s=args.shared_s)
    print_report(report, one_line=args.json)
    return 1 if sanity_failed(report) else 0
