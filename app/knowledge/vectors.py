"""Chunk embeddings: made by the same embedder as long-term memory, kept in ``knowledge_vectors``, searched by cosine.

``KnowledgeVectors`` is one database's embedding side: its embedder (MiniLM on this machine by default, the hashing
embedder in tests, or an OpenAI-compatible endpoint, as ``MEMDESK_MEMORY_EMBEDDER`` says) and, on SQLite, an
in-process matrix of every chunk's vector.

- Writing (``write``): one row per chunk, in the caller's transaction, so a document's vectors are stored with its
  chunks or not at all. SQLite keeps a little-endian float32 BLOB, PostgreSQL a pgvector ``vector(384)``.
- Searching (``searcher(session)``): one ``VectorSearcher`` per knowledge search, which finds the nearest vectors
  and scores named chunks. On SQLite it holds the in-process ``VectorMatrix`` (``app.knowledge.vector_matrix``:
  exact up to 20k chunks, a sign-bit prefilter then exact rescoring above). Making one reads the chunk count and
  revision that triggers keep in ``knowledge_chunk_counts``: every insert and delete of a chunk raises the
  revision. When it changed, the matrix reads only the vectors of chunks newer than its highest id (chunk ids are
  never reused) and, if its row count then differs from the chunk count, drops those of deleted chunks, so a
  re-import, a prune or an erasure is reflected at the next search. The count is handed on
  (``chunk_count``), so the full-text side need not count again.
- Searching on PostgreSQL: the HNSW index (``ORDER BY embedding <=> :q``); several servers share it.

Lifecycle: ``vectors_for(engine)`` returns the one ``KnowledgeVectors`` of that engine in this process, built on
first use with the embedder the settings name, unless ``attach_vectors`` gave it one first (the app's services and
tests do). The embedder loads its model on its first text, not before.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine, bindparam, text
from sqlmodel import Session

from app.knowledge.vector_matrix import EMBEDDING_DIMS, FloatMatrix, VectorMatch, VectorMatrix

if TYPE_CHECKING:
    from app.settings import Settings

VECTOR_TABLE = "knowledge_vectors"
COUNTS_TABLE = "knowledge_chunk_counts"  # SQLite's, kept by triggers (0019_knowledge_chunk_counts)
SQLITE_VECTOR_DTYPE = np.dtype("<f4")
# The pgvector literal's precision: float32 carries about 7 significant digits.
PG_VECTOR_DIGITS = 7


class TextEmbedder(Protocol):
    """What memory's embedders offer (Mem0's ``EmbeddingBase``): one text, or a batch."""

    def embed(self, text: str, memory_action: Any = None) -> list[float]: ...

    def embed_batch(self, texts: Sequence[str], memory_action: Any = "add") -> list[list[float]]: ...


def embedder_from_settings(settings: Settings) -> TextEmbedder:
    """The embedder long-term memory uses with these settings, built for the knowledge (nothing loads yet)."""
    from app.customer_memory.options import memory_options
    from memory.config import EmbedderKind, prepare_environment

    options = memory_options(settings)
    prepare_environment(options)  # memory.embedders imports mem0, which must not start its telemetry
    from memory.embedders import HashingEmbedder, local_embedder

    if options.embedder is EmbedderKind.HASHING:
        return HashingEmbedder(EMBEDDING_DIMS)
    if options.embedder is EmbedderKind.LOCAL:
        return local_embedder()
    return _endpoint_embedder(options)


def _endpoint_embedder(options: Any) -> TextEmbedder:
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.embeddings.openai import OpenAIEmbedding

    from memory.config import MemoryConfigError
    from memory.store import EMBEDDING_MAX_RETRIES, EMBEDDING_REQUEST_TIMEOUT_S

    if not options.embedding_base_url:
        raise MemoryConfigError("The openai embedder needs MEMDESK_MEMORY_EMBEDDING_BASE_URL.")
    config = BaseEmbedderConfig(
        model=options.embedding_model,
        api_key=options.embedding_api_key or "unused",
        openai_base_url=options.embedding_base_url,
        embedding_dims=EMBEDDING_DIMS,
    )
    embedder = OpenAIEmbedding(config)
    embedder.client = embedder.client.with_options(
        timeout=EMBEDDING_REQUEST_TIMEOUT_S, max_retries=EMBEDDING_MAX_RETRIES
    )
    result: TextEmbedder = embedder
    return result


def embed_texts(embedder: TextEmbedder, texts: Sequence[str]) -> FloatMatrix:
    """``texts`` embedded as a ``(len(texts), 384)`` float32 matrix of unit vectors."""
    if not texts:
        return np.zeros((0, EMBEDDING_DIMS), dtype=np.float32)
    encode = getattr(embedder, "encode", None)  # the local model gives its matrix without a detour through lists
    batch = encode(list(texts)) if callable(encode) else embedder.embed_batch(list(texts))
    matrix = np.asarray(batch, dtype=np.float32)
    if matrix.shape != (len(texts), EMBEDDING_DIMS):
        raise ValueError(
            f"The embedder returned vectors of shape {matrix.shape[1:]}; the knowledge stores {EMBEDDING_DIMS} "
            "dimensions (set the embeddings endpoint's model to one that can return 384)."
        )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # An endpoint's vectors are not always normalised; a cosine is then a plain dot product.
    normalised: FloatMatrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return normalised


def embedding_text(heading_path: str, text_: str) -> str:
    """What is embedded for a chunk: its heading path (which starts with the document's title), then its text."""
    return f"{heading_path}\n\n{text_}" if heading_path else text_


def pg_vector_literal(vector: npt.NDArray[np.float32]) -> str:
    return "[" + ",".join(f"{value:.{PG_VECTOR_DIGITS}g}" for value in vector.tolist()) + "]"


class VectorSearcher(Protocol):
    """Vector search over one database as of one moment: what a single knowledge search asks of the vectors."""

    @property
    def chunk_count(self) -> int | None:
        """How many chunks there are, where the searcher learnt it anyway (SQLite), else None."""
        ...

    def nearest(self, query: FloatMatrix, limit: int) -> list[VectorMatch]:
        """The ``limit`` chunks whose vectors are closest to ``query`` (a unit vector), most similar first."""
        ...

    def similarities(self, query: FloatMatrix, chunk_ids: Sequence[int]) -> dict[int, float]:
        """The cosine similarity of ``query`` to each of ``chunk_ids`` that has a vector."""
        ...


@dataclass(frozen=True)
class MatrixSearcher:
    """SQLite's: the in-process matrix as of the moment the searcher was made."""

    vectors: VectorMatrix
    chunk_count: int | None

    def nearest(self, query: FloatMatrix, limit: int) -> list[VectorMatch]:
        return self.vectors.nearest(query, limit)

    def similarities(self, query: FloatMatrix, chunk_ids: Sequence[int]) -> dict[int, float]:
        return self.vectors.similarities(query, chunk_ids) if chunk_ids else {}


@dataclass(frozen=True)
class _PostgresSearcher:
    session: Session
    chunk_count: int | None = None

    def nearest(self, query: FloatMatrix, limit: int) -> list[VectorMatch]:
        if limit <= 0:
            return []
        rows = self.session.execute(
            text(
                f"SELECT chunk_id, 1 - (embedding <=> CAST(:q AS vector)) FROM {VECTOR_TABLE} "
                "ORDER BY embedding <=> CAST(:q AS vector) LIMIT :limit"
            ),
            {"q": pg_vector_literal(query), "limit": limit},
        ).all()
        return [VectorMatch(int(row[0]), float(row[1])) for row in rows]

    def similarities(self, query: FloatMatrix, chunk_ids: Sequence[int]) -> dict[int, float]:
        if not chunk_ids:
            return {}
        rows = self.session.execute(
            text(
                f"SELECT chunk_id, 1 - (embedding <=> CAST(:q AS vector)) FROM {VECTOR_TABLE} WHERE chunk_id IN :ids"
            ).bindparams(bindparam("ids", expanding=True)),
            {"q": pg_vector_literal(query), "ids": list(chunk_ids)},
        ).all()
        return {int(row[0]): float(row[1]) for row in rows}


class KnowledgeVectors:
    """The chunk embeddings of one database: writing them, and searching them."""

    def __init__(self, embedder: TextEmbedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._matrix = VectorMatrix.empty()
        self._loaded_at: tuple[int, int] | None = None  # (chunk count, revision) the matrix reflects

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        return embed_texts(self.embedder, texts)

    def embed_query(self, query: str) -> FloatMatrix:
        vector: FloatMatrix = self.embed([query])[0]
        return vector

    def write(self, session: Session, chunk_ids: Sequence[int], matrix: FloatMatrix) -> None:
        """Store one vector per chunk in the session's transaction."""
        if not chunk_ids:
            return
        if _is_postgres(session):
            rows = [
                {"id": chunk_id, "v": pg_vector_literal(row)} for chunk_id, row in zip(chunk_ids, matrix, strict=True)
            ]
            statement = f"INSERT INTO {VECTOR_TABLE} (chunk_id, embedding) VALUES (:id, CAST(:v AS vector))"
        else:
            rows = [
                {"id": chunk_id, "v": row.astype(SQLITE_VECTOR_DTYPE).tobytes()}
                for chunk_id, row in zip(chunk_ids, matrix, strict=True)
            ]
            statement = f"INSERT INTO {VECTOR_TABLE} (chunk_id, embedding) VALUES (:id, :v)"
        session.execute(text(statement), rows)

    def searcher(self, session: Session) -> VectorSearcher:
        """Search as of the database's current chunks: on SQLite, the matrix refreshed first if they changed."""
        if _is_postgres(session):
            return _PostgresSearcher(session)
        count, revision = session.execute(text(f"SELECT chunks, revision FROM {COUNTS_TABLE} WHERE id = 1")).one()
        state = (int(count), int(revision))
        with self._lock:
            if state != self._loaded_at:
                self._matrix = self._refreshed(session, state[0])
                self._loaded_at = state
            return MatrixSearcher(self._matrix, state[0])

    def _refreshed(self, session: Session, chunk_count: int) -> VectorMatrix:
        rows = session.execute(
            text(f"SELECT chunk_id, embedding FROM {VECTOR_TABLE} WHERE chunk_id > :after ORDER BY chunk_id"),
            {"after": self._matrix.highest_id},
        ).all()
        matrix = self._matrix
        if rows:
            new_ids = np.fromiter((int(row[0]) for row in rows), dtype=np.int64, count=len(rows))
            new_rows = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype=SQLITE_VECTOR_DTYPE)
            matrix = matrix.appended(new_ids, new_rows.reshape(len(rows), EMBEDDING_DIMS).astype(np.float32))
        if len(matrix) != chunk_count:
            # Some chunks went away (or some never had a vector): keep the rows of the chunks that remain. The
            # chunk ids come from an index, far smaller to read than the vectors.
            remaining = np.fromiter(
                (int(row[0]) for row in session.execute(text("SELECT id FROM knowledge_chunks"))), dtype=np.int64
            )
            matrix = matrix.kept(remaining)
        return matrix


def _is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


_by_engine: weakref.WeakKeyDictionary[Engine, KnowledgeVectors] = weakref.WeakKeyDictionary()
_by_engine_lock = threading.Lock()


def attach_vectors(engine: Engine, embedder: TextEmbedder) -> KnowledgeVectors:
    """Make ``embedder`` the one that embeds chunks and questions for ``engine``'s database in this process."""
    vectors = KnowledgeVectors(embedder)
    with _by_engine_lock:
        _by_engine[engine] = vectors
    return vectors


def vectors_for(engine: Engine) -> KnowledgeVectors:
    """``engine``'s ``KnowledgeVectors``; the first call without ``attach_vectors`` builds the settings' embedder."""
    with _by_engine_lock:
        found = _by_engine.get(engine)
        if found is None:
            from app.settings import get_settings

            found = _by_engine[engine] = KnowledgeVectors(embedder_from_settings(get_settings()))
        return found


def session_vectors(session: Session) -> KnowledgeVectors:
    bind = session.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine
    return vectors_for(engine)
