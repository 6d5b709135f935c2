"""The knowledge benchmark: its labelled set is the one its generator makes, has the promised size and mix, and
its ``--quick`` run through the real reader, importer and search reports every figure with sane values."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from app.knowledge.types import KnowledgeHit
from benchmarks.knowledge_corpus import write_corpus
from benchmarks.knowledge_quality import (
    Question,
    Ranked,
    archived_outranks_current,
    article_of,
    confidence_figures,
    rank_questions,
    ranking_figures,
)
from benchmarks.knowledge_setup import DATA_DIR, full_set

QUICK_SCALE_CHUNKS = 600
PGVECTOR_SCALE_CHUNKS = 400
SUMMARY_KEYS = {"recall_at_5", "mrr", "no_answer_precision", "answerable_confident", "import_docs_per_min",
                "reimport_ratio", "search_ms_p95_sqlite", "meets_targets"}  # fmt: skip


def test_the_committed_help_center_is_exactly_what_the_generator_writes(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    generated = sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*") if path.is_file())
    committed = sorted(path.relative_to(DATA_DIR) for path in DATA_DIR.rglob("*") if path.is_file())
    assert generated == committed
    assert all((tmp_path / path).read_bytes() == (DATA_DIR / path).read_bytes() for path in committed)


def test_the_labelled_set_mixes_languages_versions_and_unanswerable_questions() -> None:
    labelled = full_set()
    current = {row["id"] for row in labelled.manifest if row["status"] == "current"}
    languages = Counter(row["language"] for row in labelled.manifest)
    assert len(labelled.manifest) >= 500 and languages["de"] >= 50 and languages["zh"] >= 50
    archived = [row for row in labelled.manifest if row["status"] == "archived"]
    assert len(archived) >= 20 and all(row["replaced_by"] in current for row in archived)
    questions = labelled.questions
    assert len(questions) >= 300
    assert sum(not question.answerable for question in questions) >= 40
    assert {question.language for question in questions} == {"en", "de", "zh"}
    assert {question.kind for question in questions} == {"paraphrase", "misspelled", "no_answer"}
    assert all(question.answers <= current for question in questions)
    titles = {row["title"].casefold() for row in labelled.manifest}
    assert not [question.text for question in questions if question.text.casefold() in titles]


def test_every_article_file_is_listed_in_the_manifest_and_starts_with_its_title() -> None:
    labelled = full_set()
    files = {
        path.relative_to(labelled.articles_dir).with_suffix("").as_posix()
        for path in labelled.articles_dir.rglob("*.md")
    }
    assert files == labelled.article_ids
    for row in labelled.manifest[::25]:
        first_line = (labelled.articles_dir / f"{row['id']}.md").read_text("utf-8").splitlines()[0]
        assert first_line == f"# {row['title']}"


def test_a_hit_is_traced_to_its_article_whatever_prefix_the_reader_kept() -> None:
    ids = {"returns/return-policy", "de/return-policy", "products/kt-1001/guide"}
    assert article_of("/srv/help/articles/de/return-policy.md", ids) == "de/return-policy"
    assert article_of("returns/return-policy.md", ids) == "returns/return-policy"
    assert article_of("articles\\products\\kt-1001\\guide.md", ids) == "products/kt-1001/guide"
    assert article_of("elsewhere/unknown.md", ids) is None


def _hit(document_id: int, confidence: float) -> KnowledgeHit:
    return KnowledgeHit(chunk_id=document_id, document_id=document_id, title="", heading_path="", url=None, text="",
                        score=0.0, confidence=confidence)  # fmt: skip


def test_recall_and_mrr_count_the_first_answering_hit_and_the_threshold_splits_the_best_hits() -> None:
    questions = [Question("q1", "a", "en", "paraphrase", frozenset({"x"})),
                 Question("q2", "b", "en", "paraphrase", frozenset({"y"})),
                 Question("q3", "c", "en", "no_answer", frozenset())]  # fmt: skip
    hits = {"a": [_hit(2, 0.9), _hit(1, 0.8)], "b": [_hit(3, 0.3)], "c": [_hit(1, 0.2)]}
    ranked = rank_questions(questions, lambda text: hits[text], {1: "x", 2: "old-x", 3: "z"})
    assert ranking_figures(ranked) == {"recall_at_5": 0.5, "mrr": 0.25, "questions": 2}
    figures = confidence_figures(ranked, 0.5)
    assert figures["no_answer_precision"] == 1.0 and figures["answerable_confident"] == 0.5
    assert figures["answerable_confident_and_right"] == 0.0
    assert archived_outranks_current(ranked, {"old-x"}) == 0.5
    assert Ranked(questions[2], (), None).first_answer_rank() is None
