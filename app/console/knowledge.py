"""The console's Knowledge page: what the bot knows, where it came from, and how often replies cited it.

- ``list_sources``: every source with its document, chunk and citation counts and its last import's report, in
  three grouped queries whatever the number of sources.
- ``source_page`` / ``document_page``: one source's documents, or one document's chunks with their heading paths,
  a page at a time (``PAGE_SIZE``), so that a source of thousands of pages opens as fast as a small one.
- ``delete_source`` / ``delete_document``: remove a source (its documents, chunks, embeddings and full-text rows
  follow by cascade and the index's triggers) or one document; audited with the action. Citations already
  stored keep their copied title and URL (``message_sources.chunk_id`` is set to NULL).
- ``record_console_import``: audit an import from the console, and keep the URLs a re-import reads again.
- ``ImportSummary``: a source's stored import report as the page shows it (counts, and each failure's reason).

Importing and searching are the knowledge package's own functions (``app.knowledge.importer``, ``.search``); the
routes call them, and this module only reads and deletes rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from app.console.audit import record_audit_event
from app.models import KnowledgeChunk, KnowledgeDocument, KnowledgeSource

PAGE_SIZE = 50
REPORT_COUNTS = ("added", "updated", "unchanged", "removed", "failed")
# A report with thousands of failures is shown by its first ones; the count says how many there were.
FAILURES_SHOWN = 100


class KnowledgeNotFoundError(LookupError):
    """The source, document or chunk asked for does not exist (any longer)."""


@dataclass(frozen=True)
class ImportFailure:
    locator: str
    reason: str


@dataclass(frozen=True)
class ImportSummary:
    """An import report as ``ImportReport.as_dict()`` stores it: each outcome's count, and the failures' reasons."""

    counts: dict[str, int]
    failures: list[ImportFailure] = field(default_factory=list)
    dry_run: bool = False

    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_report(cls, report: dict[str, Any] | None) -> ImportSummary | None:
        """The summary of a stored report; None when there is none. The exact counts are under ``counts`` (the
        lists of locators are cut short); a report from an older or newer version reads as far as it matches."""
        if not isinstance(report, dict):
            return None
        stored = report.get("counts")
        stored_counts = stored if isinstance(stored, dict) else {}
        counts = {name: _count(stored_counts.get(name, report.get(name))) for name in REPORT_COUNTS}
        failed = report.get("failed")
        failures = [_failure(item) for item in failed[:FAILURES_SHOWN]] if isinstance(failed, list) else []
        notes = report.get("notes")
        return cls(
            counts=counts,
            failures=failures,
            dry_run=bool(report.get("dry_run", False)),
            notes=[str(note) for note in notes] if isinstance(notes, list) else [],
        )


def _count(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    return len(value) if isinstance(value, list | tuple | dict) else 0


def _failure(item: Any) -> ImportFailure:
    if isinstance(item, dict):
        return ImportFailure(str(item.get("locator", "")), str(item.get("reason", "")))
    return ImportFailure(str(item), "")


@dataclass(frozen=True)
class SourceSummary:
    id: int
    name: str
    documents: int
    chunks: int
    citations: int
    created_at: datetime
    last_import_at: datetime | None
    last_import: ImportSummary | None
    origins: list[str] = field(default_factory=list)  # the URLs a re-import reads again; none for files


@dataclass(frozen=True)
class DocumentRow:
    id: int
    title: str
    locator: str
    url: str | None
    updated_at: datetime | None  # when the source says it changed, else when it was imported
    imported_at: datetime
    chunks: int
    citations: int


@dataclass(frozen=True)
class SourcePage:
    source: SourceSummary
    documents: list[DocumentRow]
    page: int
    has_more: bool


@dataclass(frozen=True)
class ChunkRow:
    id: int
    position: int
    heading_path: str
    text: str
    token_count: int


@dataclass(frozen=True)
class DocumentPage:
    document: DocumentRow
    source_id: int
    source_name: str
    chunks: list[ChunkRow]
    page: int
    has_more: bool


def _document_counts(session: Session, source_ids: list[int] | None = None) -> dict[int, tuple[int, int]]:
    statement = sa_select(
        col(KnowledgeDocument.source_id),
        func.count(col(KnowledgeDocument.id)),
        func.coalesce(func.sum(col(KnowledgeDocument.citation_count)), 0),
    ).group_by(col(KnowledgeDocument.source_id))
    if source_ids is not None:
        statement = statement.where(col(KnowledgeDocument.source_id).in_(source_ids))
    return {source_id: (documents, citations) for source_id, documents, citations in session.execute(statement)}


def _chunk_counts(session: Session, source_ids: list[int] | None = None) -> dict[int, int]:
    statement = (
        sa_select(col(KnowledgeDocument.source_id), func.count(col(KnowledgeChunk.id)))
        .join(KnowledgeChunk, col(KnowledgeChunk.document_id) == col(KnowledgeDocument.id))
        .group_by(col(KnowledgeDocument.source_id))
    )
    if source_ids is not None:
        statement = statement.where(col(KnowledgeDocument.source_id).in_(source_ids))
    return {source_id: chunks for source_id, chunks in session.execute(statement)}


def _summaries(session: Session, sources: list[KnowledgeSource]) -> list[SourceSummary]:
    ids = [source.id for source in sources if source.id is not None]
    documents = _document_counts(session, ids)
    chunks = _chunk_counts(session, ids)
    summaries = []
    for source in sources:
        assert source.id is not None
        document_count, citations = documents.get(source.id, (0, 0))
        summaries.append(
            SourceSummary(
                id=source.id,
                name=source.name,
                documents=document_count,
                chunks=chunks.get(source.id, 0),
                citations=citations,
                created_at=source.created_at,
                last_import_at=source.last_import_at,
                last_import=ImportSummary.from_report(source.last_import_report),
                origins=list(source.origins),
            )
        )
    return summaries


def list_sources(session: Session) -> list[SourceSummary]:
    """Every source, by name, with its counts and last import."""
    sources = list(session.scalars(sa_select(KnowledgeSource).order_by(col(KnowledgeSource.name))))
    return _summaries(session, sources)


def find_source(session: Session, source_id: int) -> SourceSummary:
    source = session.get(KnowledgeSource, source_id)
    if source is None:
        raise KnowledgeNotFoundError("This knowledge source does not exist (it may have been deleted).")
    return _summaries(session, [source])[0]


def find_source_by_name(session: Session, name: str) -> KnowledgeSource | None:
    return session.scalars(sa_select(KnowledgeSource).where(col(KnowledgeSource.name) == name)).first()


def record_console_import(
    session: Session, name: str, counts: dict[str, int], *, actor: str, origins: list[str] | None
) -> int:
    """Audit a console import into the source named ``name`` and return its id; with ``origins`` (the URLs it was
    imported from), record them for a re-import. An upload leaves what was recorded: files cannot be read again."""
    source = find_source_by_name(session, name)
    if source is None or source.id is None:
        raise KnowledgeNotFoundError("This knowledge source does not exist (it may have been deleted).")
    if origins is not None:
        source.origins = list(origins)
        session.add(source)
    record_audit_event(
        session,
        actor=actor,
        action="console.knowledge_imported",
        target_type="knowledge_source",
        target_id=source.id,
        detail={"name": name, "from": "urls" if origins is not None else "upload", **counts},
    )
    session.commit()
    return source.id


def _chunk_count_column() -> Any:
    return (
        sa_select(func.count(col(KnowledgeChunk.id)))
        .where(col(KnowledgeChunk.document_id) == col(KnowledgeDocument.id))
        .correlate(KnowledgeDocument)
        .scalar_subquery()
    )


def _document_row(document: KnowledgeDocument, chunks: int) -> DocumentRow:
    assert document.id is not None
    return DocumentRow(
        id=document.id,
        title=document.title,
        locator=document.locator,
        url=document.url,
        updated_at=document.source_updated_at or document.imported_at,
        imported_at=document.imported_at,
        chunks=chunks,
        citations=document.citation_count,
    )


def _offset(page: int) -> int:
    return (max(1, page) - 1) * PAGE_SIZE


def source_page(session: Session, source_id: int, page: int = 1) -> SourcePage:
    """One page of a source's documents, by title, each with its chunk count (a subquery evaluated for the page's
    rows only)."""
    source = find_source(session, source_id)
    statement = (
        sa_select(KnowledgeDocument, _chunk_count_column())
        .where(col(KnowledgeDocument.source_id) == source_id)
        .order_by(col(KnowledgeDocument.title), col(KnowledgeDocument.id))
        .offset(_offset(page))
        .limit(PAGE_SIZE + 1)
    )
    found = [_document_row(document, chunks) for document, chunks in session.execute(statement)]
    return SourcePage(source, found[:PAGE_SIZE], max(1, page), has_more=len(found) > PAGE_SIZE)


def document_page(session: Session, document_id: int, page: int = 1) -> DocumentPage:
    """One page of a document's chunks, in their order in the document."""
    found = session.execute(
        sa_select(KnowledgeDocument, _chunk_count_column(), col(KnowledgeSource.name))
        .join(KnowledgeSource, col(KnowledgeSource.id) == col(KnowledgeDocument.source_id))
        .where(col(KnowledgeDocument.id) == document_id)
    ).first()
    if found is None:
        raise KnowledgeNotFoundError("This document does not exist (it may have been re-imported or deleted).")
    document, chunk_count, source_name = found
    statement = (
        sa_select(KnowledgeChunk)
        .where(col(KnowledgeChunk.document_id) == document_id)
        .order_by(col(KnowledgeChunk.position))
        .offset(_offset(page))
        .limit(PAGE_SIZE + 1)
    )
    chunks = [
        ChunkRow(chunk.id, chunk.position, chunk.heading_path, chunk.text, chunk.token_count)
        for chunk in session.scalars(statement)
        if chunk.id is not None
    ]
    return DocumentPage(
        document=_document_row(document, chunk_count),
        source_id=document.source_id,
        source_name=source_name,
        chunks=chunks[:PAGE_SIZE],
        page=max(1, page),
        has_more=len(chunks) > PAGE_SIZE,
    )


def delete_source(session: Session, source_id: int, *, actor: str) -> SourceSummary:
    """Delete a source with everything imported from it; audited in the same transaction. Returns what it was."""
    summary = find_source(session, source_id)
    session.execute(delete(KnowledgeSource).where(col(KnowledgeSource.id) == source_id))
    record_audit_event(
        session,
        actor=actor,
        action="console.knowledge_source_deleted",
        target_type="knowledge_source",
        target_id=source_id,
        detail={"name": summary.name, "documents": summary.documents, "chunks": summary.chunks},
    )
    session.commit()
    return summary


def delete_document(session: Session, document_id: int, *, actor: str) -> DocumentPage:
    """Delete one document and its chunks; audited in the same transaction. Returns what it was."""
    deleted = document_page(session, document_id)
    session.execute(delete(KnowledgeDocument).where(col(KnowledgeDocument.id) == document_id))
    record_audit_event(
        session,
        actor=actor,
        action="console.knowledge_document_deleted",
        target_type="knowledge_document",
        target_id=document_id,
        detail={"source": deleted.source_name, "locator": deleted.document.locator, "title": deleted.document.title},
    )
    session.commit()
    return deleted
