"""Full-text candidates for knowledge search: the database's own ranking, never the query as syntax.

- SQLite: FTS5 ``bm25`` over the trigram index ``knowledge_chunks_search`` (the heading path weighs twice the
  text). The query is cut into its words (runs of letters and digits, in any script) and each word into its
  trigrams, OR-ed: a chunk sharing more of the question's trigrams, and rarer ones, ranks higher, so a misspelled
  word still finds most of the right one, and a Chinese question (no spaces) finds the chunks holding its
  characters. The trigram tokenizer needs three characters a term, so shorter words only count through the
  embeddings. Trigrams are letters and digits inside double quotes: nothing of them is FTS5 syntax.
- PostgreSQL: ``ts_rank`` over the chunk's stored tsvector (``search_document``, under a GIN index), each word
  OR-ed as a bound ``plainto_tsquery('simple', ...)``.

In a large store the terms found in most chunks are left out of the query first
(``app.knowledge.term_frequencies``): ranking them would cost the most and change the order the least.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy import text
from sqlmodel import Session

from app.knowledge.term_frequencies import SEARCH_TABLE, trigram_frequencies, word_frequencies

MAX_QUERY_CHARS = 1000
MAX_TERMS = 64  # distinct trigrams (SQLite) or words (PostgreSQL) of one query
TRIGRAM = 3
HEADING_WEIGHT, TEXT_WEIGHT = 2.0, 1.0
# The stored tsvector of 0018_knowledge_search_document, under the GIN index: matching reads the index, ranking
# reads the stored column rather than tokenizing each matching chunk again.
PG_DOCUMENT = "knowledge_chunks.search_document"
_WORD = re.compile(r"[^\W_]+")


def query_words(query: str) -> list[str]:
    """The query's words, lower-cased and deduplicated in order."""
    words: dict[str, None] = {}
    for word in _WORD.findall(query[:MAX_QUERY_CHARS].lower()):
        words.setdefault(word, None)
    return list(words)


def query_trigrams(words: Sequence[str]) -> list[str]:
    """Every distinct three-character window of the words (at most ``MAX_TERMS``), in order."""
    trigrams: dict[str, None] = {}
    for word in words:
        for start in range(len(word) - TRIGRAM + 1):
            trigrams.setdefault(word[start : start + TRIGRAM], None)
    return list(trigrams)[:MAX_TERMS]


def fts5_match(trigrams: Sequence[str]) -> str:
    return " OR ".join(f'"{trigram}"' for trigram in trigrams)


def full_text_candidates(session: Session, query: str, limit: int, *, chunk_count: int | None = None) -> list[int]:
    """Chunk ids by full-text rank, best first (``chunk_count``: how many chunks there are, when already counted)."""
    words = query_words(query)
    if session.get_bind().dialect.name == "postgresql":
        return _postgres_candidates(session, words[:MAX_TERMS], limit)
    trigrams = query_trigrams(words)
    if not trigrams:
        return []
    trigrams = trigram_frequencies(session).keep(session, trigrams, chunk_count)
    rows = session.execute(
        text(
            f"SELECT rowid FROM {SEARCH_TABLE} WHERE {SEARCH_TABLE} MATCH :match "
            f"ORDER BY bm25({SEARCH_TABLE}, {HEADING_WEIGHT}, {TEXT_WEIGHT}), rowid DESC LIMIT :limit"
        ),
        {"match": fts5_match(trigrams), "limit": limit},
    ).all()
    return [int(row[0]) for row in rows]


def _postgres_candidates(session: Session, words: list[str], limit: int) -> list[int]:
    if not words:
        return []
    words = word_frequencies(session).keep(session, words)
    tsquery = " || ".join(f"plainto_tsquery('simple'::regconfig, :w{index})" for index in range(len(words)))
    rows = session.execute(
        text(
            f"WITH search AS (SELECT {tsquery} AS q) "
            f"SELECT knowledge_chunks.id FROM knowledge_chunks, search WHERE {PG_DOCUMENT} @@ search.q "
            f"ORDER BY ts_rank({PG_DOCUMENT}, search.q) DESC, knowledge_chunks.id DESC LIMIT :limit"
        ),
        {**{f"w{index}": word for index, word in enumerate(words)}, "limit": limit},
    ).all()
    return [int(row[0]) for row in rows]
