"""Hybrid search over the knowledge: full-text ranking and embedding similarity, fused by reciprocal rank.

``search_knowledge(session, query, limit=5)`` returns the best chunks first as ``KnowledgeHit``s:

1. Full-text candidates (``app.knowledge.fulltext``): FTS5 ``bm25`` over the trigram index on SQLite, so a
   misspelled word or a Chinese question still matches; ``ts_rank`` over the GIN index on PostgreSQL.
2. Vector candidates: the question embedded by the same embedder as the chunks (``app.knowledge.vectors``), the
   nearest chunks by cosine (an in-process matrix on SQLite, the HNSW index on PostgreSQL), those under
   ``MIN_VECTOR_SIMILARITY`` left out.
3. Reciprocal rank fusion (``RRF_K``): each list gives a chunk ``1 / (RRF_K + rank)``; the sums order the hits.
   When two hits read as the same section of a document (same title and heading path) from two documents, the
   more recently updated one goes first: a help center often keeps an older copy of a page.

``confidence`` (in [0, 1]) is the hit's cosine similarity to the question, or, when higher, a share of how much of
the question the chunk holds word for word: the fraction of the question's trigrams found in its heading path and
text, times ``LEXICAL_WEIGHT``. The local embedder reads English only, so a German or Chinese question that a
chunk answers in the same words is still recognised; a question of a few characters (under
``MIN_LEXICAL_TRIGRAMS``) is too short for that evidence. Neither part depends on how many chunks there are or on
which others matched, so one threshold serves a corpus of any size: ``is_confident(hit)`` says whether a hit is good
enough to answer from (prefetch) and not a content gap.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, text
from sqlmodel import Session

from app.knowledge.fulltext import MAX_QUERY_CHARS, full_text_candidates, query_trigrams, query_words
from app.knowledge.types import KnowledgeHit
from app.knowledge.vector_matrix import VectorMatch
from app.knowledge.vectors import KnowledgeVectors, session_vectors

DEFAULT_LIMIT = 5
MAX_LIMIT = 50
# Candidates each retriever contributes before fusion: a few times what is returned, so a chunk that one retriever
# ranks sixth and the other first still meets the other's list.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 20
RRF_K = 60  # the constant of Cormack et al.'s reciprocal rank fusion
# A cosine similarity of the local MiniLM embedder over which a chunk answers the question rather than sharing
# its topic; measured on the demo shop's help articles (README, "Knowledge").
CONFIDENCE_THRESHOLD = 0.45
# A vector candidate less similar than this is no evidence at all (unrelated texts score about 0 to 0.15 with the
# local embedder); ranking it would let noise outvote a full-text match.
MIN_VECTOR_SIMILARITY = 0.1
# Only a chunk holding nearly all of a question's trigrams passes the threshold on words alone.
LEXICAL_WEIGHT = 0.6
MIN_LEXICAL_TRIGRAMS = 6
FULL_TEXT, VECTOR = "full_text", "vector"
RETRIEVERS = (FULL_TEXT, VECTOR)


def is_confident(hit: KnowledgeHit) -> bool:
    return hit.confidence >= CONFIDENCE_THRESHOLD


@dataclass
class _Candidate:
    chunk_id: int
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)


def fuse(rankings: dict[str, Sequence[int]]) -> list[_Candidate]:
    """Reciprocal rank fusion of each retriever's chunk ids (best first); ties keep the newer chunk first."""
    fused: dict[int, _Candidate] = {}
    for name, chunk_ids in rankings.items():
        for rank, chunk_id in enumerate(chunk_ids, start=1):
            candidate = fused.setdefault(chunk_id, _Candidate(chunk_id))
            candidate.score += 1.0 / (RRF_K + rank)
            candidate.ranks[name] = rank
    return sorted(fused.values(), key=lambda candidate: (-candidate.score, -candidate.chunk_id))


@dataclass(frozen=True)
class _ChunkRow:
    document_id: int
    title: str
    heading_path: str
    url: str | None
    text: str
    updated: datetime


def search_knowledge(
    session: Session,
    query: str,
    *,
    limit: int = DEFAULT_LIMIT,
    vectors: KnowledgeVectors | None = None,
    retrievers: Collection[str] = RETRIEVERS,
) -> list[KnowledgeHit]:
    """The chunks that best answer ``query``, best first (at most ``limit``; none for a blank query).

    ``retrievers`` names the candidate lists to fuse; the app always runs both, the benchmark also each alone.
    Confidence is computed the same way whichever ran."""
    limit = max(1, min(limit, MAX_LIMIT))
    if not query.strip():
        return []
    vectors = vectors or session_vectors(session)
    candidates = max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
    question = vectors.embed_query(query[:MAX_QUERY_CHARS])
    searcher = vectors.searcher(session)
    nearest: list[VectorMatch] = []
    if VECTOR in retrievers:
        found = searcher.nearest(question, candidates)
        nearest = [match for match in found if match.similarity >= MIN_VECTOR_SIMILARITY]
    rankings: dict[str, Sequence[int]] = {}
    if FULL_TEXT in retrievers:
        rankings[FULL_TEXT] = full_text_candidates(session, query, candidates, chunk_count=searcher.chunk_count)
    rankings[VECTOR] = [match.chunk_id for match in nearest]
    fused = fuse(rankings)
    similarity = {match.chunk_id: match.similarity for match in nearest}
    missing = [c.chunk_id for c in fused[: limit * 2] if c.chunk_id not in similarity]
    similarity.update(searcher.similarities(question, missing))
    rows = _chunk_rows(session, [candidate.chunk_id for candidate in fused[: limit * 2]])
    trigrams = query_trigrams(query_words(query))
    hits = [
        KnowledgeHit(
            chunk_id=candidate.chunk_id,
            document_id=row.document_id,
            title=row.title,
            heading_path=row.heading_path,
            url=row.url,
            text=row.text,
            score=candidate.score,
            confidence=confidence(similarity.get(candidate.chunk_id, 0.0), trigrams, row),
            ranks=dict(candidate.ranks),
        )
        for candidate in fused[: limit * 2]
        if (row := rows.get(candidate.chunk_id)) is not None
    ]
    return _documents_first(_newest_first_among_copies(hits, rows))[:limit]


def confidence(similarity: float, trigrams: Sequence[str], row: _ChunkRow) -> float:
    lexical = 0.0
    if len(trigrams) >= MIN_LEXICAL_TRIGRAMS:
        haystack = f"{row.heading_path}\n{row.text}".lower()
        lexical = LEXICAL_WEIGHT * sum(trigram in haystack for trigram in trigrams) / len(trigrams)
    return min(1.0, max(0.0, similarity, lexical))


def _chunk_rows(session: Session, chunk_ids: Sequence[int]) -> dict[int, _ChunkRow]:
    if not chunk_ids:
        return {}
    rows = session.execute(
        text(
            "SELECT c.id, c.document_id, d.title, c.heading_path, d.url, c.text, "
            "coalesce(d.source_updated_at, d.imported_at) FROM knowledge_chunks c "
            "JOIN knowledge_documents d ON d.id = c.document_id WHERE c.id IN :ids"
        ).bindparams(bindparam("ids", expanding=True)),
        {"ids": list(chunk_ids)},
    ).all()
    return {int(row[0]): _ChunkRow(int(row[1]), row[2], row[3], row[4], row[5], _as_datetime(row[6])) for row in rows}


def _as_datetime(value: object) -> datetime:
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    return datetime.fromisoformat(str(value)).replace(tzinfo=None)  # SQLite returns a raw expression's text


def _documents_first(hits: list[KnowledgeHit]) -> list[KnowledgeHit]:
    """Each document's best hit first, in order, then its other hits: a few results then cover a few documents, and
    the model sees the one that answers rather than three passages of a near miss."""
    seen: set[int] = set()
    firsts: list[KnowledgeHit] = []
    repeats: list[KnowledgeHit] = []
    for hit in hits:
        (repeats if hit.document_id in seen else firsts).append(hit)
        seen.add(hit.document_id)
    return firsts + repeats


def _newest_first_among_copies(hits: list[KnowledgeHit], rows: dict[int, _ChunkRow]) -> list[KnowledgeHit]:
    """Hits in order, except that of two copies of one section the more recently updated comes first."""
    ordered = list(hits)
    first_at: dict[tuple[str, str], int] = {}
    for index, hit in enumerate(hits):
        key = (hit.title.casefold(), hit.heading_path.casefold())
        earlier = first_at.get(key)
        if earlier is None:
            first_at[key] = index
            continue
        held = ordered[earlier]
        if held.document_id != hit.document_id and rows[hit.chunk_id].updated > rows[held.chunk_id].updated:
            ordered[earlier], ordered[index] = hit, held
    return ordered
