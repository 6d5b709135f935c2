"""Copy long-term memories from one vector store to another (``memdesk memory migrate-store --from qdrant``).

``migrate_store`` copies every point (id, vector, payload) of memdesk's collection, and of the entity collection
Mem0 keeps beside it when it has one, from the source store to the target, unchanged: ids are kept, so Mem0's
history (its own SQLite file, keyed by memory id, shared by every store kind) still applies to every memory. Points
the target already holds with the same payload are left alone and differing ones are overwritten, so a migration
that was interrupted, or is run twice, ends in the same state. Each batch is read back from the target and compared
with the source before the next one; the source is never modified.

Sources: the embedded Qdrant directory (the former default) or the SQLite store. Targets: any store kind but the
source. The stores must not be in use by a server while Qdrant is the source (Qdrant's local mode admits one
process); the SQLite store may be.

``upgrade_embedded_store`` is what a server runs at start: when the data directory holds a Qdrant store that was
never migrated completely into the SQLite store, it migrates it first, so no memory is left behind on upgrade. A
completed migration is recorded in the SQLite file; the Qdrant directory is left in place (delete it once the
memories are checked: erasing a customer later does not reach it).

Errors: ``MigrationError`` (a ``RuntimeError``) when source and target are the same kind, the source is missing or
cannot be read, or a copied point does not read back as it was written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memory.config import MemoryOptions, VectorStoreKind, build_mem0_config, prepare_environment

MIGRATION_BATCH = 500
ENTITY_SUFFIX = "_entities"  # Mem0's entity collection: "<collection>_entities" (mem0.memory.main)
SOURCES = (VectorStoreKind.QDRANT, VectorStoreKind.SQLITE)

logger = logging.getLogger(__name__)

Point = tuple[str, list[float], dict[str, Any]]


class MigrationError(RuntimeError):
    """The memories could not be copied, or did not arrive as they left."""


@dataclass(frozen=True)
class MigrationReport:
    source: VectorStoreKind
    target: VectorStoreKind
    copied: dict[str, int] = field(default_factory=dict)  # collection -> points written (new or changed)
    unchanged: dict[str, int] = field(default_factory=dict)  # collection -> points the target already held

    @property
    def total(self) -> int:
        return sum(self.copied.values()) + sum(self.unchanged.values())


def _open(options: MemoryOptions, kind: VectorStoreKind, collection: str, client: Any = None) -> Any:
    """A Mem0 vector store of ``kind`` on ``collection`` (the same construction ``mem0.Memory`` uses)."""
    from mem0.utils.factory import VectorStoreFactory

    config = build_mem0_config(replace(options, vector_store=kind, collection=collection)).vector_store
    if client is not None:  # a second Qdrant collection shares the client: local mode admits one per directory
        config.config.client = client
    return VectorStoreFactory.create(config.provider, config.config)


def _qdrant_points(store: Any, batch_size: int) -> Iterator[Point]:
    offset = None
    while True:
        points, offset = store.client.scroll(
            collection_name=store.collection_name, limit=batch_size, offset=offset, with_payload=True, with_vectors=True
        )
        for point in points:
            vector = point.vector
            if isinstance(vector, dict):  # named vectors: Mem0's dense vector is the unnamed one
                vector = vector.get("", next(iter(vector.values())))
            yield str(point.id), list(vector), dict(point.payload or {})
        if offset is None:
            return


def _points(store: Any, kind: VectorStoreKind, batch_size: int) -> Iterator[Point]:
    if kind is VectorStoreKind.QDRANT:
        return _qdrant_points(store, batch_size)
    return iter(store.points(batch_size))


def _batches(points: Iterator[Point], size: int) -> Iterator[list[Point]]:
    batch: list[Point] = []
    for point in points:
        batch.append(point)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _copy_batch(target: Any, batch: Sequence[Point]) -> int:
    """Write the points of ``batch`` the target lacks or holds differently; returns how many were written."""
    held = {point_id: target.get(point_id) for point_id, _, _ in batch}
    missing = [point for point in batch if held[point[0]] is None]
    changed = [point for point in batch if held[point[0]] is not None and held[point[0]].payload != point[2]]
    if missing:
        target.insert(
            vectors=[vector for _, vector, _ in missing],
            payloads=[payload for _, _, payload in missing],
            ids=[point_id for point_id, _, _ in missing],
        )
    for point_id, vector, payload in changed:
        target.update(point_id, vector=vector, payload=payload)
    for point_id, _, payload in batch:
        stored = target.get(point_id)
        if stored is None or stored.payload != payload:
            raise MigrationError(f"Memory {point_id} did not read back from the target store as it was written.")
    return len(missing) + len(changed)


def _source_collections(options: MemoryOptions, source: VectorStoreKind) -> list[str]:
    """memdesk's collection, and Mem0's entity collection when the source has one."""
    entities = options.collection + ENTITY_SUFFIX
    if source is VectorStoreKind.QDRANT:
        if not (options.qdrant_path / "collection" / options.collection).is_dir():
            raise MigrationError(f"There is no Qdrant memory store at {options.qdrant_path}.")
        present = (options.qdrant_path / "collection" / entities).is_dir()
    else:
        if not options.sqlite_path.is_file():
            raise MigrationError(f"There is no SQLite memory store at {options.sqlite_path}.")
        probe = _open(options, source, options.collection)
        try:
            present = entities in probe.list_cols()
        finally:
            probe.close()
    return [options.collection, entities] if present else [options.collection]


def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()
    pool = getattr(store, "connection_pool", None)  # pgvector
    if pool is not None:
        pool.close()


def migrate_store(
    options: MemoryOptions,
    *,
    source: VectorStoreKind,
    target: VectorStoreKind,
    batch_size: int = MIGRATION_BATCH,
) -> MigrationReport:
    """Copy every memory of the ``source`` store to the ``target`` store, both configured by ``options``."""
    if source is target:
        raise MigrationError(f"The source and the target are both {source.value}; name two different stores.")
    if source not in SOURCES:
        raise MigrationError(f"Migrating from {source.value} is not supported; the source must be qdrant or sqlite.")
    prepare_environment(options)
    report = MigrationReport(source=source, target=target)
    source_client = None
    for collection in _source_collections(options, source):
        reader = _open(options, source, collection, client=source_client)
        source_client = getattr(reader, "client", None) if source is VectorStoreKind.QDRANT else None
        writer = _open(options, target, collection)
        try:
            copied = unchanged = 0
            for batch in _batches(_points(reader, source, batch_size), batch_size):
                written = _copy_batch(writer, batch)
                copied, unchanged = copied + written, unchanged + len(batch) - written
        finally:
            _close(writer)
            if source is not VectorStoreKind.QDRANT:
                _close(reader)
        report.copied[collection], report.unchanged[collection] = copied, unchanged
        logger.info("Migrated %s: %d written, %d already there", collection, copied, unchanged)
    if source_client is not None:
        source_client.close()
    if target is VectorStoreKind.SQLITE:
        marker = _open(options, target, options.collection)
        try:
            marker.mark_migrated(source.value)
        finally:
            marker.close()
    return report


def upgrade_embedded_store(options: MemoryOptions) -> MigrationReport | None:
    """At start, with the SQLite store chosen: migrate the data directory's embedded Qdrant store unless a migration
    from it already completed. None when there is nothing to migrate."""
    if options.vector_store is not VectorStoreKind.SQLITE:
        return None
    if not (options.qdrant_path / "collection" / options.collection).is_dir():
        return None
    prepare_environment(options)
    store = _open(options, VectorStoreKind.SQLITE, options.collection)
    try:
        done = store.migrated_from(VectorStoreKind.QDRANT.value)
    finally:
        store.close()
    if done:
        return None
    logger.warning("Moving the memories of %s to %s", options.qdrant_path, options.sqlite_path)
    return migrate_store(options, source=VectorStoreKind.QDRANT, target=VectorStoreKind.SQLITE)
