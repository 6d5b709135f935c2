"""The sources a stored reply cites: written with the reply, read with the transcript.

``record_citations`` runs in the reply's own transaction (``store_message``'s ``alongside``): a reply and its
sources commit together or not at all. Each source keeps a copy of the chunk's title, heading path and URL, so a
citation still reads after its document is re-imported or deleted (``chunk_id`` then becomes NULL), and the cited
documents' ``citation_count`` (the Knowledge page's figure) goes up by one per reply.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from sqlalchemy import update
from sqlmodel import Session, col, select

from app.knowledge.types import CitedChunk
from app.models import KnowledgeChunk, KnowledgeDocument, MessageSource, SourcePublic
from app.models.knowledge import HEADING_PATH_LENGTH, TITLE_LENGTH, URL_LENGTH


def record_citations(session: Session, message_id: int, cited: Sequence[CitedChunk]) -> list[MessageSource]:
    if not cited:
        return []
    chunk_ids = [chunk.chunk_id for chunk in cited]
    present = dict(
        session.exec(
            select(KnowledgeChunk.id, KnowledgeChunk.document_id).where(col(KnowledgeChunk.id).in_(chunk_ids))
        ).all()
    )
    rows = [
        MessageSource(
            message_id=message_id,
            chunk_id=chunk.chunk_id if chunk.chunk_id in present else None,
            marker=chunk.ref,
            title=chunk.title[:TITLE_LENGTH],
            heading_path=chunk.heading_path[:HEADING_PATH_LENGTH],
            url=chunk.url if chunk.url is not None and len(chunk.url) <= URL_LENGTH else None,
        )
        for chunk in cited
    ]
    session.add_all(rows)
    documents = set(present.values())
    if documents:
        session.execute(
            update(KnowledgeDocument)
            .where(col(KnowledgeDocument.id).in_(documents))
            .values(citation_count=col(KnowledgeDocument.citation_count) + 1)
        )
    return rows


def public_sources(cited: Sequence[MessageSource | CitedChunk]) -> list[SourcePublic]:
    return [
        SourcePublic(
            marker=source.marker if isinstance(source, MessageSource) else source.ref,
            title=source.title,
            heading_path=source.heading_path,
            url=source.url,
        )
        for source in cited
    ]


def sources_by_message(session: Session, message_ids: Iterable[int]) -> dict[int, list[SourcePublic]]:
    """Each listed message's sources in marker order, as the API shows them; messages without any are absent."""
    ids = list(message_ids)
    found: dict[int, list[SourcePublic]] = defaultdict(list)
    if not ids:
        return found
    statement = (
        select(MessageSource)
        .where(col(MessageSource.message_id).in_(ids))
        .order_by(col(MessageSource.message_id), col(MessageSource.marker))
    )
    for source in session.exec(statement):
        found[source.message_id].extend(public_sources([source]))
    return found
