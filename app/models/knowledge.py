"""The team's knowledge: imported sources, their documents and chunks, the chunks a reply cited, and content gaps.

- ``KnowledgeSource``: one named origin of documents (a folder, a list of URLs, a sitemap, the demo shop's
  articles). Its last import's report is kept as JSON for the console; ``origins`` holds the page and sitemap
  URLs a console import read, which its re-import reads again (empty for files).
- ``KnowledgeDocument``: one imported page or file, keyed within its source by ``locator`` (the path inside the
  source, or the URL). ``content_hash`` is the SHA-256 of the extracted text: a re-import that finds the same hash
  touches nothing. ``url`` is only set for an http(s) address a customer may follow.
- ``KnowledgeChunk``: a piece of a document that follows its headings within a token budget; ``heading_path`` is
  what a reader sees ("Returns › Refund timing"). The full-text index over chunks and their embeddings are kept
  beside this table by ``0014_knowledge`` (``knowledge_chunks_search`` and ``knowledge_vectors``), not as ORM
  columns: their column types differ by database.
- ``MessageSource``: one chunk a stored reply drew on, under the marker the reply shows (``[1]``). Title, heading
  path and URL are copied, so a citation still reads after its document was re-imported or deleted.
- ``KnowledgeGap``: a customer question the knowledge could not answer, for the console's content-gap list.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import enum_type, json_type, utc_now
from app.models.support import NEVER_REUSE_IDS

SOURCE_NAME_LENGTH = 200
LOCATOR_LENGTH = 2000
TITLE_LENGTH = 500
HEADING_PATH_LENGTH = 1000
URL_LENGTH = 2000
CONTENT_HASH_LENGTH = 64  # a SHA-256 hex digest


class KnowledgeSource(SQLModel, table=True):
    __tablename__ = "knowledge_sources"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=SOURCE_NAME_LENGTH, unique=True)
    created_at: datetime = Field(default_factory=utc_now)
    last_import_at: datetime | None = None
    last_import_report: dict[str, Any] | None = Field(default=None, sa_type=json_type(nullable=True))
    origins: list[str] = Field(default_factory=list, sa_type=json_type())


class KnowledgeDocument(SQLModel, table=True):
    __tablename__ = "knowledge_documents"
    __table_args__ = (sa.UniqueConstraint("source_id", "locator"),)

    id: int | None = Field(default=None, primary_key=True)
    source_id: int = Field(foreign_key="knowledge_sources.id", ondelete="CASCADE", index=True)
    locator: str = Field(max_length=LOCATOR_LENGTH)
    url: str | None = Field(default=None, max_length=URL_LENGTH)
    title: str = Field(max_length=TITLE_LENGTH)
    headings: list[str] = Field(default_factory=list, sa_type=json_type())
    content_hash: str = Field(max_length=CONTENT_HASH_LENGTH)
    # When the source says the document last changed (a file's mtime, a sitemap's lastmod); None when unknown.
    source_updated_at: datetime | None = None
    imported_at: datetime = Field(default_factory=utc_now)
    citation_count: int = 0


class KnowledgeChunk(SQLModel, table=True):
    __tablename__ = "knowledge_chunks"
    # A chunk id reaches replies and tool results, and search's in-process vector matrix tells a changed table by
    # its highest id and row count: a replaced document's chunks must never come back under an old id.
    __table_args__ = (sa.UniqueConstraint("document_id", "position"), NEVER_REUSE_IDS)

    id: int | None = Field(default=None, primary_key=True)
    document_id: int = Field(foreign_key="knowledge_documents.id", ondelete="CASCADE")
    position: int
    heading_path: str = Field(default="", max_length=HEADING_PATH_LENGTH)
    text: str = Field(sa_type=sa.Text)
    token_count: int


class MessageSource(SQLModel, table=True):
    __tablename__ = "message_sources"

    id: int | None = Field(default=None, primary_key=True)
    message_id: int = Field(foreign_key="messages.id", ondelete="CASCADE", index=True)
    chunk_id: int | None = Field(default=None, foreign_key="knowledge_chunks.id", ondelete="SET NULL", index=True)
    marker: int
    title: str = Field(max_length=TITLE_LENGTH)
    heading_path: str = Field(default="", max_length=HEADING_PATH_LENGTH)
    url: str | None = Field(default=None, max_length=URL_LENGTH)


class GapReason(StrEnum):
    LOW_SCORE = "low_score"  # the best match fell under the confidence threshold
    HANDOFF_WITHOUT_SOURCE = "handoff_without_source"  # handed to a person with no source used


class GapStatus(StrEnum):
    OPEN = "open"
    DISMISSED = "dismissed"
    COVERED = "covered"


class KnowledgeGap(SQLModel, table=True):
    __tablename__ = "knowledge_gaps"

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = Field(foreign_key="conversations.id", ondelete="CASCADE", index=True)
    message_id: int | None = Field(default=None, foreign_key="messages.id", ondelete="CASCADE")
    question: str = Field(sa_type=sa.Text)
    reason: GapReason = Field(sa_type=enum_type(GapReason))
    best_score: float | None = None
    status: GapStatus = Field(default=GapStatus.OPEN, sa_type=enum_type(GapStatus), index=True)
    created_at: datetime = Field(default_factory=utc_now)
    resolved_at: datetime | None = None
    resolved_by: int | None = Field(default=None, foreign_key="staff_members.id", ondelete="SET NULL")
