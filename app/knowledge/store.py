"""Storing documents: a document with its chunks and their vectors is written in one transaction, whole or not at all.

``PreparedDocument`` is the costly part done before any transaction opens (chunking, embedding), so the database's
write lock is held only for the inserts. ``write_document`` then, in the caller's transaction:

- adds the document when its source has none at that locator;
- replaces a changed one in place: same document id (its citation count stays), new fields, its old chunks deleted
  (their vectors and full-text rows follow by cascade and triggers) and the new ones inserted;
- touches nothing when the stored content hash is the prepared one (another import got there first).

``content_hash`` is what decides "unchanged": the SHA-256 of the title, the URL and the Markdown, so an edited title
or a moved page is an update too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.knowledge.chunking import Chunk, chunk_document
from app.knowledge.types import SourceDocument
from app.knowledge.vector_matrix import FloatMatrix
from app.knowledge.vectors import KnowledgeVectors, embedding_text
from app.models.base import utc_now
from app.models.knowledge import (
    TITLE_LENGTH,
    URL_LENGTH,
    KnowledgeChunk,
    KnowledgeDocument,
    KnowledgeSource,
)


class WriteOutcome(StrEnum):
    ADDED = "added"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


def content_hash(document: SourceDocument) -> str:
    digest = hashlib.sha256()
    for part in (document.title, document.url or "", document.markdown):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


@dataclass(frozen=True)
class PreparedDocument:
    document: SourceDocument
    content_hash: str
    headings: list[str]
    chunks: list[Chunk]
    vectors: FloatMatrix


def prepare_document(
    document: SourceDocument, vectors: KnowledgeVectors, *, budget_tokens: int, digest: str | None = None
) -> PreparedDocument:
    """Chunk and embed ``document``; nothing touches the database."""
    chunked = chunk_document(document.title, document.markdown, budget_tokens=budget_tokens)
    matrix = vectors.embed([embedding_text(chunk.heading_path, chunk.text) for chunk in chunked.chunks])
    return PreparedDocument(document, digest or content_hash(document), chunked.headings, chunked.chunks, matrix)


def source_named(session: Session, name: str, *, create: bool) -> KnowledgeSource | None:
    """The source called ``name``; with ``create``, made if missing (another server may make it at the same time)."""
    statement = select(KnowledgeSource).where(KnowledgeSource.name == name)
    source = session.exec(statement).first()
    if source is not None or not create:
        return source
    try:
        with session.begin_nested():
            source = KnowledgeSource(name=name)
            session.add(source)
    except IntegrityError:
        return session.exec(statement).one()
    return source


def stored_hashes(session: Session, source_id: int) -> dict[str, str]:
    """Each stored document's content hash, by locator."""
    rows = session.exec(
        select(KnowledgeDocument.locator, KnowledgeDocument.content_hash).where(
            KnowledgeDocument.source_id == source_id
        )
    ).all()
    return {locator: digest for locator, digest in rows}


def write_document(
    session: Session, vectors: KnowledgeVectors, source_id: int, prepared: PreparedDocument
) -> WriteOutcome:
    """Add, replace or leave the document at ``prepared``'s locator, in the session's transaction (not committed)."""
    document = prepared.document
    stored = session.exec(
        select(KnowledgeDocument).where(
            KnowledgeDocument.source_id == source_id, KnowledgeDocument.locator == document.locator
        )
    ).first()
    if stored is not None and stored.content_hash == prepared.content_hash:
        return WriteOutcome.UNCHANGED
    outcome = WriteOutcome.ADDED if stored is None else WriteOutcome.UPDATED
    if stored is None:
        stored = KnowledgeDocument(source_id=source_id, locator=document.locator, title="", content_hash="")
    else:
        session.execute(delete(KnowledgeChunk).where(col(KnowledgeChunk.document_id) == stored.id))
    _fill(stored, prepared)
    session.add(stored)
    session.flush()
    assert stored.id is not None
    rows = [
        KnowledgeChunk(
            document_id=stored.id,
            position=chunk.position,
            heading_path=chunk.heading_path,
            text=chunk.text,
            token_count=chunk.token_count,
        )
        for chunk in prepared.chunks
    ]
    session.add_all(rows)
    session.flush()
    vectors.write(session, [row.id for row in rows if row.id is not None], prepared.vectors)
    return outcome


def _fill(stored: KnowledgeDocument, prepared: PreparedDocument) -> None:
    document = prepared.document
    stored.title = _clip(document.title, TITLE_LENGTH)
    stored.url = document.url if document.url and len(document.url) <= URL_LENGTH else None
    stored.headings = prepared.headings
    stored.content_hash = prepared.content_hash
    stored.source_updated_at = _aware(document.updated_at)
    stored.imported_at = utc_now()


def delete_documents(session: Session, source_id: int, locators: list[str]) -> None:
    """Remove these documents of the source (chunks, vectors and full-text rows go with them)."""
    if locators:
        session.execute(
            delete(KnowledgeDocument).where(
                col(KnowledgeDocument.source_id) == source_id, col(KnowledgeDocument.locator).in_(locators)
            )
        )


def delete_source(session: Session, name: str) -> int | None:
    """Remove a source with all its documents; the number of documents removed, or None if there is no such source."""
    source = source_named(session, name, create=False)
    if source is None:
        return None
    count = len(stored_hashes(session, source.id or 0))
    session.execute(delete(KnowledgeSource).where(col(KnowledgeSource.id) == source.id))
    return count


def _clip(value: str, length: int) -> str:
    return value if len(value) <= length else value[: length - 1] + "…"


def _aware(moment: datetime | None) -> datetime | None:
    # A naive time from a reader (a sitemap's date without a zone) is taken as UTC, as the app stores every time.
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)
