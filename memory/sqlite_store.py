"""``SQLiteVectorStore``: memdesk's embedded vector store for Mem0, one SQLite file keyed by customer.

Why this store: every memdesk recall is scoped to one customer, who has tens or hundreds of memories, so reading
that customer's rows through an index and scoring them exactly (cosine in numpy) is both the fastest and the most
correct search; it stays flat as the whole store grows (benchmarks.memory). SQLite in WAL mode makes it durable
and safe for several processes on one machine (the server, the CLI, a second worker) with no server to run.

It implements Mem0's ``VectorStoreBase`` and is registered in Mem0's ``VectorStoreFactory`` under
``PROVIDER`` (``register``), so ``mem0.Memory`` and its history work unchanged; the entity collection Mem0 may create
lives in the same file under its own collection name.

Layout: one table of rows (collection, id, user_id, vector as little-endian float32, payload as JSON) with an index
on (collection, user_id) and a unique one on (collection, id); a second table records each collection's dimension,
so a store built with another embedder is refused instead of mixing vector spaces. Reads run on per-thread
connections and never block writers (WAL); each write is one ``BEGIN IMMEDIATE`` transaction, waiting at most
``busy_timeout_s`` for another process's write. Deleted rows are zeroed (``memory.sqlite_wal``), and an erasure
empties the write-ahead log (``truncate_wal``), so a deleted memory's text leaves the disk. Scores are cosine
similarities (higher is closer), as Qdrant gives.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from mem0.vector_stores.base import VectorStoreBase
from pydantic import BaseModel

from memory.sqlite_wal import SECURE_DELETE, truncate_wal
from memory.store_filters import CUSTOMER_KEY, sql_condition

PROVIDER = "memdesk_sqlite"
VECTOR_DTYPE = np.dtype("<f4")
# A write waits this long for another process's write before failing: writes take milliseconds.
BUSY_TIMEOUT_S = 5.0
DEFAULT_LIST_LIMIT = 100
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS memory_collections (
        name TEXT PRIMARY KEY,
        dims INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS memory_vectors (
        collection TEXT NOT NULL,
        id TEXT NOT NULL,
        user_id TEXT,
        vector BLOB NOT NULL,
        payload TEXT NOT NULL
    )""",
    "CREATE UNIQUE INDEX IF NOT EXISTS memory_vectors_id ON memory_vectors (collection, id)",
    "CREATE INDEX IF NOT EXISTS memory_vectors_customer ON memory_vectors (collection, user_id)",
    """CREATE TABLE IF NOT EXISTS memory_migrations (
        source TEXT PRIMARY KEY,
        completed_at TEXT NOT NULL
    )""",
)


class StoreDimensionError(ValueError):
    """Vectors of another dimension than the collection was created with (the embedder changed)."""


class SQLiteStoreConfig(BaseModel):
    """What Mem0 passes to ``SQLiteVectorStore`` (it reads ``collection_name`` and ``embedding_model_dims``)."""

    path: str
    collection_name: str
    embedding_model_dims: int
    busy_timeout_s: float = BUSY_TIMEOUT_S


class OutputData(BaseModel):
    """One stored point as Mem0 reads it: ``id``, ``score`` (searches only) and ``payload``."""

    id: str
    score: float | None = None
    payload: dict[str, Any]


def register() -> None:
    """Make ``PROVIDER`` known to Mem0's vector-store factory (idempotent)."""
    from mem0.utils.factory import VectorStoreFactory

    VectorStoreFactory.provider_to_class[PROVIDER] = f"{__name__}.SQLiteVectorStore"


def _blob(vector: Sequence[float], dims: int) -> bytes:
    array = np.asarray(vector, dtype=VECTOR_DTYPE)
    if array.shape != (dims,):
        raise StoreDimensionError(f"Expected a {dims}-dimensional vector, got shape {array.shape}.")
    return array.tobytes()


def _customer(payload: Mapping[str, Any] | None) -> str | None:
    value = (payload or {}).get(CUSTOMER_KEY)
    return str(value) if value is not None else None


class SQLiteVectorStore(VectorStoreBase):  # type: ignore[misc]  # Mem0 ships no type information
    def __init__(
        self, path: str, collection_name: str, embedding_model_dims: int, busy_timeout_s: float = BUSY_TIMEOUT_S
    ) -> None:
        self.path = Path(path)
        self.collection_name = collection_name
        self.embedding_model_dims = embedding_model_dims
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.create_col(collection_name, embedding_model_dims)

    # -- connections ------------------------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            # Autocommit mode: reads see the latest commit, and writes open their own BEGIN IMMEDIATE.
            connection = sqlite3.connect(
                self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")  # a commit survives a power cut, not only a crash
            connection.execute(SECURE_DELETE)
            self._local.connection = connection
            with self._connections_lock:
                self._connections.append(connection)
        return connection

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def truncate_wal(self) -> bool:
        """Empty the store's write-ahead log into its file (``memory.sqlite_wal.truncate_wal``)."""
        return truncate_wal(self._connection())

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()
        self._local = threading.local()

    # -- collections ------------------------------------------------------------------------------------------
    def create_col(self, name: str, vector_size: int | None = None, distance: str | None = None) -> None:
        dims = vector_size or self.embedding_model_dims
        with self._writing() as connection:
            for statement in SCHEMA:
                connection.execute(statement)
            connection.execute("INSERT OR IGNORE INTO memory_collections (name, dims) VALUES (?, ?)", (name, dims))
            row = connection.execute("SELECT dims FROM memory_collections WHERE name = ?", (name,)).fetchone()
        if row[0] != dims:
            raise StoreDimensionError(
                f"The memory store at {self.path} holds {row[0]}-dimensional vectors in {name!r}, but the embedder "
                f"makes {dims}-dimensional ones. Use the embedder it was built with, or start a new store."
            )

    def list_cols(self) -> list[str]:
        rows = self._connection().execute("SELECT name FROM memory_collections ORDER BY name").fetchall()
        return [str(row[0]) for row in rows]

    def delete_col(self) -> None:
        with self._writing() as connection:
            connection.execute("DELETE FROM memory_vectors WHERE collection = ?", (self.collection_name,))
            connection.execute("DELETE FROM memory_collections WHERE name = ?", (self.collection_name,))

    def col_info(self) -> dict[str, Any]:
        row = (
            self._connection()
            .execute("SELECT count(*) FROM memory_vectors WHERE collection = ?", (self.collection_name,))
            .fetchone()
        )
        return {"name": self.collection_name, "count": int(row[0]), "dims": self.embedding_model_dims}

    def reset(self) -> None:
        self.delete_col()
        self.create_col(self.collection_name, self.embedding_model_dims)

    def migrated_from(self, source: str) -> bool:
        """Whether a migration from ``source`` (``memory.migrate``) completed into this file."""
        row = self._connection().execute("SELECT 1 FROM memory_migrations WHERE source = ?", (source,)).fetchone()
        return row is not None

    def mark_migrated(self, source: str) -> None:
        with self._writing() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO memory_migrations (source, completed_at) VALUES (?, datetime('now'))", (source,)
            )

    # -- writing ----------------------------------------------------------------------------------------------
    def insert(
        self,
        vectors: Sequence[Sequence[float]],
        payloads: Sequence[Mapping[str, Any]] | None = None,
        ids: Sequence[str] | None = None,
    ) -> None:
        """Insert (or replace, by id) points; every point of one call is written in one transaction."""
        if ids is None or len(ids) != len(vectors):
            raise ValueError("SQLiteVectorStore.insert needs one id per vector.")
        rows = []
        for index, vector in enumerate(vectors):
            payload = dict(payloads[index]) if payloads else {}
            rows.append(
                (
                    self.collection_name,
                    str(ids[index]),
                    _customer(payload),
                    _blob(vector, self.embedding_model_dims),
                    json.dumps(payload),
                )
            )
        with self._writing() as connection:
            connection.executemany(
                "INSERT OR REPLACE INTO memory_vectors (collection, id, user_id, vector, payload) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    def update(
        self, vector_id: str, vector: Sequence[float] | None = None, payload: Mapping[str, Any] | None = None
    ) -> None:
        """Replace the vector and/or the payload of one point (Mem0 passes the whole new payload)."""
        with self._writing() as connection:
            if vector is not None:
                connection.execute(
                    "UPDATE memory_vectors SET vector = ? WHERE collection = ? AND id = ?",
                    (_blob(vector, self.embedding_model_dims), self.collection_name, str(vector_id)),
                )
            if payload is not None:
                connection.execute(
                    "UPDATE memory_vectors SET payload = ?, user_id = ? WHERE collection = ? AND id = ?",
                    (json.dumps(dict(payload)), _customer(payload), self.collection_name, str(vector_id)),
                )

    def delete(self, vector_id: str) -> None:
        with self._writing() as connection:
            connection.execute(
                "DELETE FROM memory_vectors WHERE collection = ? AND id = ?", (self.collection_name, str(vector_id))
            )

    # -- reading ----------------------------------------------------------------------------------------------
    def get(self, vector_id: str) -> OutputData | None:
        row = (
            self._connection()
            .execute(
                "SELECT id, payload FROM memory_vectors WHERE collection = ? AND id = ?",
                (self.collection_name, str(vector_id)),
            )
            .fetchone()
        )
        return OutputData(id=row[0], payload=json.loads(row[1])) if row else None

    def list(self, filters: Mapping[str, Any] | None = None, top_k: int | None = None) -> list[list[OutputData]]:
        """The points matching ``filters`` in insertion order, at most ``top_k``; wrapped in a list as Mem0 expects
        of a store that pages (Qdrant's scroll)."""
        condition = sql_condition(filters)
        limit = top_k if top_k is not None and top_k > 0 else DEFAULT_LIST_LIMIT
        rows = (
            self._connection()
            .execute(
                f"SELECT id, payload FROM memory_vectors WHERE collection = ? AND ({condition.sql}) "
                "ORDER BY rowid LIMIT ?",
                [self.collection_name, *condition.params, limit],
            )
            .fetchall()
        )
        return [[OutputData(id=row[0], payload=json.loads(row[1])) for row in rows]]

    def search(
        self,
        query: str,
        vectors: Sequence[float],
        top_k: int = 5,
        filters: Mapping[str, Any] | None = None,
    ) -> builtins.list[OutputData]:
        """Exact cosine search over the points matching ``filters`` (for memdesk: one customer's rows)."""
        condition = sql_condition(filters)
        rows = (
            self._connection()
            .execute(
                f"SELECT rowid, vector FROM memory_vectors WHERE collection = ? AND ({condition.sql})",
                [self.collection_name, *condition.params],
            )
            .fetchall()
        )
        if not rows or top_k <= 0:
            return []
        best = _top_cosine(np.asarray(vectors, dtype=VECTOR_DTYPE), [row[1] for row in rows], top_k)
        chosen = [rows[index][0] for index, _ in best]
        payloads = self._payloads_by_rowid(chosen)
        return [
            OutputData(id=payloads[rows[index][0]][0], score=score, payload=payloads[rows[index][0]][1])
            for index, score in best
        ]

    def _payloads_by_rowid(self, rowids: Sequence[int]) -> dict[int, tuple[str, dict[str, Any]]]:
        marks = ", ".join("?" for _ in rowids)
        rows = (
            self._connection()
            .execute(f"SELECT rowid, id, payload FROM memory_vectors WHERE rowid IN ({marks})", list(rowids))
            .fetchall()
        )
        return {row[0]: (row[1], json.loads(row[2])) for row in rows}

    def points(self, batch_size: int) -> Iterator[tuple[str, builtins.list[float], dict[str, Any]]]:
        """Every point of the collection (id, vector, payload), read in batches: what a migration copies."""
        last = -1
        while True:
            rows = (
                self._connection()
                .execute(
                    "SELECT rowid, id, vector, payload FROM memory_vectors WHERE collection = ? AND rowid > ? "
                    "ORDER BY rowid LIMIT ?",
                    (self.collection_name, last, batch_size),
                )
                .fetchall()
            )
            if not rows:
                return
            for rowid, point_id, vector, payload in rows:
                last = rowid
                yield point_id, np.frombuffer(vector, dtype=VECTOR_DTYPE).tolist(), json.loads(payload)


def _top_cosine(query: np.ndarray[Any, Any], blobs: Sequence[bytes], top_k: int) -> list[tuple[int, float]]:
    """(row index, cosine) of the ``top_k`` rows closest to ``query``, best first; zero vectors score 0."""
    matrix = np.frombuffer(b"".join(blobs), dtype=VECTOR_DTYPE).reshape(len(blobs), -1)
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(query))
    dots = matrix @ query
    scores = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    count = min(top_k, len(blobs))
    best = np.argpartition(-scores, count - 1)[:count] if count < len(blobs) else np.arange(len(blobs))
    ordered = best[np.argsort(-scores[best], kind="stable")]
    return [(int(index), float(scores[index])) for index in ordered]
