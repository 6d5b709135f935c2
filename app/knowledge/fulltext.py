"""Full-text candidates for knowledge search: the database's own ranking, never the query as syntax.

- SQLite: FTS5 ``bm25`` over the trigram index ``knowledge_chunks_search`` (the heading path weighs twice the
  text). The query is cut into its words (runs of letters and digits, in any script) and each word into its
  trigrams, OR-ed: a chunk sharing more of the question's trigrams, and rarer ones, ranks higher, so a misspelled
  word still finds most of the right one, and a Chinese question (no spaces) finds the chunks holding its
  characters. The trigram tokenizer needs three characters a term, so shorter words only count through the
  embeddings. Trigrams are letters and digits inside double quotes: nothing of them is FTS5 syntax.
- PostgreSQL: ``ts_rank`` over the GIN index's expression (repeated exactly so the planner uses it), each word
  OR-ed as a bound ``plainto_tsquery('simple', ...)``.

FTS5 scores every row a term matches, and a trigram such as "the" or "ing" is in most English chunks: in a large
store (``PRUNE_FROM_CHUNKS`` chunks or more) the trigrams found in more than ``COMMON_SHARE`` of the chunks are left
out of the query (their weight in ``bm25`` is small anyway), keeping at least the ``MIN_TRIGRAMS`` rarest. How many
chunks hold a trigram comes from FTS5's own vocabulary table (``fts5vocab``), remembered per database in this
process until the store has grown or shrunk by ``RECOUNT_CHANGE``: these counts only decide which trigrams to
leave out, so a slightly old count costs nothing but a little speed.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Sequence

from sqlalchemy import Engine, bindparam, text
from sqlmodel import Session

MAX_QUERY_CHARS = 1000
MAX_TERMS = 64  # distinct trigrams (SQLite) or words (PostgreSQL) of one query
TRIGRAM = 3
HEADING_WEIGHT, TEXT_WEIGHT = 2.0, 1.0
SEARCH_TABLE = "knowledge_chunks_search"
VOCABULARY_TABLE = "temp.knowledge_trigram_counts"
PRUNE_FROM_CHUNKS = 2_000
COMMON_SHARE = 0.1
MIN_TRIGRAMS = 4
RECOUNT_CHANGE = 0.2
# The GIN index expression of 0014_knowledge, repeated exactly so that the planner uses the index.
PG_DOCUMENT = "to_tsvector('simple'::regconfig, heading_path || ' ' || left(text, 200000))"
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


def full_text_candidates(session: Session, query: str, limit: int) -> list[int]:
    """Chunk ids by full-text rank, best first."""
    words = query_words(query)
    if session.get_bind().dialect.name == "postgresql":
        return _postgres_candidates(session, words[:MAX_TERMS], limit)
    trigrams = query_trigrams(words)
    if not trigrams:
        return []
    trigrams = _frequencies(session).leave_out_common(session, trigrams)
    rows = session.execute(
        text(
            f"SELECT rowid FROM {SEARCH_TABLE} WHERE {SEARCH_TABLE} MATCH :match "
            f"ORDER BY bm25({SEARCH_TABLE}, {HEADING_WEIGHT}, {TEXT_WEIGHT}), rowid DESC LIMIT :limit"
        ),
        {"match": fts5_match(trigrams), "limit": limit},
    ).all()
    return [int(row[0]) for row in rows]


def _postgres_candidates(session: Session, words: Sequence[str], limit: int) -> list[int]:
    if not words:
        return []
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


class TrigramFrequencies:
    """How many chunks of one SQLite database hold each trigram asked about (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._counted_at = 0  # the chunk count when the remembered counts were taken

    def leave_out_common(self, session: Session, trigrams: list[str]) -> list[str]:
        chunks = int(session.execute(text("SELECT count(*) FROM knowledge_chunks")).scalar_one())
        if chunks < PRUNE_FROM_CHUNKS:
            return trigrams
        counts = self._counts_of(session, trigrams, chunks)
        rare = [trigram for trigram in trigrams if counts[trigram] <= COMMON_SHARE * chunks]
        if len(rare) >= MIN_TRIGRAMS:
            return rare
        return sorted(trigrams, key=lambda trigram: counts[trigram])[:MIN_TRIGRAMS]

    def _counts_of(self, session: Session, trigrams: list[str], chunks: int) -> dict[str, int]:
        with self._lock:
            if abs(chunks - self._counted_at) > RECOUNT_CHANGE * max(self._counted_at, 1):
                self._counts, self._counted_at = {}, chunks
            missing = [trigram for trigram in trigrams if trigram not in self._counts]
        if missing:
            session.execute(
                text(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCABULARY_TABLE} USING fts5vocab(main, {SEARCH_TABLE}, row)"
                )
            )
            rows = session.execute(
                text(f"SELECT term, doc FROM {VOCABULARY_TABLE} WHERE term IN :terms").bindparams(
                    bindparam("terms", expanding=True)
                ),
                {"terms": missing},
            ).all()
            found = {str(row[0]): int(row[1]) for row in rows}
            with self._lock:
                self._counts.update({trigram: found.get(trigram, 0) for trigram in missing})
        with self._lock:
            return {trigram: self._counts.get(trigram, 0) for trigram in trigrams}


_by_engine: weakref.WeakKeyDictionary[Engine, TrigramFrequencies] = weakref.WeakKeyDictionary()
_by_engine_lock = threading.Lock()


def _frequencies(session: Session) -> TrigramFrequencies:
    bind = session.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine
    with _by_engine_lock:
        found = _by_engine.get(engine)
        if found is None:
            found = _by_engine[engine] = TrigramFrequencies()
        return found
