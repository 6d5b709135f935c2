"""A large store searches by the question's distinctive terms: common ones are left out, within a matched-rows budget,
with counts from FTS5's vocabulary on SQLite and from the planner's statistics on PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session

from app.knowledge import term_frequencies
from app.knowledge.importer import import_documents
from app.knowledge.search import search_knowledge
from app.knowledge.term_frequencies import (
    COMMON_SHARE,
    MIN_TERMS,
    TrigramFrequencies,
    WordFrequencies,
    distinctive_terms,
)
from app.knowledge.types import SourceDocument
from tests.support.knowledge import article

STORE = 10_000


def test_terms_in_most_chunks_are_left_out_and_the_rarest_kept() -> None:
    counts = {"the": 9_000, "and": 8_000, "fox": 12, "jumps": 40, "lazy": 25, "dog": 200, "over": 290}
    kept = distinctive_terms(list(counts), counts, STORE, budget=10_000)
    assert kept == ["fox", "lazy", "jumps", "dog", "over"]
    assert all(counts[term] <= COMMON_SHARE * STORE for term in kept)


def test_a_question_of_common_words_keeps_its_rarest_ones_within_the_budget() -> None:
    counts = {"can": 5_000, "you": 7_000, "ship": 2_500, "box": 900, "to": 9_500}
    assert distinctive_terms(list(counts), counts, STORE, budget=4_000) == ["box", "ship"]
    # However large the rarest term's count, it is kept: a question is never left with nothing to match.
    assert distinctive_terms(["to", "you"], counts, STORE, budget=100) == ["you"]
    assert len(distinctive_terms(list(counts), counts, STORE, budget=10**9)) == MIN_TERMS


def test_a_small_store_keeps_every_trigram(sqlite_engine: Engine) -> None:
    with Session(sqlite_engine) as session:
        assert TrigramFrequencies().keep(session, ["the", "zzq"], chunks=10) == ["the", "zzq"]


def common_and_rare(count: int) -> list[SourceDocument]:
    """``count`` articles that all say "shipping", one of which alone says "walrus"."""
    return [
        article(f"a{index}.md", f"Article {index}", ("Shipping", "Shipping takes a few days. "
                + ("Our walrus mascot approves." if index == 7 else f"Reference {index}.")))
        for index in range(count)
    ]  # fmt: skip


def test_sqlite_counts_come_from_the_fts5_vocabulary(sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(term_frequencies, "PRUNE_FROM_CHUNKS", 10)
    import_documents(sqlite_engine, "help", common_and_rare(40))
    with Session(sqlite_engine) as session:
        kept = TrigramFrequencies().keep(session, ["hip", "ing", "wal", "lru", "day"])
        hits = search_knowledge(session, "shipping walrus", limit=1)
    assert kept == ["wal", "lru", "hip", "ing"]
    assert hits[0].title == "Article 7"


def test_postgres_counts_come_from_the_planner_statistics(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.knowledge import knowledge_engine

    monkeypatch.setattr(term_frequencies, "PRUNE_FROM_CHUNKS", 10)
    engine, _ = knowledge_engine(postgres_url)
    try:
        import_documents(engine, "help", common_and_rare(40))
        with Session(engine) as session:
            # Never analysed: no statistics, so nothing is left out.
            assert WordFrequencies().keep(session, ["shipping", "walrus"]) == ["shipping", "walrus"]
        with engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE knowledge_chunks"))
        words = ["shipping", "takes", "walrus", "few", "days"]
        with Session(engine) as session:
            # The rarest first, then the common ones in the question's order, as many as make MIN_TERMS.
            assert WordFrequencies().keep(session, words) == ["walrus", "shipping", "takes", "few"]
            hits = search_knowledge(session, "shipping walrus", limit=1)
        assert hits[0].title == "Article 7"
    finally:
        engine.dispose()


def test_after_the_warm_up_a_search_counts_no_trigram_itself(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import event

    from app.knowledge.warm import warm_knowledge

    monkeypatch.setattr(term_frequencies, "PRUNE_FROM_CHUNKS", 10)
    import_documents(sqlite_engine, "help", common_and_rare(40))
    assert warm_knowledge(sqlite_engine) >= 40
    statements: list[str] = []
    event.listen(sqlite_engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    with Session(sqlite_engine) as session:
        hits = search_knowledge(session, "shipping walrus mascot", limit=1)
    assert hits[0].title == "Article 7"
    assert statements and not [sql for sql in statements if "knowledge_trigram_counts" in sql]
