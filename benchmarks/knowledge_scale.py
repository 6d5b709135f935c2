"""The knowledge benchmark's scale part: ``search_knowledge`` latency at 100k chunks, on the embedded default (SQLite:
FTS5 and the in-process vector matrix) and on PostgreSQL with pgvector (a pgserver of the run's own: the GIN
full-text index and the HNSW index).

Per store: the labelled articles are imported with the local MiniLM embedder, then synthetic variations of them
(other products, cities, figures and sentence order, so full-text ranking meets realistic term statistics) through
the same ``import_documents`` until the chunk count is reached, embedded by MiniLM too (with two threads, each text
once per run: the second store reuses the first's vectors). Search speed and the quality of approximate search
depend on how the vectors lie: an HNSW graph over random vectors finds MiniLM neighbours far worse than over
MiniLM's own. Before the clock starts, the store is warmed as a server warms it when it starts (``warm_s``: the
vector matrix and, on SQLite, the trigram counts). Questions are embedded by MiniLM, as in the app: each timed call
is ``search_knowledge`` on a new session, the question's embedding included. On PostgreSQL the HNSW index is
dropped during the bulk load and built once after it (as a restore would), then the tables are vacuumed and analysed
so autovacuum does not run mid-measurement. ``quality_at_scale`` then asks the labelled questions of the whole
store.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from benchmarks.harness.measure import percentile
from benchmarks.knowledge_quality import confidence_figures, rank_questions, ranking_figures
from benchmarks.knowledge_setup import (
    LabelledSet,
    article_by_document,
    chunk_count,
    fresh_sqlite_engine,
    local_vectors,
    timed_import,
)

if TYPE_CHECKING:
    from app.knowledge.types import SourceDocument

TARGET_CHUNKS = 100_000
QUICK_SCALE_CHUNKS = 3_000
TARGET_SEARCH_P95_MS = 15.0
STORES = ("sqlite", "pgvector")
SEARCH_SAMPLES = 300
SEARCH_WARMUP = 20
VECTOR_RECALL_AT = 20  # as many vector candidates as a search of five hits takes
SYNTHETIC_SOURCE = "synthetic-variations"
SEED = 11
ROUND_DOCUMENTS = 5_000  # per import_documents call: progress in the log, and a bound on what one round holds
HNSW_BUILD_MEMORY = "1GB"
BULK_EMBEDDING_THREADS = 2
BULK_EMBEDDING_BATCH = 64
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


class RememberedEmbeddings:
    """The local MiniLM embedder, each text embedded once per run: the SQLite and PostgreSQL stores hold the same
    variations, so the second store's bulk load costs no embedding. Two threads: nothing else runs meanwhile."""

    def __init__(self) -> None:
        from memory.embedders import MiniLMOnnxEmbedder

        self._embedder = MiniLMOnnxEmbedder(intra_op_threads=BULK_EMBEDDING_THREADS)
        self._known: dict[str, npt.NDArray[np.float32]] = {}

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        missing = [text for text in dict.fromkeys(texts) if text not in self._known]
        for start in range(0, len(missing), BULK_EMBEDDING_BATCH):
            batch = missing[start : start + BULK_EMBEDDING_BATCH]
            self._known.update(zip(batch, self._embedder.encode(batch), strict=True))
        return np.stack([self._known[text] for text in texts]) if texts else np.zeros((0, 384), dtype=np.float32)

    def embed(self, text: str, memory_action: Any = None) -> list[float]:
        return [float(value) for value in self.encode([text])[0]]

    def embed_batch(self, texts: Sequence[str], memory_action: Any = "add") -> list[list[float]]:
        return [[float(value) for value in row] for row in self.encode(texts)]


def bulk_load(engine: Any, articles_dir: Path, target_chunks: int, log: Callable[[str], None],
              embeddings: RememberedEmbeddings) -> dict[str, Any]:  # fmt: skip
    """Variations through the real importer (MiniLM vectors) until ``target_chunks`` chunks are stored."""
    from app.knowledge.importer import import_documents
    from app.knowledge.vectors import KnowledgeVectors

    vectors = KnowledgeVectors(embeddings)
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
            "bulk_vectors": "local MiniLM, as the labelled articles"}  # fmt: skip


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


def quality_at_scale(engine: Any, labelled: LabelledSet) -> dict[str, Any]:
    """The labelled questions against the whole store, what the speed rules of a large store cost: hybrid
    ``recall_at_5`` and ``no_answer_precision`` (a synthetic variation answers nothing, though it shares most of its
    article's words), and, on SQLite, ``vector_recall_at_20``: the share of the exact 20 nearest vectors that the
    sign-bit prefilter also returns."""
    from sqlmodel import Session

    from app.knowledge.search import CONFIDENCE_THRESHOLD, search_knowledge
    from app.knowledge.vectors import MatrixSearcher, vectors_for

    articles = article_by_document(engine, labelled.article_ids)
    vectors = vectors_for(engine)
    overlaps: list[float] = []
    with Session(engine) as session:
        ranked = rank_questions(labelled.questions, lambda query: search_knowledge(session, query, limit=5), articles)
        searcher = vectors.searcher(session)
        if isinstance(searcher, MatrixSearcher):
            for question in labelled.questions:
                query = vectors.embed_query(question.text)
                exact = {match.chunk_id for match in searcher.vectors.exact_nearest(query, VECTOR_RECALL_AT)}
                found = {match.chunk_id for match in searcher.vectors.nearest(query, VECTOR_RECALL_AT)}
                overlaps.append(len(exact & found) / max(1, len(exact)))
    figures = ranking_figures(ranked) | confidence_figures(ranked, CONFIDENCE_THRESHOLD)
    quality = {name: figures[name] for name in ("recall_at_5", "mrr", "no_answer_precision", "answerable_confident")}
    if overlaps:
        quality[f"vector_recall_at_{VECTOR_RECALL_AT}"] = round(sum(overlaps) / len(overlaps), 4)
    return quality


def _timed_warm_up(engine: Any) -> float:
    """What a server does in the background when it starts (``app.knowledge.warm``), timed."""
    from app.knowledge.warm import warm_knowledge

    started = time.perf_counter()
    warm_knowledge(engine)
    return round(time.perf_counter() - started, 2)


def measure_store(engine: Any, labelled: LabelledSet, target_chunks: int, log: Callable[[str], None],
                  embeddings: RememberedEmbeddings,
                  before_search: Callable[[], None] | None = None) -> dict[str, Any]:  # fmt: skip
    local_vectors(engine)
    timed_import(engine, labelled.articles_dir)
    figures = bulk_load(engine, labelled.articles_dir, target_chunks, log, embeddings)
    if before_search is not None:
        before_search()
    local_vectors(engine)  # a fresh matrix and fresh trigram counts, as in a server that has just started
    figures["chunks"] = chunk_count(engine)
    figures["warm_s"] = _timed_warm_up(engine)
    questions = [question.text for question in labelled.questions]
    figures |= time_searches(engine, questions, SEARCH_SAMPLES)
    return figures | {"quality": quality_at_scale(engine, labelled)}


def measure_sqlite(labelled: LabelledSet, target_chunks: int, work_dir: Path, log: Callable[[str], None],
                   embeddings: RememberedEmbeddings) -> Any:  # fmt: skip
    directory = work_dir / "scale-sqlite"
    directory.mkdir(parents=True, exist_ok=True)
    engine = fresh_sqlite_engine(directory)
    try:
        return measure_store(engine, labelled, target_chunks, log, embeddings)
    finally:
        engine.dispose()


def measure_pgvector(labelled: LabelledSet, target_chunks: int, work_dir: Path, log: Callable[[str], None],
                     embeddings: RememberedEmbeddings) -> Any:  # fmt: skip
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
            return measure_store(engine, labelled, target_chunks, log, embeddings, before_search=build_index)
        finally:
            engine.dispose()
    finally:
        server.stop()


def measure_scale(labelled: LabelledSet, target_chunks: int, stores: Sequence[str], *, work_dir: Path,
                  log: Callable[[str], None]) -> dict[str, Any]:  # fmt: skip
    measures = {"sqlite": measure_sqlite, "pgvector": measure_pgvector}
    result = {}
    embeddings = RememberedEmbeddings()
    for store in stores:
        result[store] = measures[store](labelled, target_chunks, work_dir, log, embeddings)
        log(f"{store}: {result[store]['chunks']} chunks, search p95 {result[store]['search_ms_p95']} ms")
    return result
