"""``CustomerMemory``: the only code in memdesk that talks to Mem0.

Every call is scoped to one customer. Customer ids must match ``CUSTOMER_ID_PATTERN`` (so never ``*``, never empty),
every call by memory id first checks that the memory belongs to that customer (Mem0's get/update/delete/history by
id are not scoped), and every result is checked again before it leaves this module.

Storing is memdesk's decision, not Mem0's (``add(infer=False)``): a conclusion is stored once per content hash; a
newer conclusion of the same kind about the same subject (the same order or other object; for a preference, the
same topic) supersedes the older one (marked ``superseded`` with what replaced it, when and why, kept for the
record, no longer recalled: ``memory.supersession``); a memory a human edited, confirmed (``lock``, which keeps its
due date and expiry) or added (``add_locked``) is locked and never superseded automatically (the newer automatic
conclusion is the one marked superseded); an edit keeps its history in Mem0's history table and replaces the due
date and expiry with the ones its caller gives.

The embedded store (``memory.sqlite_store``, one SQLite file keyed by customer) may be opened by several processes
at once (the server, the CLI, a second worker): SQLite serializes their writes, and read-then-write sequences
(remember, edit, delete, erasure) also take ``SequenceLock``, a thread lock plus a file lock beside the store, so two
processes never interleave them. Qdrant's local mode (``MEMDESK_MEMORY_STORE=qdrant``) has one owner: a second
process gets ``MemoryStoreLockedError`` saying what to do; within the process, each call into it is serialized by a
lock held only for that call, never while an embedding is computed, so a hung embedder endpoint never holds up
recall for others. Every lock is acquired with a timeout: a call stuck behind a hung one fails with
``MemoryStoreBusyError`` instead of waiting for it. Requests to an embeddings endpoint carry their own timeout
(``EMBEDDING_REQUEST_TIMEOUT_S``), so a hung request ends and gives its thread back.

Recall embeds its query through ``memory.query_cache``: the same question of the same customer within a burst is
embedded once; erasing the customer empties their part of that cache. Erasure also reaches the disk: the SQLite
files this store writes delete securely and have their write-ahead logs emptied afterwards (``truncate_wal``,
``memory.sqlite_wal``).

Errors: see ``memory.errors`` (``CustomerMemoryError`` and its subclasses, re-exported here).
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory.conclusions import PROMISE_GRACE_DAYS, Conclusion, ConclusionKind, MemoryItem, MemoryStatus
from memory.config import EmbedderKind, MemoryOptions, VectorStoreKind, build_mem0_config, prepare_environment
from memory.errors import (
    CustomerMemoryError,
    InvalidCustomerIdError,
    MemoryNotFoundError,
    MemoryStoreBusyError,
    MemoryStoreLockedError,
)
from memory.items import as_date, as_item, check_customer_id, human_mark
from memory.locks import SequenceLock, SerializedClient, creation_serialized, held
from memory.query_cache import CachingEmbedder, QueryEmbeddingCache
from memory.sqlite_wal import SECURE_DELETE, truncate_wal
from memory.supersession import Comparison, embedder_key, supersession_marks

__all__ = [
    "CustomerMemory",
    "CustomerMemoryError",
    "InvalidCustomerIdError",
    "MemoryNotFoundError",
    "MemoryStoreBusyError",
    "MemoryStoreLockedError",
    "check_customer_id",
]

RECALL_LIMIT = 8
MAX_RECALL_LIMIT = 50
LIST_LIMIT = 10_000
SEARCH_THRESHOLD = 0.0
# Longest wait for a call in progress before giving up with MemoryStoreBusyError: an embedded-store call takes
# milliseconds (about a second at 100k memories, benchmarks.memory), so waiting longer means it is stuck.
LOCK_TIMEOUT_S = 5.0
# At shutdown, wait this long at most for a call in progress before leaving the store to the end of the process.
CLOSE_TIMEOUT_S = 1.0
# Mem0's OpenAI embedder keeps the openai client's defaults (10 minutes, 2 retries): a hung endpoint would hold a
# worker thread that long.
EMBEDDING_REQUEST_TIMEOUT_S = 5.0
EMBEDDING_MAX_RETRIES = 1

logger = logging.getLogger(__name__)


class CustomerMemory:
    """Per-customer long-term memory on top of one Mem0 ``Memory``."""

    def __init__(
        self, options: MemoryOptions, *, embedder: Any | None = None, lock_timeout_s: float = LOCK_TIMEOUT_S
    ) -> None:
        prepare_environment(options)
        from mem0 import Memory  # only after prepare_environment: mem0 reads its settings at import

        self.options = options
        self.lock_timeout_s = lock_timeout_s
        self._sequences = SequenceLock(lock_timeout_s, self._sequence_lock_path(options))
        self._store_lock = threading.RLock()  # around each call into the embedded Qdrant client
        try:
            with creation_serialized(self._schema_url(options)):
                self._mem0 = Memory(build_mem0_config(options))
        except RuntimeError as error:
            if "already accessed by another instance" in str(error):
                raise MemoryStoreLockedError(
                    f"Another process already owns the embedded Qdrant store at {options.qdrant_path}. Run a single "
                    "memdesk process per data directory, or move the memories to the default store, which several "
                    "processes share (`memdesk memory migrate-store --from qdrant --to sqlite`)."
                ) from error
            raise
        self._contain_dependencies()
        chosen = embedder if embedder is not None else self._default_embedder(options)
        if chosen is not None:
            from memory.embedders import attach_embedder

            attach_embedder(self._mem0, chosen)
        self._embedder = chosen
        self._embedder_key = embedder_key(self._mem0.embedding_model)
        self.query_cache = QueryEmbeddingCache()
        self._query_embedder = CachingEmbedder(self._mem0.embedding_model, self.query_cache)
        self._mem0.embedding_model = self._query_embedder
        if options.vector_store is VectorStoreKind.PGVECTOR:
            self._index_customer_ids()

    @staticmethod
    def _schema_url(options: MemoryOptions) -> str | None:
        # Mem0's pgvector store creates its extension and table at start, and memdesk an index: CREATE ... IF NOT
        # EXISTS still fails when another server creates the same object at that moment, so servers take turns.
        return options.pgvector_url if options.vector_store is VectorStoreKind.PGVECTOR else None

    @staticmethod
    def _sequence_lock_path(options: MemoryOptions) -> Path | None:
        # Only the SQLite store is opened by several local processes; pgvector's own transactions cover its
        # processes, and Qdrant's local mode admits one process.
        if options.vector_store is VectorStoreKind.SQLITE:
            return options.sqlite_path.with_suffix(".lock")
        return None

    def _index_customer_ids(self) -> None:
        """Mem0 indexes the vectors (HNSW) but not the customer id every memdesk query filters on; without this
        index each recall, list and remember reads the whole table (benchmarks.memory: recall p95 45 ms -> 5 ms
        at 100k memories). Created before the first query, so no pooled connection holds a plan without it."""
        from psycopg import sql

        vector_store = self._mem0.vector_store
        table = self.options.collection
        with creation_serialized(self._schema_url(self.options)):
            vector_store.create_col()  # Mem0 creates its table lazily; its statements are all IF NOT EXISTS
            with vector_store.connection_pool.connection() as connection:
                connection.execute(
                    sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} ((payload->>'user_id'))").format(
                        sql.Identifier(f"{table}_user_id_idx"), sql.Identifier(table)
                    )
                )

    def _contain_dependencies(self) -> None:
        """Serialize calls into the embedded Qdrant client (before Mem0 lazily shares it with its entity store),
        let several processes share the history file, and bound every request to an embeddings endpoint."""
        vector_store = self._mem0.vector_store
        self._qdrant_client: Any = None
        if self.options.vector_store is VectorStoreKind.QDRANT:
            self._qdrant_client = vector_store.client
            vector_store.client = SerializedClient(self._qdrant_client, self._store_lock, self.lock_timeout_s)
        history = self._mem0.db
        with history._lock:  # Mem0's own lock around its SQLite connection
            # WAL: readers in other processes never wait for a writer; writers wait up to the lock timeout.
            history.connection.execute("PRAGMA journal_mode=WAL")
            # The history is the audit trail of each memory, not the memory: a commit survives a crash of the
            # process, and only a power cut can take its last rows. That saves one disk flush per remember (about
            # half its time on this machine's disk, benchmarks.memory); the memory itself is flushed on commit.
            history.connection.execute("PRAGMA synchronous=NORMAL")
            history.connection.execute(f"PRAGMA busy_timeout={int(self.lock_timeout_s * 1000)}")
            history.connection.execute(SECURE_DELETE)  # an erased memory's old texts are zeroed, not left as free space
        if self.options.embedder is EmbedderKind.OPENAI:
            embedding_model = self._mem0.embedding_model
            embedding_model.client = embedding_model.client.with_options(
                timeout=EMBEDDING_REQUEST_TIMEOUT_S, max_retries=EMBEDDING_MAX_RETRIES
            )

    @staticmethod
    def _default_embedder(options: MemoryOptions) -> Any | None:
        if options.embedder is EmbedderKind.OPENAI:
            return None
        # The embedder stack is heavy: load it only when it is used.
        from memory.embedders import HashingEmbedder, local_embedder

        if options.embedder is EmbedderKind.HASHING:
            return HashingEmbedder(options.embedding_dims)
        return local_embedder()

    def warm_up(self) -> None:
        """Load the embedding model now (at server start-up) instead of on the first customer's turn."""
        load = getattr(self._embedder, "load", None)
        if callable(load):
            load()

    @contextmanager
    def _serialized(self) -> Iterator[None]:
        # A read-then-write sequence (the idempotency check before an add, erasure's list-then-delete) must not
        # interleave with another one. pgvector serializes nothing here, as before: its own transactions handle
        # concurrency between processes.
        if self.options.vector_store is VectorStoreKind.PGVECTOR:
            yield
        else:
            with self._sequences.held("another memory update"):
                yield

    # -- reading ----------------------------------------------------------------------------------------------
    def recall(self, customer_id: str, query: str, *, limit: int = RECALL_LIMIT) -> builtins.list[MemoryItem]:
        """The customer's active memories most relevant to ``query``."""
        check_customer_id(customer_id)
        top_k = max(1, min(limit, MAX_RECALL_LIMIT))
        with self._query_embedder.scope(customer_id):
            found = self._mem0.search(
                query or " ",
                top_k=top_k,
                filters={"user_id": customer_id, "status": MemoryStatus.ACTIVE.value},
                threshold=SEARCH_THRESHOLD,
            )
        items = [as_item(raw, customer_id) for raw in found.get("results", []) if raw.get("user_id") == customer_id]
        return [item for item in items if item.active][:top_k]

    def active_promises(self, customer_id: str) -> builtins.list[MemoryItem]:
        """Every promise to this customer that is still active, soonest due first."""
        items = self._all(customer_id, kind="promise")
        promises = [item for item in items if item.active]
        return sorted(promises, key=lambda item: (item.due_date or date.max, item.text))

    def list(self, customer_id: str) -> builtins.list[MemoryItem]:
        """All of the customer's memories, active and superseded (expired promises excluded)."""
        return self._all(customer_id)

    def _all(self, customer_id: str, **filters: Any) -> builtins.list[MemoryItem]:
        check_customer_id(customer_id)
        found = self._mem0.get_all(filters={"user_id": customer_id, **filters}, top_k=LIST_LIMIT)
        return [as_item(raw, customer_id) for raw in found.get("results", []) if raw.get("user_id") == customer_id]

    def _owned(self, customer_id: str, memory_id: str) -> dict[str, Any]:
        check_customer_id(customer_id)
        if not isinstance(memory_id, str) or not memory_id:
            raise MemoryNotFoundError("No such memory for this customer.")
        try:
            raw = self._mem0.get(memory_id)
        except Exception:  # a malformed id is a missing memory, whatever the store says
            raw = None
        if not raw or raw.get("user_id") != customer_id:
            raise MemoryNotFoundError("No such memory for this customer.")
        return dict(raw)

    def get(self, customer_id: str, memory_id: str) -> MemoryItem:
        return as_item(self._owned(customer_id, memory_id), customer_id)

    # -- writing ----------------------------------------------------------------------------------------------
    def remember(self, conclusions: Sequence[Conclusion]) -> builtins.list[str]:
        """Store each conclusion once (by content hash); returns the memory ids, existing or new."""
        ids = []
        for conclusion in conclusions:
            check_customer_id(conclusion.customer_id)
            with self._serialized():
                ids.append(self._remember_one(conclusion))
        return ids

    def _remember_one(self, conclusion: Conclusion) -> str:
        customer_id = conclusion.customer_id
        # One read of the customer's memories serves both the idempotency check and the supersession rule.
        known = self._known(customer_id)
        for raw in known:
            if (raw.get("metadata") or {}).get("content_hash") == conclusion.content_hash:
                return str(raw["id"])
        expiration = conclusion.expiration_date
        added = self._mem0.add(
            conclusion.text,
            user_id=customer_id,
            metadata=conclusion.metadata(),
            infer=False,
            expiration_date=expiration.isoformat() if expiration else None,
        )
        results = added.get("results", [])
        if not results:
            raise CustomerMemoryError(f"Mem0 stored nothing for conclusion {conclusion.content_hash[:12]}.")
        memory_id = str(results[0]["id"])
        self._supersede(conclusion, memory_id, known)
        return memory_id

    def _known(self, customer_id: str) -> builtins.list[dict[str, Any]]:
        found = self._mem0.get_all(filters={"user_id": customer_id}, top_k=LIST_LIMIT, show_expired=True)
        return [raw for raw in found.get("results", []) if raw.get("user_id") == customer_id]

    def _supersede(
        self, conclusion: Conclusion, new_id: str, known: Sequence[dict[str, Any]], *, new_is_locked: bool = False
    ) -> None:
        """Mark the memories that ``new_id`` supersedes, or ``new_id`` itself when a human's version wins
        (``memory.supersession``)."""
        comparison = Comparison(lambda text: self._mem0.embedding_model.embed(text, "search"), self._embedder_key)
        for memory_id, marks in supersession_marks(conclusion, new_id, known, comparison, new_is_locked=new_is_locked):
            self._mem0.update(memory_id, metadata=marks)

    def edit(
        self,
        customer_id: str,
        memory_id: str,
        text: str,
        *,
        editor: str,
        due_date: date | None = None,
        expiration_date: date | None = None,
    ) -> MemoryItem:
        """A human's correction: new text, locked against automatic changes; the old text stays in the history.

        The due date and expiry are replaced by the ones given (the caller derives them from the new text, or takes
        them from a form): an edit that names no date leaves the memory without one, instead of keeping a date the
        old text named.
        """
        if not text.strip():
            raise ValueError("A memory cannot be edited to empty text; delete it instead.")
        with self._serialized():
            self._owned(customer_id, memory_id)
            edited = {
                **human_mark(editor),
                "due_date": due_date.isoformat() if due_date else None,
                "expires_on": expiration_date.isoformat() if expiration_date else None,
            }
            self._mem0.update(
                memory_id,
                text=text.strip(),
                metadata=edited,
                expiration_date=expiration_date.isoformat() if expiration_date else None,
            )
            return as_item(self._owned(customer_id, memory_id), customer_id)

    def lock(self, customer_id: str, memory_id: str, *, editor: str) -> MemoryItem:
        """Lock a memory as it is: a human confirmed it, so no automatic write may supersede it. Its due date and
        expiry stay; the expiry is also written as ``expires_on``, the date a person set or confirmed."""
        with self._serialized():
            raw = self._owned(customer_id, memory_id)
            expiry = as_date(raw.get("expiration_date"))
            self._mem0.update(
                memory_id,
                metadata={**human_mark(editor), "expires_on": expiry.isoformat() if expiry else None},
                expiration_date=expiry.isoformat() if expiry else None,
            )
            return as_item(self._owned(customer_id, memory_id), customer_id)

    def add_locked(self, conclusion: Conclusion, *, editor: str, expiration_date: date | None = None) -> MemoryItem:
        """A memory a human wrote: stored locked, superseding the automatic memories of the same decision (a locked
        one stays as it is), and never superseded automatically itself."""
        customer_id = check_customer_id(conclusion.customer_id)
        metadata = {
            **conclusion.metadata(),
            **human_mark(editor),
            "expires_on": expiration_date.isoformat() if expiration_date else None,
        }
        with self._serialized():
            known = self._known(customer_id)
            added = self._mem0.add(
                conclusion.text,
                user_id=customer_id,
                metadata=metadata,
                infer=False,
                expiration_date=expiration_date.isoformat() if expiration_date else None,
            )
            results = added.get("results", [])
            if not results:
                raise CustomerMemoryError("Mem0 stored nothing for the memory a person added.")
            memory_id = str(results[0]["id"])
            self._supersede(conclusion, memory_id, known, new_is_locked=True)
            return as_item(self._owned(customer_id, memory_id), customer_id)

    def delete(self, customer_id: str, memory_id: str) -> None:
        with self._serialized():
            self._owned(customer_id, memory_id)
            self._mem0.delete(memory_id)

    def history(self, customer_id: str, memory_id: str) -> builtins.list[dict[str, Any]]:
        with self._serialized():
            self._owned(customer_id, memory_id)
            return [dict(row) for row in self._mem0.history(memory_id)]

    # -- upkeep -----------------------------------------------------------------------------------------------
    def expire_promises(self, customer_id: str, today: date) -> int:
        """Mark the customer's promises whose grace period ended before ``today`` as expired; they stay in the
        store for the record. A promise a human locked is theirs to close. Returns how many were marked now."""
        check_customer_id(customer_id)
        last_due = today - timedelta(days=PROMISE_GRACE_DAYS)
        marked = 0
        with self._serialized():
            filters = {"user_id": customer_id, "kind": ConclusionKind.PROMISE.value}
            found = self._mem0.get_all(filters=filters, top_k=LIST_LIMIT, show_expired=True)
            for raw in found.get("results", []):
                item = as_item(raw, customer_id)
                if raw.get("user_id") != customer_id or not item.active or item.locked:
                    continue
                if item.due_date is not None and item.due_date < last_due:
                    expired = {"status": MemoryStatus.EXPIRED.value, "expired_at": datetime.now(UTC).isoformat()}
                    self._mem0.update(item.id, metadata=expired)
                    marked += 1
        return marked

    def superseded_since(self, customer_id: str, since: datetime) -> int:
        """How many of the customer's memories were superseded at or after ``since``."""
        check_customer_id(customer_id)
        found = self._mem0.get_all(filters={"user_id": customer_id}, top_k=LIST_LIMIT, show_expired=True)
        count = 0
        for raw in found.get("results", []):
            stamp = (raw.get("metadata") or {}).get("superseded_at")
            if raw.get("user_id") == customer_id and stamp and datetime.fromisoformat(str(stamp)) >= since:
                count += 1
        return count

    # -- privacy ----------------------------------------------------------------------------------------------
    def export_customer(self, customer_id: str) -> builtins.list[MemoryItem]:
        """Every memory of the customer (expired ones too) with its full history."""
        check_customer_id(customer_id)
        with self._serialized():
            found = self._mem0.get_all(filters={"user_id": customer_id}, top_k=LIST_LIMIT, show_expired=True)
            raws = [raw for raw in found.get("results", []) if raw.get("user_id") == customer_id]
            return [as_item(raw, customer_id, self._mem0.history(str(raw["id"]))) for raw in raws]

    def forget_customer(self, customer_id: str) -> int:
        """Delete every memory of the customer, and Mem0's history rows about them; returns how many memories."""
        check_customer_id(customer_id)
        self.query_cache.forget(customer_id)
        with self._serialized():
            found = self._mem0.get_all(filters={"user_id": customer_id}, top_k=LIST_LIMIT, show_expired=True)
            ids = [str(raw["id"]) for raw in found.get("results", []) if raw.get("user_id") == customer_id]
            for memory_id in ids:
                self._mem0.delete(memory_id)
            self._erase_history(ids)
        unwiped = self.truncate_wal()
        if unwiped:
            logger.warning(
                "Another connection was reading %s during an erasure: the erased text stays in their write-ahead "
                "logs until their next checkpoint.",
                ", ".join(str(path) for path in unwiped),
            )
        return len(ids)

    def truncate_wal(self) -> builtins.list[Path]:
        """Empty the write-ahead logs of the SQLite files this store writes (the embedded vector store and Mem0's
        history) into the files themselves, whose deleted rows are zeroed (``SECURE_DELETE``): after an erasure, no
        copy of the erased text stays on disk in a log. Returns the files whose log another connection kept open
        (it empties at a later checkpoint). pgvector's rows live in PostgreSQL, and the Qdrant store is not SQLite
        in WAL mode: neither has a log here."""
        unwiped = []
        if self.options.vector_store is VectorStoreKind.SQLITE and not self._mem0.vector_store.truncate_wal():
            unwiped.append(self.options.sqlite_path)
        history = self._mem0.db
        with history._lock:  # Mem0's own lock around its SQLite connection
            if not truncate_wal(history.connection):
                unwiped.append(self.options.history_db_path)
        return unwiped

    def _erase_history(self, memory_ids: Sequence[str]) -> None:
        history_db = self._mem0.db
        with history_db._lock:  # Mem0's own lock around its SQLite connection
            connection = history_db.connection
            connection.executemany(
                "DELETE FROM history WHERE memory_id = ?", [(memory_id,) for memory_id in memory_ids]
            )
            connection.commit()

    def close(self) -> None:
        """Release the store. Waits at most ``CLOSE_TIMEOUT_S`` for a store call in progress: a stuck call keeps the
        embedded store, and the end of the process releases it."""
        if self._qdrant_client is not None:
            try:
                with held(self._store_lock, CLOSE_TIMEOUT_S, "closing"):
                    self._qdrant_client.close()
            except MemoryStoreBusyError:
                logger.warning("A memory store call is still running; the store is left open for the process exit.")
        vector_store = self._mem0.vector_store
        pool = getattr(vector_store, "connection_pool", None)  # pgvector
        if pool is not None and hasattr(pool, "close"):
            pool.close()
        if self.options.vector_store is VectorStoreKind.SQLITE:
            vector_store.close()
            entities = self._mem0._entity_store  # Mem0 builds it on first use only
            if entities is not None:
                entities.close()
        self.query_cache.forget_all()
        self._mem0.db.close()
