"""Chunk embeddings: made by the same embedder as long-term memory, kept in ``knowledge_vectors``, searched by cosine.

``KnowledgeVectors`` is one database's embedding side: its embedder (MiniLM on this machine by default, the hashing
embedder in tests, or an OpenAI-compatible endpoint, as ``MEMDESK_MEMORY_EMBEDDER`` says) and, on SQLite, an
in-process matrix of every chunk's vector.

- Writing (``write``): one row per chunk, in the caller's transaction, so a document's vectors are stored with its
  chunks or not at all. SQLite keeps a little-endian float32 BLOB, PostgreSQL a pgvector ``vector(384)``.
- Searching on SQLite (``nearest``): the matrix answers a query with one matrix-vector product. Before each
  search it compares the chunk table's row count and highest id with those it was loaded at; chunk ids are never
  reused, so any insert raises the highest id and any delete lowers the count. It then reads only the vectors of
  new chunks and drops those of deleted ones, so a re-import, a prune or an erasure is reflected at the next query.
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

if TYPE_CHECKING:
    from app.settings import Settings

FloatMatrix = npt.NDArray[np.float32]
EMBEDDING_DIMS = 384  # knowledge_vectors.embedding on PostgreSQL is vector(384)
VECTOR_TABLE = "knowledge_vectors"
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


@dataclass(frozen=True)
class VectorMatch:
    chunk_id: int
    similarity: float  # cosine similarity, in [-1, 1]


class KnowledgeVectors:
    """The chunk embeddings of one database: writing them, and finding the nearest to a query."""

    def __init__(self, embedder: TextEmbedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._ids = np.zeros(0, dtype=np.int64)
        self._matrix = np.zeros((0, EMBEDDING_DIMS), dtype=np.float32)
        self._loaded_at: tuple[int, int] | None = None  # (chunk count, highest chunk id) the matrix reflects

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

    def nearest(self, session: Session, query: FloatMatrix, limit: int) -> list[VectorMatch]:
        """The ``limit`` chunks whose vectors are closest to ``query`` (a unit vector), most similar first."""
        if limit <= 0:
            return []
        if _is_postgres(session):
            rows = session.execute(
                text(
                    f"SELECT chunk_id, 1 - (embedding <=> CAST(:q AS vector)) FROM {VECTOR_TABLE} "
                    "ORDER BY embedding <=> CAST(:q AS vector) LIMIT :limit"
                ),
                {"q": pg_vector_literal(query), "limit": limit},
            ).all()
            return [VectorMatch(int(row[0]), float(row[1])) for row in rows]
        ids, matrix = self._current(session)
        if not len(ids):
            return []
        scores = matrix @ query
        top = np.argpartition(-scores, limit - 1)[:limit] if limit < len(scores) else np.arange(len(scores))
        ordered = top[np.argsort(-scores[top], kind="stable")]
        return [VectorMatch(int(ids[index]), float(scores[index])) for index in ordered]

    def similarities(self, session: Session, query: FloatMatrix, chunk_ids: Sequence[int]) -> dict[int, float]:
        """The cosine similarity of ``query`` to each of ``chunk_ids`` that has a vector."""
        if not chunk_ids:
            return {}
        if _is_postgres(session):
            rows = session.execute(
                text(
                    f"SELECT chunk_id, 1 - (embedding <=> CAST(:q AS vector)) FROM {VECTOR_TABLE} "
                    "WHERE chunk_id IN :ids"
                ).bindparams(bindparam("ids", expanding=True)),
                {"q": pg_vector_literal(query), "ids": list(chunk_ids)},
            ).all()
            return {int(row[0]): float(row[1]) for row in rows}
        ids, matrix = self._current(session)
        positions = np.searchsorted(ids, np.asarray(chunk_ids, dtype=np.int64))
        found: dict[int, float] = {}
        for chunk_id, position in zip(chunk_ids, positions.tolist(), strict=True):
            if position < len(ids) and ids[position] == chunk_id:
                found[chunk_id] = float(matrix[position] @ query)
        return found

    def _current(self, session: Session) -> tuple[npt.NDArray[np.int64], FloatMatrix]:
        """The matrix (ids ascending) as of the database's current chunks, refreshed if they changed."""
        count, highest = session.execute(text("SELECT count(*), coalesce(max(id), 0) FROM knowledge_chunks")).one()
        state = (int(count), int(highest))
        with self._lock:
            if state != self._loaded_at:
                self._refresh(session, state)
            return self._ids, self._matrix

    def _refresh(self, session: Session, state: tuple[int, int]) -> None:
        known_highest = int(self._ids[-1]) if len(self._ids) else 0
        rows = session.execute(
            text(f"SELECT chunk_id, embedding FROM {VECTOR_TABLE} WHERE chunk_id > :after ORDER BY chunk_id"),
            {"after": known_highest},
        ).all()
        ids, matrix = self._ids, self._matrix
        if rows:
            new_ids = np.fromiter((int(row[0]) for row in rows), dtype=np.int64, count=len(rows))
            new_matrix = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype=SQLITE_VECTOR_DTYPE)
            ids = np.concatenate([ids, new_ids])
            matrix = np.concatenate([matrix, new_matrix.reshape(len(rows), EMBEDDING_DIMS).astype(np.float32)])
        if len(ids) != state[0]:
            # Some chunks went away (or some never had a vector): keep the rows of the chunks that remain. The
            # chunk ids come from an index, far smaller to read than the vectors.
            remaining = np.fromiter(
                (int(row[0]) for row in session.execute(text("SELECT id FROM knowledge_chunks"))), dtype=np.int64
            )
            keep = np.isin(ids, remaining)
            ids, matrix = ids[keep], matrix[keep]
        self._ids, self._matrix = ids, np.ascontiguousarray(matrix)
        self._loaded_at = state


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
