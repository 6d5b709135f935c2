"""How many chunks hold each term of a question, so that a search in a large store leaves out the terms that would
make the database rank most of the store.

Both databases score every row a term matches before they can return the best twenty, and the time goes with the
rows matched: about half a microsecond a row for FTS5's ``bm25``, over one for PostgreSQL, which reads each matching
row's stored tsvector from the table for ``ts_rank``. A trigram such as "the" or "ing", or a word such as "is",
is in most English chunks while weighing little in the ranking. In a store of ``PRUNE_FROM_CHUNKS`` chunks or more,
``distinctive_terms`` therefore keeps, rarest first:

- the terms in at most ``COMMON_SHARE`` of the chunks (at least the ``MIN_TERMS`` rarest, common or not),
- as long as the chunks they match add up to at most the database's budget (``SQLITE_MATCHED_ROWS`` or
  ``POSTGRES_MATCHED_ROWS``: about 5 ms of ranking each); the rarest term is always kept.

A question of common words only then ranks by its rarest words, and the embeddings carry the rest.

Where the counts come from, remembered per database in this process:

- SQLite (``TrigramFrequencies``): FTS5's own vocabulary table (``fts5vocab``), exact. A server counts the whole
  vocabulary once in the background when it starts (``app.knowledge.warm``); until then, and once the store has
  grown or shrunk by ``RECOUNT_CHANGE`` since, each search counts the trigrams it has not seen;
- PostgreSQL (``WordFrequencies``): the statistics ``ANALYZE`` keeps of the stored tsvector column
  (``pg_stats.most_common_elems``: the most common words with the share of rows holding each), read again after
  ``STATISTICS_TTL_S``. A word not listed is rarer than every listed one; its count is taken as the least listed
  share's. Before the first ``ANALYZE`` there are no statistics, and nothing is left out.

The counts only decide which terms to leave out, so a slightly old count costs nothing but a little speed.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from sqlalchemy import Engine, bindparam, text
from sqlmodel import Session

PRUNE_FROM_CHUNKS = 2_000
COMMON_SHARE = 0.03
MIN_TERMS = 4
SQLITE_MATCHED_ROWS = 10_000
POSTGRES_MATCHED_ROWS = 4_000
RECOUNT_CHANGE = 0.2
STATISTICS_TTL_S = 60.0
SEARCH_TABLE = "knowledge_chunks_search"
VOCABULARY_TABLE = "temp.knowledge_trigram_counts"
PG_DOCUMENT_COLUMN = "search_document"


def distinctive_terms(terms: Sequence[str], counts: dict[str, int], chunks: int, budget: int) -> list[str]:
    """The terms a search of a store of ``chunks`` chunks keeps (see the module docstring), rarest first."""
    rarest_first = sorted(terms, key=lambda term: counts.get(term, 0))
    rare = [term for term in rarest_first if counts.get(term, 0) <= COMMON_SHARE * chunks]
    candidates = rare if len(rare) >= MIN_TERMS else rarest_first[:MIN_TERMS]
    kept: list[str] = []
    matched = 0
    for term in candidates:
        matched += counts.get(term, 0)
        if kept and matched > budget:
            break
        kept.append(term)
    return kept


class TrigramFrequencies:
    """How many chunks of one SQLite database hold each trigram asked about."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._counted_at = 0  # the chunk count when the remembered counts were taken
        self._whole = False  # the counts hold the whole vocabulary: a trigram not in them is in no chunk

    def load_all(self, session: Session, chunks: int) -> None:
        """Count every trigram of the index in one pass (about a second at 100k chunks), so that no search pays
        for counting a common trigram itself (2 ms each: FTS5 reads its whole list of chunks). A small store,
        whose searches leave nothing out, is not counted."""
        if chunks < PRUNE_FROM_CHUNKS:
            return
        _create_vocabulary(session)
        rows = session.execute(text(f"SELECT term, doc FROM {VOCABULARY_TABLE}")).all()
        with self._lock:
            self._counts = {str(row[0]): int(row[1]) for row in rows}
            self._counted_at, self._whole = chunks, True

    def keep(self, session: Session, trigrams: list[str], chunks: int | None = None) -> list[str]:
        if chunks is None:
            chunks = int(session.execute(text("SELECT count(*) FROM knowledge_chunks")).scalar_one())
        if chunks < PRUNE_FROM_CHUNKS:
            return trigrams
        return distinctive_terms(trigrams, self._counts_of(session, trigrams, chunks), chunks, SQLITE_MATCHED_ROWS)

    def _counts_of(self, session: Session, trigrams: list[str], chunks: int) -> dict[str, int]:
        with self._lock:
            if abs(chunks - self._counted_at) > RECOUNT_CHANGE * max(self._counted_at, 1):
                self._counts, self._counted_at, self._whole = {}, chunks, False
            missing = [] if self._whole else [trigram for trigram in trigrams if trigram not in self._counts]
        if missing:
            _create_vocabulary(session)
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


def _create_vocabulary(session: Session) -> None:
    session.execute(
        text(f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCABULARY_TABLE} USING fts5vocab(main, {SEARCH_TABLE}, row)")
    )


class WordFrequencies:
    """How many chunks of one PostgreSQL database hold each word, as its planner statistics estimate."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._chunks = 0
        self._shares: dict[str, float] = {}
        self._least_share = 0.0

    def keep(self, session: Session, words: list[str]) -> list[str]:
        chunks, shares, least_share = self._statistics(session)
        if chunks < PRUNE_FROM_CHUNKS or not shares:
            return words
        counts = {word: round(shares.get(word, least_share) * chunks) for word in words}
        return distinctive_terms(words, counts, chunks, POSTGRES_MATCHED_ROWS)

    def _statistics(self, session: Session) -> tuple[int, dict[str, float], float]:
        with self._lock:
            if time.monotonic() - self._read_at < STATISTICS_TTL_S:
                return self._chunks, self._shares, self._least_share
        row = session.execute(
            text(
                "SELECT most_common_elems::text::text[], most_common_elem_freqs, "
                "(SELECT reltuples FROM pg_class WHERE oid = 'knowledge_chunks'::regclass) "
                "FROM pg_stats WHERE tablename = 'knowledge_chunks' AND attname = :column"
            ),
            {"column": PG_DOCUMENT_COLUMN},
        ).first()
        chunks, shares, least_share = 0, {}, 0.0
        if row is not None and row[0] and row[1]:
            # The element shares are followed by three more numbers: the least and greatest share, and nulls'.
            shares = dict(zip(row[0], (float(share) for share in row[1][: len(row[0])]), strict=True))
            least_share, chunks = min(shares.values()), max(0, int(row[2] or 0))
        with self._lock:
            self._read_at, self._chunks, self._shares, self._least_share = time.monotonic(), chunks, shares, least_share
        return chunks, shares, least_share


_Frequencies = TypeVar("_Frequencies", TrigramFrequencies, WordFrequencies)


class _PerEngine(Generic[_Frequencies]):
    """One frequencies object per database (engine) in this process, made on first use."""

    def __init__(self, make: Callable[[], _Frequencies]) -> None:
        self._make: Callable[[], _Frequencies] = make
        self._lock = threading.Lock()
        self._found: weakref.WeakKeyDictionary[Engine, _Frequencies] = weakref.WeakKeyDictionary()

    def of(self, session: Session) -> _Frequencies:
        bind = session.get_bind()
        engine = bind if isinstance(bind, Engine) else bind.engine
        with self._lock:
            found = self._found.get(engine)
            if found is None:
                found = self._found[engine] = self._make()
            return found


trigram_frequencies = _PerEngine(TrigramFrequencies).of
word_frequencies = _PerEngine(WordFrequencies).of
