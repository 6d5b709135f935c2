"""Moving memories from the former embedded Qdrant store to the SQLite store (and on to pgvector): real stores on
both sides, real Mem0, the hashing embedder."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import pytest

from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from memory.config import MemoryOptions, VectorStoreKind
from memory.migrate import MigrationError, migrate_store, upgrade_embedded_store
from memory.store import CustomerMemory
from tests.memory.conftest import hashing_options

SOON = date.today() + timedelta(days=3)


def _qdrant_options(data_dir: Path) -> MemoryOptions:
    return replace(hashing_options(data_dir), vector_store=VectorStoreKind.QDRANT)


def _seed_qdrant(data_dir: Path) -> dict[str, set[tuple[str, str, str]]]:
    """Memories of three customers in a Qdrant store, with an edit and a supersession; what each customer lists."""
    store = CustomerMemory(_qdrant_options(data_dir))
    try:
        for customer in ("1", "2", "3"):
            store.remember(
                [
                    Conclusion(customer, ConclusionKind.PREFERENCE, f"Customer {customer} prefers SMS",
                               ConclusionSource.COMPACTION),
                    Conclusion(customer, ConclusionKind.PROMISE, f"Refund for #W{customer}000001 by {SOON}",
                               ConclusionSource.COMPACTION, SOON, (f"#W{customer}000001",)),
                ]
            )  # fmt: skip
        (sms,) = [item.id for item in store.list("1") if item.kind == "preference"]
        store.edit("1", sms, "Customer 1 prefers SMS after 6 pm", editor="staff:ana")
        store.remember([Conclusion("2", ConclusionKind.PROMISE, f"Refund for #W2000001 by {SOON + timedelta(1)}",
                                   ConclusionSource.COMPACTION, SOON, ("#W2000001",))])  # fmt: skip
        return {customer: _listing(store, customer) for customer in ("1", "2", "3")}
    finally:
        store.close()


def _listing(store: CustomerMemory, customer: str) -> set[tuple[str, str, str]]:
    return {(item.id, item.text, item.status) for item in store.list(customer)}


def test_migration_from_qdrant_keeps_every_memory_its_id_status_history_and_lock(tmp_path: Path) -> None:
    before = _seed_qdrant(tmp_path)
    report = migrate_store(hashing_options(tmp_path), source=VectorStoreKind.QDRANT, target=VectorStoreKind.SQLITE)
    assert report.total == sum(len(listed) for listed in before.values()) == 7
    assert report.unchanged == {hashing_options(tmp_path).collection: 0}

    store = CustomerMemory(hashing_options(tmp_path))
    try:
        assert {customer: _listing(store, customer) for customer in before} == before
        (edited,) = [item for item in store.list("1") if item.kind == "preference"]
        assert edited.locked and [row["event"] for row in store.history("1", edited.id)] == ["ADD", "UPDATE"]
        assert store.recall("2", "refund for #W2000001")[0].text.endswith(str(SOON + timedelta(1)))
        assert store.recall("3", "refund", limit=50)[0].customer_id == "3"
    finally:
        store.close()


def test_running_the_migration_again_changes_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    before = _seed_qdrant(tmp_path)
    options = hashing_options(tmp_path)
    migrate_store(options, source=VectorStoreKind.QDRANT, target=VectorStoreKind.SQLITE)
    again = migrate_store(options, source=VectorStoreKind.QDRANT, target=VectorStoreKind.SQLITE)
    assert again.copied == {options.collection: 0} and again.unchanged == {options.collection: 7}
    store = CustomerMemory(options)
    try:
        assert {customer: _listing(store, customer) for customer in before} == before
    finally:
        store.close()


def test_the_first_start_on_the_sqlite_store_moves_an_old_qdrant_store_once(tmp_path: Path) -> None:
    before = _seed_qdrant(tmp_path)
    options = hashing_options(tmp_path)
    report = upgrade_embedded_store(options)
    assert report is not None and report.total == 7
    store = CustomerMemory(options)
    try:
        assert store.forget_customer("3") == 2
    finally:
        store.close()
    assert upgrade_embedded_store(options) is None, "a completed migration is not run again"
    store = CustomerMemory(options)
    try:
        assert store.list("3") == [], "an erased customer does not come back from the old store"
        assert _listing(store, "1") == before["1"]
    finally:
        store.close()


def test_a_data_directory_without_a_qdrant_store_has_nothing_to_upgrade(tmp_path: Path) -> None:
    assert upgrade_embedded_store(hashing_options(tmp_path)) is None
    assert not hashing_options(tmp_path).sqlite_path.exists()


def test_migrating_between_the_same_kind_or_from_a_missing_store_is_refused(tmp_path: Path) -> None:
    options = hashing_options(tmp_path)
    with pytest.raises(MigrationError, match="both sqlite"):
        migrate_store(options, source=VectorStoreKind.SQLITE, target=VectorStoreKind.SQLITE)
    with pytest.raises(MigrationError, match="no Qdrant memory store"):
        migrate_store(options, source=VectorStoreKind.QDRANT, target=VectorStoreKind.SQLITE)
    with pytest.raises(MigrationError, match="must be qdrant or sqlite"):
        migrate_store(options, source=VectorStoreKind.PGVECTOR, target=VectorStoreKind.SQLITE)


def test_memories_move_on_from_the_sqlite_store_to_pgvector(tmp_path: Path, postgres_url: str) -> None:
    before = _seed_qdrant(tmp_path)
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    options = replace(hashing_options(tmp_path), pgvector_url=url)
    migrate_store(options, source=VectorStoreKind.QDRANT, target=VectorStoreKind.SQLITE)
    report = migrate_store(options, source=VectorStoreKind.SQLITE, target=VectorStoreKind.PGVECTOR)
    assert report.total == 7
    store = CustomerMemory(replace(options, vector_store=VectorStoreKind.PGVECTOR))
    try:
        assert {customer: _listing(store, customer) for customer in before} == before
    finally:
        store.close()
