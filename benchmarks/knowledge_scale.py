"""The knowledge benchmark's scale part: ``search_knowledge`` latency at 100k chunks, on the embedded default (SQLite:
FTS5 and the in-process vector matrix) and on PostgreSQL with pgvector (a pgserver of the run's own: the GIN
full-text index and the HNSW index).

Per store: the labelled articles are imported with the local MiniLM embedder, then synthetic variations of them
(other products, cities, figures and sentence order, so full-text ranking meets realistic term statistics) through
the same ``import_documents`` until the chunk count is reached. Embedding 100k chunks with MiniLM would take about
ten minutes of the two cores, so the variations are embedded by the hashing embedder (``bulk_vectors`` in the
output); exact and HNSW search cost the same whatever the vectors hold. Questions are then embedded by MiniLM, as in
the app: each timed call is ``search_knowledge`` on a new session, the question's embedding included. On PostgreSQL
the HNSW index is dropped during the bulk load and built once after it (as a restore would), then the tables are
vacuumed and analysed so autovacuum does not run mid-measurement.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.harness.measure import percentile
from benchmarks.knowledge_setup import LabelledSet, chunk_count, fresh_sqlite_engine, local_vectors, timed_import

if TYPE_CHECKING:
    from app.knowledge.types import SourceDocument

TARGET_CHUNKS = 100_000
QUICK_SCALE_CHUNKS = 3_000
TARGET_SEARCH_P95_MS = 15.0
STORES = ("sqlite", "pgvector")
SEARCH_SAMPLES = 300
SEARCH_WARMUP = 20
SYNTHETIC_SOURCE = "synthetic-variations"
SEED = 11
ROUND_DOCUMENTS = 5_000  # per import_documents call: progress in the log, and a bound on what one round holds
HNSW_BUILD_MEMORY = "1GB"
PG_VECTOR_INDEX = "ix_knowledge_vectors_embedding"  # 0014_knowledge's name and definition
PG_VECTOR_INDEX_DDL = f"CREATE INDEX {PG_VECTOR_INDEX} ON knowledge_vectors USING hnsw (embedding vector_cosine_ops)"
_NUMBER = re.compile(r"\b\d+\b")


def variations(articles_dir: Path, *, seed: int = SEED) -> Iterator[SourceDocument]:
    """Endless variations of the labelled articles: another product and city named, the figures redrawn, the
    paragraphs of each section shuffled."""
    from app.demo_shop.catalog import CITIES, PRODUCTS
    from app.knowledge.types import SourceDocument

    texts = [(path.relative_to(articles_dir).as_posix(), path.read_text("utf-8"))
             for path in sorted(articles_dir.rglob("*.md"))]  # fmt: skip
    names = [product.name for product in PRODUCTS]
    rng = random.Random(seed)
    number = 0
    while True:
        for locator, markdown in texts:
            number += 1
            product, city = rng.choice(PRODUCTS), rng.choice(CITIES)
            body = markdown
            for name in names:
                body = body.replace(name, product.name)
            body = _NUMBER.sub(lambda match: str(rng.randrange(1, 10 ** len(match.group(0)))), body)
            sections = body.split("\n## ")
            for index, section in enumerate(sections):
                paragraphs = section.split("\n\n")
                head, rest = paragraphs[:1], paragraphs[1:]
                rng.shuffle(rest)
                sections[index] = "\n\n".join(head + rest)
            title = f"{product.name} in {city.name}: variation {number}"
            markdown_out = f"# {title}\n\n" + "\n## ".join(sections).split("\n", 1)[1]
            yield SourceDocument(locator=f"variation-{number}/{locator}", title=title, markdown=markdown_out)


def bulk_load(engine: Any, articles_dir: Path, target_chunks: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Variations through the real importer (hashing vectors) until ``target_chunks`` chunks are stored."""
    from app.knowledge.importer import import_documents
    from app.knowledge.vectors import KnowledgeVectors
    from memory.embedders import HashingEmbedder

    vectors = KnowledgeVectors(HashingEmbedder())
    started = time.perf_counter()
    stream = variations(articles_dir)
    documents, have = 0, chunk_count(engine)
    chunks_per_document = max(1.0, have / max(1, _document_count(engine)))
    while have < target_chunks:
        # Chunks per document vary: each round imports what the last one's ratio says is missing, then recounts.
        wanted = math.ceil((target_chunks - have) / chunks_per_document)
        batch = [next(stream) for _ in range(max(1, min(wanted, ROUND_DOCUMENTS)))]
        import_documents(engine, SYNTHETIC_SOURCE, batch, vectors=vectors)
        documents += len(batch)
        now = chunk_count(engine)
        chunks_per_document = max(1.0, (now - have) / len(batch))
        have = now
        log(f"bulk: {have} chunks")
    return {"bulk_documents": documents, "bulk_load_s": round(time.perf_counter() - started, 1),
            "bulk_vectors": "hashing embedder (the labelled articles: MiniLM)"}  # fmt: skip


def _document_count(engine: Any) -> int:
    from sqlalchemy import func, select
    from sqlmodel import Session

    from app.models.knowledge import KnowledgeDocument

    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(KnowledgeDocument)).one()[0])


def time_searches(engine: Any, questions: Sequence[str], samples: int) -> dict[str, Any]:
    from sqlmodel import Session

    from app.knowledge.search import search_knowledge

    latencies, found = [], 0
    for index in range(SEARCH_WARMUP + samples):
        query = questions[index % len(questions)]
        with Session(engine) as session:
            started = time.perf_counter()
            hits = search_knowledge(session, query, limit=5)
            elapsed_ms = (time.perf_counter() - started) * 1000
        if index >= SEARCH_WARMUP:
            latencies.append(elapsed_ms)
            found += bool(hits)
    p95 = round(percentile(latencies, 0.95), 2)
    return {"search_ms_p50": round(percentile(latencies, 0.5), 2), "search_ms_p95": p95, "search_samples": samples,
            "searches_with_hits": found, "meets_target": p95 <= TARGET_SEARCH_P95_MS}  # fmt: skip


def measure_store(engine: Any, labelled: LabelledSet, target_chunks: int, log: Callable[[str], None],
                  before_search: Callable[[], None] | None = None) -> dict[str, Any]:  # fmt: skip
    local_vectors(engine)
    timed_import(engine, labelled.articles_dir)
    figures = bulk_load(engine, labelled.articles_dir, target_chunks, log)
    if before_search is not None:
        before_search()
    local_vectors(engine)  # a fresh matrix on SQLite: the first (warm-up) search loads every vector
    figures["chunks"] = chunk_count(engine)
    questions = [question.text for question in labelled.questions]
    return figures | time_searches(engine, questions, SEARCH_SAMPLES)


def measure_sqlite(labelled: LabelledSet, target_chunks: int, work_dir: Path, log: Callable[[str], None]) -> Any:
    directory = work_dir / "scale-sqlite"
    directory.mkdir(parents=True, exist_ok=True)
    engine = fresh_sqlite_engine(directory)
    try:
        return measure_store(engine, labelled, target_chunks, log)
    finally:
        engine.dispose()


def measure_pgvector(labelled: LabelledSet, target_chunks: int, work_dir: Path, log: Callable[[str], None]) -> Any:
    from sqlalchemy import text

    from app.db import create_db_engine, upgrade
    from benchmarks.memory.pgvector import BenchmarkPostgres

    (work_dir / "scale-pg").mkdir(parents=True, exist_ok=True)
    server = BenchmarkPostgres(work_dir / "scale-pg")
    try:
        url = server.create_database("memdesk_knowledge_bench").replace("postgresql://", "postgresql+psycopg://")
        engine = create_db_engine(url)
        upgrade(engine)
        with engine.begin() as connection:
            connection.execute(text(f"DROP INDEX {PG_VECTOR_INDEX}"))

        def build_index() -> None:
            started = time.perf_counter()
            with engine.connect() as connection:
                connection.execute(text(f"SET maintenance_work_mem = '{HNSW_BUILD_MEMORY}'"))
                connection.execute(text(PG_VECTOR_INDEX_DDL))
                connection.commit()
                connection.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
            log(f"pgvector: HNSW index and VACUUM ANALYZE in {time.perf_counter() - started:.1f} s")

        try:
            return measure_store(engine, labelled, target_chunks, log, before_search=build_index)
        finally:
            engine.dispose()
    finally:
        server.stop()


def measure_scale(labelled: LabelledSet, target_chunks: int, stores: Sequence[str], *, work_dir: Path,
                  log: Callable[[str], None]) -> dict[str, Any]:  # fmt: skip
    measures = {"sqlite": measure_sqlite, "pgvector": measure_pgvector}
    result = {}
    for store in stores:
        result[store] = measures[store](labelled, target_chunks, work_dir, log)
        log(f"{store}: {result[store]['chunks']} chunks, search p95 {result[store]['search_ms_p95']} ms")
    return result
