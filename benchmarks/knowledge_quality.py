"""What the knowledge benchmark computes from the labelled set: which article a hit belongs to, and how well each
retriever ranks the articles that answer a question.

- ``recall_at_5``: share of answerable questions with an answering article among the top 5 hits;
- ``mrr``: mean reciprocal rank of the first answering hit (0 past the fifth);
- ``no_answer_precision``: share of the questions nothing answers whose best hit is under the confidence threshold
  (so the bot says it does not know, and a content gap is recorded); ``answerable_confident`` is its counterpart,
  the share of answerable questions whose best hit is over it;
- ``archived_outranks_current``: share of answerable questions where an archived (superseded) page ranks above
  every answering one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.knowledge.types import KnowledgeHit

TOP_K = 5
THRESHOLD_SWEEP = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    language: str
    kind: str
    answers: frozenset[str]

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


def load_questions(path: Path) -> list[Question]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return [Question(row["id"], row["text"], row["language"], row["kind"], frozenset(row["answers"])) for row in rows]


def load_manifest(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return rows


def article_of(locator: str, article_ids: set[str]) -> str | None:
    """The article id (its path under ``articles/`` without ``.md``) a reader's locator names, whatever prefix the
    reader kept (an absolute path, the folder it was given)."""
    stem = locator.replace("\\", "/").removesuffix(".md")
    parts = [part for part in stem.split("/") if part]
    for start in range(len(parts)):
        candidate = "/".join(parts[start:])
        if candidate in article_ids:
            return candidate
    return None


@dataclass(frozen=True)
class Ranked:
    """One question's hits as article ids, best first, with the best hit's confidence."""

    question: Question
    articles: tuple[str | None, ...]
    best_confidence: float | None

    def first_answer_rank(self) -> int | None:
        for rank, article in enumerate(self.articles[:TOP_K], start=1):
            if article in self.question.answers:
                return rank
        return None


def rank_questions(
    questions: Iterable[Question],
    search: Callable[[str], Sequence[KnowledgeHit]],
    article_by_document: dict[int, str],
) -> list[Ranked]:
    ranked = []
    for question in questions:
        hits = search(question.text)
        articles = tuple(article_by_document.get(hit.document_id) for hit in hits)
        ranked.append(Ranked(question, articles, hits[0].confidence if hits else None))
    return ranked


def ranking_figures(ranked: Sequence[Ranked]) -> dict[str, Any]:
    answerable = [row for row in ranked if row.question.answerable]
    if not answerable:
        return {"recall_at_5": 0.0, "mrr": 0.0, "questions": 0}
    ranks = [row.first_answer_rank() for row in answerable]
    return {
        "recall_at_5": round(sum(rank is not None for rank in ranks) / len(ranks), 4),
        "mrr": round(sum(1 / rank for rank in ranks if rank is not None) / len(ranks), 4),
        "questions": len(answerable),
    }


def breakdown(ranked: Sequence[Ranked], key: Callable[[Question], str]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Ranked]] = defaultdict(list)
    for row in ranked:
        if row.question.answerable:
            groups[key(row.question)].append(row)
    return {name: ranking_figures(rows) for name, rows in sorted(groups.items())}


def confidence_figures(ranked: Sequence[Ranked], threshold: float) -> dict[str, Any]:
    """How the threshold splits the best hits of unanswerable and answerable questions."""

    def confident(row: Ranked) -> bool:
        return row.best_confidence is not None and row.best_confidence >= threshold

    unanswerable = [row for row in ranked if not row.question.answerable]
    answerable = [row for row in ranked if row.question.answerable]
    return {
        "threshold": threshold,
        "no_answer_precision": _share(not confident(row) for row in unanswerable),
        "answerable_confident": _share(confident(row) for row in answerable),
        "answerable_confident_and_right": _share(
            confident(row) and row.articles[0] in row.question.answers for row in answerable
        ),
    }


def threshold_sweep(ranked: Sequence[Ranked]) -> list[dict[str, Any]]:
    return [confidence_figures(ranked, threshold) for threshold in THRESHOLD_SWEEP]


def archived_outranks_current(ranked: Sequence[Ranked], archived: set[str]) -> float:
    def outranked(row: Ranked) -> bool:
        first_answer = row.first_answer_rank() or TOP_K + 1
        return any(article in archived for article in row.articles[: first_answer - 1])

    return _share(outranked(row) for row in ranked if row.question.answerable)


def misses(ranked: Sequence[Ranked], limit: int) -> list[dict[str, Any]]:
    """The answerable questions whose answer was not in the top 5, with what came instead (for tuning)."""
    missed = [row for row in ranked if row.question.answerable and row.first_answer_rank() is None]
    return [
        {
            "id": row.question.id,
            "question": row.question.text,
            "expected": sorted(row.question.answers)[:3],
            "got": list(row.articles[:3]),
        }
        for row in missed[:limit]
    ]


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return round(sum(values) / len(values), 4) if values else 0.0
