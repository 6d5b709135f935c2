"""The values that pass between the knowledge package's parts: readers, the importer, search and citations.

- ``SourceDocument``: what a reader (a file, a page, an archive member) extracts from one document: its text as
  Markdown, so that every format's headings reach the chunker the same way (``#`` lines), and where it came from.
- ``DocumentFailure``: a document a reader could not read, with a sentence a person can act on. The import reports
  it and goes on.
- ``KnowledgeHit``: one chunk that search found for a question, with what a reply needs to cite it.
- ``CitedChunk``: a chunk as the model was given it (its ``ref`` within the turn) and a reply may cite it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class SourceDocument:
    locator: str  # the path inside the source, or the URL: a document's identity within its source
    title: str
    markdown: str
    url: str | None = None  # only an http(s) address a customer may follow
    updated_at: datetime | None = None


@dataclass(frozen=True)
class DocumentFailure:
    locator: str
    reason: str
    # What failed may have listed other documents (a sitemap that could not be read): their stored copies were not
    # seen, so a prune would take them for gone; the import prunes nothing instead.
    hides_documents: bool = False


@dataclass(frozen=True)
class KnowledgeHit:
    chunk_id: int
    document_id: int
    title: str
    heading_path: str
    url: str | None
    text: str
    # The fused rank score that orders hits, and the confidence that decides whether the best one answers the
    # question at all (prefetch, content gaps); the two are on different scales.
    score: float
    confidence: float
    ranks: dict[str, int] = field(default_factory=dict)  # each retriever's 1-based rank of this chunk


@dataclass(frozen=True)
class CitedChunk:
    ref: int  # the number the model cites it by, unique within the turn
    chunk_id: int
    title: str
    heading_path: str
    url: str | None  # only an http(s) address
