"""Knowledge rows written straight to the database, for console tests that need sources, documents, chunks and
content gaps of a known shape (thousands of them, or hostile titles) without running an import."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlmodel import Session

from app.models import (
    GapReason,
    KnowledgeChunk,
    KnowledgeDocument,
    KnowledgeGap,
    KnowledgeSource,
)
from tests.support.rows import add_customer_conversation


@dataclass(frozen=True)
class DocumentSpec:
    title: str
    locator: str
    sections: Sequence[tuple[str, str]]  # (heading path, text) of each chunk
    url: str | None = None
    citations: int = 0


@dataclass
class AddedSource:
    id: int
    document_ids: list[int] = field(default_factory=list)


def add_source(session: Session, name: str, documents: Sequence[DocumentSpec]) -> AddedSource:
    """A source with its documents and their chunks, committed."""
    source = KnowledgeSource(name=name)
    session.add(source)
    session.flush()
    assert source.id is not None
    added = AddedSource(source.id)
    for spec in documents:
        text = "\n\n".join(body for _, body in spec.sections)
        document = KnowledgeDocument(
            source_id=source.id,
            locator=spec.locator,
            url=spec.url,
            title=spec.title,
            headings=[path for path, _ in spec.sections],
            content_hash=hashlib.sha256(text.encode()).hexdigest(),
            citation_count=spec.citations,
        )
        session.add(document)
        session.flush()
        assert document.id is not None
        added.document_ids.append(document.id)
        for position, (path, body) in enumerate(spec.sections):
            chunk = KnowledgeChunk(
                document_id=document.id, position=position, heading_path=path, text=body, token_count=len(body.split())
            )
            session.add(chunk)
    session.commit()
    return added


def add_gaps(session: Session, questions: Sequence[str], reason: GapReason = GapReason.LOW_SCORE) -> list[int]:
    """One open content gap per question, each in a conversation of its own; committed. Returns the gaps' ids."""
    ids = []
    for question in questions:
        _, conversation_id = add_customer_conversation(session)
        gap = KnowledgeGap(conversation_id=conversation_id, question=question, reason=reason, best_score=0.1)
        session.add(gap)
        session.flush()
        assert gap.id is not None
        ids.append(gap.id)
    session.commit()
    return ids
