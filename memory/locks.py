"""Locks around the memory store, each acquired with a timeout so that a stuck call makes others fail fast
(``MemoryStoreBusyError``) instead of queueing behind it.

- ``held``: a thread lock of this process.
- ``SerializedClient``: the embedded Qdrant client with every method call under a thread lock (Qdrant's local mode
  is plain Python state that concurrent calls would corrupt).
- ``creation_serialized``: around the creation of a PostgreSQL store's schema (pgvector), a PostgreSQL advisory lock
  that several processes and machines take in turn.
- ``SequenceLock``: around a read-then-write sequence (the idempotency check before an add, erasure's
  list-then-delete): a thread lock, plus, for a store that several processes open (``memory.sqlite_store``), an
  advisory file lock beside it, so that two processes never interleave such sequences either.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memory.errors import MemoryStoreBusyError

# An arbitrary constant that names the memory store's schema creation among a database's advisory locks.
SCHEMA_CREATION_LOCK_KEY = 3_918_226_417


@contextmanager
def creation_serialized(postgres_url: str | None) -> Iterator[None]:
    """Hold a PostgreSQL session advisory lock on ``postgres_url`` for the block (nothing without a URL). The lock
    lives on a connection of its own, closed at the end, so it never outlives the block, even if the unlock fails."""
    if postgres_url is None:
        yield
        return
    import psycopg  # PostgreSQL mode only

    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("SELECT pg_advisory_lock(%s)", (SCHEMA_CREATION_LOCK_KEY,))
        yield


def _busy(timeout_s: float, what: str) -> MemoryStoreBusyError:
    return MemoryStoreBusyError(
        f"The memory store stayed busy for {timeout_s:g} s ({what}); a call in progress may be stuck. Try again later."
    )


@contextmanager
def held(lock: threading.RLock, timeout_s: float, what: str) -> Iterator[None]:
    if not lock.acquire(timeout=timeout_s):
        raise _busy(timeout_s, what)
    try:
        yield
    finally:
        lock.release()


class SerializedClient:
    """A client object with every method call under ``lock``; taking the lock per call (rather than around a whole
    Mem0 operation) keeps it free while Mem0 computes embeddings."""

    def __init__(self, client: Any, lock: threading.RLock, timeout_s: float) -> None:
        self._client = client
        self._lock = lock
        self._timeout_s = timeout_s

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_client", "_lock", "_timeout_s"):
            raise AttributeError(name)  # copy and pickle probe a half-built object: never recurse into the client
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute
        return self._serialized(attribute, name)

    def _serialized(self, method: Callable[..., Any], name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            with held(self._lock, self._timeout_s, f"vector store {name}"):
                return method(*args, **kwargs)

        return call


class SequenceLock:
    """Mutual exclusion of read-then-write sequences within this process and, given a ``lock_path``, across the
    processes that share the store."""

    def __init__(self, timeout_s: float, lock_path: Path | None = None) -> None:
        self.timeout_s = timeout_s
        self._thread_lock = threading.RLock()
        self._file_lock = FileLock(str(lock_path)) if lock_path is not None else None

    @contextmanager
    def held(self, what: str) -> Iterator[None]:
        with held(self._thread_lock, self.timeout_s, what):
            if self._file_lock is None:
                yield
                return
            try:
                self._file_lock.acquire(timeout=self.timeout_s)
            except Timeout as error:
                raise _busy(self.timeout_s, f"{what}, held by another process") from error
            try:
                yield
            finally:
                self._file_lock.release()
