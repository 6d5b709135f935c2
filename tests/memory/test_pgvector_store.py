"""The scale store: the same CustomerMemory on PostgreSQL with pgvector (a real server from pgserver)."""

from __future__ import annotations

from pathlib import Path

from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from memory.config import EmbedderKind, MemoryOptions, VectorStoreKind
from memory.store import CustomerMemory, MemoryNotFoundError


def test_customer_memory_on_pgvector_stores_recalls_isolates_and_indexes_customers(
    tmp_path: Path, postgres_url: str
) -> None:
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    options = MemoryOptions(
        data_dir=tmp_path, embedder=EmbedderKind.HASHING, vector_store=VectorStoreKind.PGVECTOR, pgvector_url=url
    )
    store = CustomerMemory(options)
    try:
        refund = Conclusion(
            "31",
            ConclusionKind.PROMISE,
            "Refund of $9.99 for #W4440001 by 2026-12-09",
            ConclusionSource.COMPACTION,
            identifiers=("#W4440001",),
        )
        (memory_id,) = store.remember([refund])
        assert store.remember([refund]) == [memory_id]
        store.remember([Conclusion("32", ConclusionKind.PREFERENCE, "Prefers email", ConclusionSource.AGENT)])
        assert [m.text for m in store.recall("31", "refund for #W4440001")] == [refund.text]
        assert [m.text for m in store.recall("32", "refund")] == ["Prefers email"]
        try:
            store.get("32", memory_id)
        except MemoryNotFoundError:
            pass
        else:
            raise AssertionError("another customer's memory id must not be readable")
        assert store.forget_customer("31") == 1 and store.list("31") == []
        import psycopg

        with psycopg.connect(url) as connection:
            indexes = [
                row[0]
                for row in connection.execute(
                    "SELECT indexname FROM pg_indexes WHERE tablename = %s", (options.collection,)
                )
            ]
        assert f"{options.collection}_user_id_idx" in indexes
    finally:
        store.close()
    assert store._mem0.vector_store.connection_pool.closed, "closing the memory closes its connection pool"
