"""Customer memory at scale: recall latency, remember throughput and memory use of both Mem0 vector stores.

    python -m benchmarks.memory --json [--sizes 10000 100000] [--stores qdrant pgvector]

1,000 customers share 10k, then 100k memories: support conclusions (promises with order numbers, amounts and due
dates, decisions, preferences, facts) drawn from a seeded RNG, so every run stores the same texts (dates are
relative to the day of the run, so promises never expire mid-benchmark). Each store runs in a process of its own,
one store after the other (2 cores): the embedded store (Qdrant in a local directory, ``on_disk``, as memdesk
configures it) and pgvector (a real PostgreSQL from the PyPI package ``pgserver``), measured twice on pgvector:
as Mem0 creates the table (HNSW on the vector, GIN on the text, nothing on the customer) and with an expression
index on ``payload->>'user_id'``, each on connections of its own (see ``reopened``).

Per store and size, in this order: the bulk load (straight into Mem0's vector store, payloads exactly as Mem0's
``add(infer=False)`` writes them; 100k calls of ``CustomerMemory.remember`` would spend most of the run in its
idempotency lookup), a sanity check that ``CustomerMemory.list`` and ``recall`` see the bulk, the resident memory
of the process, ``CustomerMemory.recall`` latency for random (customer, question) pairs with the vector search and
keyword search inside it timed apart, and ``CustomerMemory.remember`` throughput on fresh conclusions. Recall uses
the hashing embedder, so the store is what is measured; the parent process then times query embedding with the
hashing embedder and with the local MiniLM ONNX embedder, so recall with the real embedder is store + embedding.
The larger size is reached by loading the difference into the same store. Each measuring phase stops after its
sample count or its time budget (but never below ``MIN_SAMPLES``): the embedded store needs about a second per
recall at 100k memories.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from benchmarks.stats import percentile
from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from memory.config import EmbedderKind, MemoryOptions, VectorStoreKind, prepare_environment
from memory.store import RECALL_LIMIT, CustomerMemory

TARGET_RECALL_P95_MS = 20.0
TARGET_MEMORIES = 100_000
DEFAULT_SIZES = (10_000, 100_000)
STORES = ("qdrant", "pgvector")
LABEL_QDRANT = "qdrant_local"
LABEL_PGVECTOR = "pgvector"
LABEL_PGVECTOR_INDEXED = "pgvector_customer_index"
SEED = "memdesk-memory-benchmark-v1"
LOAD_BATCH = 1_000
MIN_SAMPLES = 20
EMBEDDING_QUERIES = 200
EMBEDDING_WARMUP = 10
WORKER_TIMEOUT_S = 3_600
KIB_PER_MIB = 1024
BYTES_PER_MIB = 1024 * 1024
# Building the HNSW graph of 100k 384-dim vectors in memory instead of spilling to disk.
HNSW_BUILD_MEMORY = "1GB"
HNSW_BUILD_WORKERS = 1  # plus the leader: both cores
DATABASE_NAME = "memdesk_memory_bench"


@dataclass(frozen=True)
class BenchmarkSettings:
    customers: int = 1_000
    recall_queries: int = 200
    recall_warmup: int = 10
    remember_count: int = 300
    phase_budget_s: float = 45.0  # per measuring phase (recall, remember) and store and size
    sanity_customers: int = 10
    seed: str = SEED
    today: str = field(default_factory=lambda: date.today().isoformat())


# -- the conclusions ------------------------------------------------------------------------------------------------
TEMPLATES: dict[ConclusionKind, tuple[str, ...]] = {
    ConclusionKind.PROMISE: (
        "Refund of {amount} for order {order} to the original card by {due}",
        "Replacement {item} for order {order} ships by {due}",
        "A supervisor calls back about order {order} on {due}",
        "Store credit of {amount} added to the account by {due} for the late order {order}",
        "Prepaid return label for the {item} from order {order} emailed by {due}",
    ),
    ConclusionKind.DECISION: (
        "Approved the return of the {item} from order {order} without a restocking fee",
        "Cancelled order {order} at the customer's request on {day}",
        "Waived the {amount} shipping charge on order {order}",
        "Delivery address for order {order} changed to the customer's office in {city}",
        "Customer accepted a partial refund of {amount} on order {order} instead of a replacement {item}",
    ),
    ConclusionKind.PREFERENCE: (
        "Prefers {channel} over {other_channel} for delivery updates",
        "Wants deliveries after {hour} pm on weekdays and never left at the back door",
        "Prefers refunds to the original card rather than store credit (said on {day})",
        "Writes in {language} and prefers replies in {language}",
        "No marketing by {channel}; order updates only, since {day}",
    ),
    ConclusionKind.FACT: (
        "Bought a {item} on {day} (order {order}), under warranty until {warranty}",
        "Business account in {city}; invoices need VAT number {vat}",
        "{courier} deliveries to {city} failed twice; ship order {order} with another courier",
        "Allergic to latex: no latex gloves as a free gift with order {order}",
        "Has a {amount} gift card balance left from order {order}",
    ),
}
QUERY_TEMPLATES: dict[ConclusionKind, tuple[str, ...]] = {
    ConclusionKind.PROMISE: (
        "Any news on order {order}? I was told it would be sorted by {due}.",
        "When will I get the {amount} back for order {order}?",
        "Nobody has contacted me about order {order} yet, what is going on?",
    ),
    ConclusionKind.DECISION: (
        "What did you decide about order {order}?",
        "Can you confirm the change you made to order {order}?",
        "Do I still have to pay anything for order {order}?",
    ),
    ConclusionKind.PREFERENCE: (
        "How are you going to keep me updated about my delivery?",
        "When can the courier come? I'm at work during the day.",
        "I'd like my money back, how will you refund me?",
    ),
    ConclusionKind.FACT: (
        "Is my {item} still under warranty?",
        "Please send me the invoice for order {order} for my company.",
        "Which courier will bring my next order to {city}?",
    ),
}
KIND_WEIGHTS = {
    ConclusionKind.PROMISE: 35,
    ConclusionKind.DECISION: 25,
    ConclusionKind.PREFERENCE: 20,
    ConclusionKind.FACT: 20,
}
IDENTIFIER_SLOTS = ("order", "amount")
ITEMS = ("blender", "pair of running shoes", "laptop stand", "winter jacket", "coffee grinder", "desk lamp",
         "air fryer", "yoga mat", "pair of headphones", "kettle", "stand mixer", "rain jacket")  # fmt: skip
CHANNELS = ("SMS", "email", "phone calls", "WhatsApp")
CITIES = ("Lyon", "Leeds", "Porto", "Graz", "Utrecht", "Malmo", "Bilbao", "Turin", "Cork", "Gdansk")
COURIERS = ("DHL", "UPS", "DPD", "FedEx", "GLS")
LANGUAGES = ("Spanish", "German", "French", "Portuguese", "Italian", "Dutch")
VAT_PREFIXES = ("FR", "DE", "NL", "ES", "IT", "IE")
PROMISE_DUE_DAYS = (1, 60)
PAST_DAYS = (1, 400)
WARRANTY_DAYS = 730


@dataclass(frozen=True)
class Draw:
    """One generated conclusion and the slot values it was written from (questions about it reuse them)."""

    conclusion: Conclusion
    slots: dict[str, str]


def customer_id(number: int) -> str:
    return f"cust-{number:05d}"


def draw(namespace: str, index: int, customer: int, *, today: date) -> Draw:
    """Conclusion number ``index`` of ``namespace``: the same for the same arguments in every process."""
    rng = random.Random(f"{namespace}:{index}")
    kind = rng.choices(list(KIND_WEIGHTS), weights=list(KIND_WEIGHTS.values()))[0]
    template = rng.choice(TEMPLATES[kind])
    due = today + timedelta(days=rng.randint(*PROMISE_DUE_DAYS))
    day = today - timedelta(days=rng.randint(*PAST_DAYS))
    channel, other_channel = rng.sample(CHANNELS, 2)
    slots = {
        "order": f"#W{rng.randrange(10**6, 10**7)}",
        "amount": f"${rng.randint(5, 900)}.{rng.randrange(100):02d}",
        "item": rng.choice(ITEMS),
        "due": due.isoformat(),
        "day": day.isoformat(),
        "warranty": (day + timedelta(days=WARRANTY_DAYS)).isoformat(),
        "channel": channel,
        "other_channel": other_channel,
        "hour": str(rng.randint(5, 8)),
        "language": rng.choice(LANGUAGES),
        "city": rng.choice(CITIES),
        "courier": rng.choice(COURIERS),
        "vat": f"{rng.choice(VAT_PREFIXES)}{rng.randrange(10**8, 10**9)}",
    }
    first_message = rng.randrange(1, 10**6)
    conclusion = Conclusion(
        customer_id=customer_id(customer),
        kind=kind,
        text=template.format(**slots),
        source=rng.choice(list(ConclusionSource)),
        due_date=due if kind is ConclusionKind.PROMISE else None,
        identifiers=tuple(slots[name] for name in IDENTIFIER_SLOTS if f"{{{name}}}" in template),
        conversation_id=rng.randrange(1, 10**6),
        message_range=(first_message, first_message + rng.randint(2, 40)),
    )
    return Draw(conclusion, slots)


def bulk_draw(index: int, settings: BenchmarkSettings) -> Draw:
    """Bulk memory ``index``: memories go round the customers, so every customer has size / customers of them."""
    return draw(f"{settings.seed}:bulk", index, index % settings.customers, today=date.fromisoformat(settings.today))


def customer_bulk_indices(customer: int, loaded: int, settings: BenchmarkSettings) -> range:
    return range(customer, loaded, settings.customers)


def recall_pairs(count: int, loaded: int, settings: BenchmarkSettings) -> list[tuple[str, str]]:
    """(customer, question) pairs: a random customer asking about one of their own loaded memories."""
    rng = random.Random(f"{settings.seed}:queries:{loaded}")
    pairs = []
    for _ in range(count):
        customer = rng.randrange(min(settings.customers, loaded))
        drawn = bulk_draw(rng.choice(customer_bulk_indices(customer, loaded, settings)), settings)
        question = rng.choice(QUERY_TEMPLATES[drawn.conclusion.kind]).format(**drawn.slots)
        pairs.append((drawn.conclusion.customer_id, question))
    return pairs


def fresh_conclusions(count: int, namespace: str, settings: BenchmarkSettings) -> list[Conclusion]:
    """New conclusions for random customers, none of them among the bulk (their own seed namespace)."""
    rng = random.Random(f"{settings.seed}:{namespace}:customers")
    today = date.fromisoformat(settings.today)
    return [
        draw(f"{settings.seed}:{namespace}", index, rng.randrange(settings.customers), today=today).conclusion
        for index in range(count)
    ]


# -- loading straight into Mem0's vector store ----------------------------------------------------------------------
def mem0_payload(conclusion: Conclusion, *, created_at: str) -> dict[str, Any]:
    """The payload Mem0 2.2 stores for ``CustomerMemory.remember(conclusion)``: ``add(infer=False)`` builds the
    metadata with ``user_id`` (``_build_filters_and_metadata``), adds ``expiration_date`` and the message role, then
    ``_create_memory`` adds data, hash, created_at, updated_at and text_lemmatized."""
    from mem0.utils.lemmatization import lemmatize_for_bm25

    payload = conclusion.metadata()
    payload["user_id"] = conclusion.customer_id
    expiration = conclusion.expiration_date
    if expiration is not None:
        payload["expiration_date"] = expiration.isoformat()
    payload["role"] = "user"
    payload["data"] = conclusion.text
    payload["hash"] = hashlib.md5(conclusion.text.encode(), usedforsecurity=False).hexdigest()
    payload["created_at"] = created_at
    payload["updated_at"] = created_at
    payload["text_lemmatized"] = lemmatize_for_bm25(conclusion.text)
    return payload


def bulk_memory_id(index: int, settings: BenchmarkSettings) -> str:
    digest = hashlib.sha256(f"{settings.seed}:id:{index}".encode()).digest()[:16]
    return str(uuid.UUID(bytes=digest, version=4))


def bulk_load(store: CustomerMemory, indices: range, settings: BenchmarkSettings) -> float:
    """Write bulk memories ``indices`` through Mem0's vector store in batches; returns the seconds it took."""
    vector_store = store._mem0.vector_store  # the benchmark loads beneath the facade on purpose (module docstring)
    embedder = store._mem0.embedding_model
    started = time.perf_counter()
    for first in range(indices.start, indices.stop, LOAD_BATCH):
        batch = range(first, min(first + LOAD_BATCH, indices.stop))
        conclusions = [bulk_draw(index, settings).conclusion for index in batch]
        created_at = datetime.now(UTC).isoformat()
        vector_store.insert(
            vectors=[embedder.embed(conclusion.text, "add") for conclusion in conclusions],
            payloads=[mem0_payload(conclusion, created_at=created_at) for conclusion in conclusions],
            ids=[bulk_memory_id(index, settings) for index in batch],
        )
    return time.perf_counter() - started


class PgvectorTable:
    """DDL on the table Mem0's pgvector provider creates (``id``, ``vector``, ``payload`` JSONB), on a connection
    of the benchmark's own."""

    def __init__(self, url: str, table: str) -> None:
        import psycopg
        from psycopg import sql

        self._sql = sql
        self._connection = psycopg.connect(url, autocommit=True)
        self.table = table
        self.vector_index = f"{table}_hnsw_idx"  # Mem0's name and definition (mem0/vector_stores/pgvector.py)
        self.customer_index = f"{table}_user_id_idx"

    def _execute(self, statement: str, *names: str) -> None:
        query = self._sql.SQL(statement).format(*(self._sql.Identifier(name) for name in names))
        self._connection.execute(query)

    def drop_vector_index(self) -> None:
        self._execute("DROP INDEX IF EXISTS {}", self.vector_index)

    def create_vector_index(self) -> float:
        started = time.perf_counter()
        self._connection.execute(f"SET maintenance_work_mem = '{HNSW_BUILD_MEMORY}'")
        self._connection.execute(f"SET max_parallel_maintenance_workers = {HNSW_BUILD_WORKERS}")
        self._execute("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (vector vector_cosine_ops)",
                      self.vector_index, self.table)  # fmt: skip
        return time.perf_counter() - started

    def vacuum_analyze(self) -> float:
        """What autovacuum does some time after a bulk insert; done now so that it does not run mid-measurement."""
        started = time.perf_counter()
        self._execute("VACUUM (ANALYZE) {}", self.table)
        return time.perf_counter() - started

    def drop_customer_index(self) -> None:
        self._execute("DROP INDEX IF EXISTS {}", self.customer_index)
        self._execute("ANALYZE {}", self.table)

    def create_customer_index(self) -> float:
        started = time.perf_counter()
        self._execute("CREATE INDEX IF NOT EXISTS {} ON {} ((payload->>'user_id'))", self.customer_index, self.table)
        self._execute("ANALYZE {}", self.table)
        return time.perf_counter() - started

    def size_mib(self) -> float:
        row = self._connection.execute("SELECT pg_total_relation_size(%s::regclass)", (self.table,)).fetchone()
        return round(int(row[0]) / BYTES_PER_MIB, 1) if row else 0.0

    def versions(self) -> dict[str, str]:
        server = self._connection.execute("SHOW server_version").fetchone()
        vector = self._connection.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        return {"postgresql": str(server[0]) if server else "?", "pgvector": str(vector[0]) if vector else "?"}

    def close(self) -> None:
        self._connection.close()


# -- measuring ------------------------------------------------------------------------------------------------------
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
    LABEL_QDRANT: "Qdrant local mode in a directory, on_disk vectors (memdesk's embedded default)",
    LABEL_PGVECTOR: "Mem0's table as it creates it: HNSW (vector_cosine_ops) and GIN on text_lemmatized, nothing else",
    LABEL_PGVECTOR_INDEXED: "the same table plus CREATE INDEX ON <table> ((payload->>'user_id'))",
}


def close_store(store: CustomerMemory) -> None:
    store.close()
    pool = getattr(store._mem0.vector_store, "connection_pool", None)  # CustomerMemory.close leaves it open
    if pool is not None:
        pool.close()


def reopened(store: CustomerMemory) -> CustomerMemory:
    """The same store on new connections. psycopg prepares a statement it runs often, and PostgreSQL may then keep
    a generic plan for it, made without the indexes created since and unable to use the customer-id index anyway
    (Mem0 binds the JSON key as a parameter): each pgvector variant is measured on connections of its own."""
    close_store(store)
    return CustomerMemory(store.options)


def run_store(
    store_name: str,
    sizes: Sequence[int],
    *,
    data_dir: Path,
    settings: BenchmarkSettings,
    pgvector_url: str | None = None,
) -> dict[str, Any]:
    """Everything measured on one store (``qdrant`` or ``pgvector``), sizes loaded one after the other."""
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
    report[LABEL_QDRANT if table is None else LABEL_PGVECTOR]["warnings"] = first_warnings(caught)
    return report


def _run_sizes(
    options: MemoryOptions, table: PgvectorTable | None, sizes: Sequence[int], settings: BenchmarkSettings
) -> dict[str, dict[str, Any]]:
    label = LABEL_QDRANT if table is None else LABEL_PGVECTOR
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


# -- the whole run --------------------------------------------------------------------------------------------------
class BenchmarkPostgres:
    """A PostgreSQL server with pgvector (pgserver) in a directory of the run, stopped at the end."""

    def __init__(self, root: Path) -> None:
        if not os.environ.get("XDG_RUNTIME_DIR"):  # pgserver keeps its lock file there (read at import)
            runtime = tempfile.mkdtemp(prefix="memdesk-memory-bench-runtime-")
            # pgserver's exit hook takes that lock once more; hooks run last-registered first, so this one runs after.
            atexit.register(shutil.rmtree, runtime, ignore_errors=True)
            os.environ["XDG_RUNTIME_DIR"] = runtime
        from pgserver.postgres_server import get_server

        self._server = get_server(str(root / "pgdata"), cleanup_mode="stop")

    def create_database(self, name: str) -> str:
        self._server.psql(f"CREATE DATABASE {name};")
        socket_dir = self._server.get_uri().split("host=")[-1]
        return f"postgresql://postgres:@/{name}?host={socket_dir}"

    def stop(self) -> None:
        self._server.cleanup()


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
        cwd=Path(__file__).resolve().parents[1], env=env, stdout=subprocess.PIPE, text=True,
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
    "remember": "CustomerMemory.remember, one fresh conclusion per call (content-hash lookup, Mem0 add(infer=False), "
    "supersession lookup), after the recall measurement; those memories stay in the store; remember_lookups / "
    "remember_insert: time inside Mem0's vector_store.list / insert per call",
    "pgvector_variants": "each variant runs on new connections (CustomerMemory reopened after the index change): "
    "statements psycopg prepared may keep plans made before the customer-id index existed",
    "rss_mb": "VmRSS of the store's own process after loading each size, MiB; PostgreSQL's memory is not in it "
    "(table_mb is the table with its indexes)",
    "budget": f"each measuring phase stops at its sample count or after phase_budget_s, never below {MIN_SAMPLES}",
}


def verdict(stores: dict[str, Any], embedding: dict[str, Any]) -> dict[str, Any]:
    """Recall p95 at each store's largest size against the target; with the local embedder added when measured."""
    minilm = embedding.get("minilm_onnx", {}).get("embed_p95_ms")
    summary: dict[str, Any] = {}
    for label, section in stores.items():
        sizes = section.get("sizes") or {}
        if not sizes:
            continue
        largest = max(sizes, key=int)
        p95 = sizes[largest]["recall_p95_ms"]
        summary[label] = {
            "memories": int(largest),
            "recall_p95_ms": p95,
            "meets_target": p95 <= TARGET_RECALL_P95_MS,
            "at_target_size": int(largest) >= TARGET_MEMORIES,
        }
        if minilm is not None:
            # p95 of the sum is at most the sum of the p95s: a conservative estimate.
            summary[label]["recall_p95_with_local_embedder_ms_at_most"] = round(p95 + minilm, 2)
    return summary


def run(sizes: Sequence[int], stores: Sequence[str], settings: BenchmarkSettings) -> dict[str, Any]:
    started = time.perf_counter()
    report: dict[str, Any] = {
        "benchmark": "memory",
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                    **{name: metadata.version(name) for name in ("mem0ai", "qdrant-client")},
                    # Mem0's optional extras: without spaCy it indexes the raw text for keyword search and extracts
                    # no entities; without fastembed its Qdrant store has no BM25 keyword search.
                    "installed": {name: find_spec(name) is not None for name in ("spacy", "fastembed")}},
        "target": {"recall_p95_ms": TARGET_RECALL_P95_MS, "memories": TARGET_MEMORIES},
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
        questions = [question for _, question in recall_pairs(EMBEDDING_QUERIES, max(sizes), settings)]
        report["embedding"] = embedding_timings(questions, root / "embedding")
    report["verdict"] = verdict(report["stores"], report["embedding"])
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    return report


def sanity_failed(report: dict[str, Any]) -> bool:
    return any(
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
    report = run(args.sizes, args.stores, settings)
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))
    return 1 if sanity_failed(report) else 0


if __name__ == "__main__":
    sys.exit(main())
