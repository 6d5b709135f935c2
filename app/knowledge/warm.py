"""Getting a server's knowledge search ready before the first question: ``warm_knowledge(engine)``.

On SQLite the first search would otherwise pay for what every later one reuses: reading every chunk vector into the
in-process matrix (about 150 MB at 100k chunks) and counting how many chunks hold each trigram. Started by the app's
services in a worker thread; on PostgreSQL the indexes live in the database, and nothing is done.
"""

from __future__ import annotations

from sqlalchemy import Engine
from sqlmodel import Session

from app.knowledge.term_frequencies import trigram_frequencies
from app.knowledge.vectors import vectors_for


def warm_knowledge(engine: Engine) -> int:
    """Load the matrix and the trigram counts of ``engine``'s knowledge; returns how many chunks there are (0 on
    PostgreSQL)."""
    if engine.dialect.name != "sqlite":
        return 0
    with Session(engine) as session:
        chunks = vectors_for(engine).searcher(session).chunk_count or 0
        trigram_frequencies(session).load_all(session, chunks)
    return chunks
