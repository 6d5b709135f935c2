"""The knowledge tests' kit: a migrated database whose chunks are embedded by a recording hashing embedder.

``RecordingEmbedder`` is the real ``HashingEmbedder`` that also counts the texts it was asked to embed, so a test
can tell that a re-import of unchanged documents embedded nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine

from app.db import create_db_engine, upgrade
from app.knowledge.types import SourceDocument
from app.knowledge.vectors import KnowledgeVectors, attach_vectors
from memory.embedders import HashingEmbedder


class RecordingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, text: str, memory_action: Any = None) -> list[float]:
        self.texts.append(text)
        return super().embed(text, memory_action)

    def embed_batch(self, texts: Sequence[str], memory_action: Any = "add") -> list[list[float]]:
        return [self.embed(text, memory_action) for text in texts]


def knowledge_engine(url: str, embedder: Any | None = None) -> tuple[Engine, KnowledgeVectors]:
    """A migrated database at ``url`` whose knowledge is embedded by ``embedder`` (a ``RecordingEmbedder``)."""
    engine = create_db_engine(url)
    upgrade(engine)
    return engine, attach_vectors(engine, embedder or RecordingEmbedder())


def article(locator: str, title: str, *sections: tuple[str, str], url: str | None = None) -> SourceDocument:
    """A Markdown help article: a first-level title, then one second-level heading and body per section."""
    body = "\n\n".join(f"## {heading}\n\n{text}" for heading, text in sections)
    return SourceDocument(locator=locator, title=title, markdown=f"# {title}\n\n{body}\n", url=url)
