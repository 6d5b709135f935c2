"""The team's knowledge: retrieval quality on a labelled help center, import speed, and search latency at scale.

    python -m benchmarks.knowledge --json [--quick] [--skip-scale] [--scale-chunks 100000] [--stores sqlite pgvector]

The labelled set is ``benchmarks/data/knowledge/`` (``benchmarks.knowledge_corpus`` generates it: 520 Markdown
articles for the demo shop, 404 questions). In order:

1. Import: the articles are read by ``app.knowledge.readers.read_paths`` and stored by
   ``app.knowledge.importer.import_documents`` into a fresh SQLite database, embedded by the local MiniLM embedder
   (loaded before the clock starts): ``import_docs_per_min``. The same import again, with nothing changed, must
   find every document unchanged: ``reimport_ratio`` is its time over the first import's.
2. Quality (``benchmarks.knowledge_quality``): every question through ``app.knowledge.search.search_knowledge``
   with both retrievers (hybrid, what the app runs) and with each alone: ``recall_at_5``, ``mrr``; for hybrid, the
   confidence threshold's ``no_answer_precision`` and ``answerable_confident`` (and a sweep of thresholds), figures
   per language and per kind of question, how often an archived page outranks the current one, and the misses.
3. Scale (``benchmarks.knowledge_scale``): ``search_ms_p95`` at 100k chunks on SQLite and on PostgreSQL with
   pgvector (pgserver), the real ``search_knowledge`` call with MiniLM embedding the question.

``--quick`` runs a slice (the articles that answer every fifth question, with their archived versions, and every
tenth other article) and a scale part of a few thousand chunks: what the test suite runs to keep this working.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness.report import print_report
from benchmarks.knowledge_quality import (
    archived_outranks_current,
    breakdown,
    confidence_figures,
    misses,
    rank_questions,
    ranking_figures,
    threshold_sweep,
)
from benchmarks.knowledge_scale import QUICK_SCALE_CHUNKS, STORES, TARGET_CHUNKS, measure_scale
from benchmarks.knowledge_setup import (
    DATA_DIR,
    LabelledSet,
    article_by_document,
    chunk_count,
    fresh_sqlite_engine,
    full_set,
    local_vectors,
    prepare_environment,
    quick_slice,
    timed_import,
)

TARGET_RECALL_AT_5 = 0.90
TARGET_NO_ANSWER_PRECISION = 0.8
TARGET_IMPORT_DOCS_PER_MIN = 2_000.0
TARGET_REIMPORT_RATIO = 0.10
MISSES_SHOWN = 40
MODES = ("hybrid", "full_text", "vector")


# -- import ---------------------------------------------------------------------------------------------------------
def measure_import(engine: Any, labelled: LabelledSet) -> dict[str, Any]:
    first, first_s = timed_import(engine, labelled.articles_dir)
    again, again_s = timed_import(engine, labelled.articles_dir)
    counts, recounts = first.counts(), again.counts()
    documents = counts.get("added", 0)
    return {
        "documents": documents,
        "chunks": chunk_count(engine),
        "first_import": counts,
        "first_import_s": round(first_s, 3),
        "import_docs_per_min": round(documents / first_s * 60, 1) if first_s else 0.0,
        "reimport": recounts,
        "reimport_s": round(again_s, 3),
        "reimport_ratio": round(again_s / first_s, 4) if first_s else 0.0,
        "reimport_changed_nothing": recounts.get("unchanged", 0) == documents
        and documents > 0
        and not any(recounts.get(outcome, 0) for outcome in ("added", "updated", "removed", "failed")),
        "failed": [failure.reason for failure in first.failed][:5],
    }


# -- quality --------------------------------------------------------------------------------------------------------
def measure_quality(engine: Any, labelled: LabelledSet, *, misses_shown: int = MISSES_SHOWN) -> dict[str, Any]:
    from sqlmodel import Session

    from app.knowledge import search

    articles = article_by_document(engine, labelled.article_ids)
    figures: dict[str, Any] = {"questions": len(labelled.questions),
                               "no_answer_questions": sum(not q.answerable for q in labelled.questions)}  # fmt: skip
    with Session(engine) as session:
        for mode in MODES:
            retrievers = {"hybrid": (search.FULL_TEXT, search.VECTOR), "full_text": (search.FULL_TEXT,),
                          "vector": (search.VECTOR,)}[mode]  # fmt: skip

            def run(query: str, retrievers: tuple[str, ...] = retrievers) -> Any:
                return search.search_knowledge(session, query, limit=5, retrievers=retrievers)

            ranked = rank_questions(labelled.questions, run, articles)
            figures[mode] = ranking_figures(ranked)
            if mode == "hybrid":
                figures[mode] |= confidence_figures(ranked, search.CONFIDENCE_THRESHOLD)
                figures[mode]["archived_outranks_current"] = archived_outranks_current(ranked, labelled.archived)
                figures[mode]["by_language"] = breakdown(ranked, lambda question: question.language)
                figures[mode]["by_kind"] = breakdown(ranked, lambda question: question.kind)
                figures[mode]["threshold_sweep"] = threshold_sweep(ranked)
                figures[mode]["misses"] = misses(ranked, misses_shown)
    return figures


# -- the run --------------------------------------------------------------------------------------------------------
def run(
    *, quick: bool, scale_chunks: int | None, stores: Sequence[str], work_dir: Path, data_dir: Path = DATA_DIR
) -> dict[str, Any]:
    prepare_environment(work_dir)
    labelled = full_set(data_dir)
    if quick:
        labelled = quick_slice(labelled, work_dir / "articles")
    engine = fresh_sqlite_engine(work_dir)
    local_vectors(engine)
    result: dict[str, Any] = {"quick": quick, "articles": len(labelled.manifest), "embedder": "local MiniLM int8"}
    result["import"] = measure_import(engine, labelled)
    log(f"imported {result['import']['documents']} documents in {result['import']['first_import_s']} s")
    result["quality"] = measure_quality(engine, labelled)
    log(f"hybrid recall@5 {result['quality']['hybrid']['recall_at_5']}")
    engine.dispose()
    if scale_chunks:
        result["scale"] = measure_scale(labelled, scale_chunks, stores, work_dir=work_dir, log=log)
    result["summary"] = summary(result)
    return result


def summary(result: dict[str, Any]) -> dict[str, Any]:
    hybrid, imported = result["quality"]["hybrid"], result["import"]
    figures: dict[str, Any] = {
        "recall_at_5": {mode: result["quality"][mode]["recall_at_5"] for mode in MODES},
        "mrr": {mode: result["quality"][mode]["mrr"] for mode in MODES},
        "no_answer_precision": hybrid["no_answer_precision"],
        "answerable_confident": hybrid["answerable_confident"],
        "import_docs_per_min": imported["import_docs_per_min"],
        "reimport_ratio": imported["reimport_ratio"],
    }
    targets = {
        "recall_at_5": hybrid["recall_at_5"] >= TARGET_RECALL_AT_5,
        "no_answer_precision": hybrid["no_answer_precision"] >= TARGET_NO_ANSWER_PRECISION,
        "import_docs_per_min": imported["import_docs_per_min"] >= TARGET_IMPORT_DOCS_PER_MIN,
        "reimport_ratio": imported["reimport_ratio"] < TARGET_REIMPORT_RATIO and imported["reimport_changed_nothing"],
    }
    for store, scale in result.get("scale", {}).items():
        figures[f"search_ms_p95_{store}"] = scale["search_ms_p95"]
        targets[f"search_ms_p95_{store}"] = scale["meets_target"]
    return figures | {"meets_targets": targets}


def log(message: str) -> None:
    print(f"[benchmarks.knowledge {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the result on one line")
    parser.add_argument("--quick", action="store_true", help="a slice of the set and a small scale part")
    parser.add_argument("--skip-scale", action="store_true", help="leave out the search latency at scale")
    parser.add_argument("--scale-chunks", type=int, default=None, help=f"chunks for the scale part ({TARGET_CHUNKS})")
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the databases here (default: a temp dir)")
    args = parser.parse_args(argv)
    chunks = None if args.skip_scale else args.scale_chunks or (QUICK_SCALE_CHUNKS if args.quick else TARGET_CHUNKS)
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="memdesk-knowledge-bench-"))
    try:
        result = run(quick=args.quick, scale_chunks=chunks, stores=args.stores, work_dir=work_dir)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work_dir, ignore_errors=True)
    print_report(result, one_line=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
