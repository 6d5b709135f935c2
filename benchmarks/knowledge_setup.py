"""What the knowledge benchmark's parts share: the labelled set (whole, or the ``--quick`` slice), a fresh SQLite
database at the newest migration, the local MiniLM embedder attached to a database, and an import timed through
the real reader and importer."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.knowledge_quality import Question, article_of, load_manifest, load_questions

DATA_DIR = Path(__file__).parent / "data" / "knowledge"
SOURCE_NAME = "help-center-benchmark"
QUICK_QUESTION_STRIDE = 5  # --quick keeps every fifth question
QUICK_DISTRACTOR_STRIDE = 10  # and every tenth article that answers none of them


@dataclass(frozen=True)
class LabelledSet:
    articles_dir: Path
    manifest: list[dict[str, Any]]
    questions: list[Question]

    @property
    def article_ids(self) -> set[str]:
        return {row["id"] for row in self.manifest}

    @property
    def archived(self) -> set[str]:
        return {row["id"] for row in self.manifest if row["status"] == "archived"}


def full_set(data_dir: Path = DATA_DIR) -> LabelledSet:
    return LabelledSet(data_dir / "articles", load_manifest(data_dir / "manifest.json"),
                       load_questions(data_dir / "questions.json"))  # fmt: skip


def quick_slice(labelled: LabelledSet, into: Path) -> LabelledSet:
    """A small copy of the set under ``into``: every fifth question, the articles that answer them (and their archived
    versions, which compete with them), every tenth other article."""
    questions = labelled.questions[::QUICK_QUESTION_STRIDE]
    wanted = {article for question in questions for article in question.answers}
    wanted |= {row["id"] for row in labelled.manifest if row.get("replaced_by") in wanted}
    others = [row["id"] for row in labelled.manifest if row["id"] not in wanted]
    wanted |= set(others[::QUICK_DISTRACTOR_STRIDE])
    for article in sorted(wanted):
        target = into / f"{article}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(labelled.articles_dir / f"{article}.md", target)
    manifest = [row for row in labelled.manifest if row["id"] in wanted]
    return LabelledSet(into, manifest, questions)


def prepare_environment(work_dir: Path) -> None:
    """Before anything imports mem0 (through the embedders): no telemetry, its own directory, one thread."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(work_dir / "mem0"))
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def local_vectors(engine: Any) -> Any:
    """The local MiniLM embedder for ``engine``'s knowledge, loaded now so its start-up is not timed."""
    from app.knowledge.vectors import attach_vectors
    from memory.embedders import local_embedder

    embedder = local_embedder()
    embedder.load()
    return attach_vectors(engine, embedder)


def fresh_sqlite_engine(directory: Path) -> Any:
    from app.db import create_db_engine, upgrade

    engine = create_db_engine(f"sqlite:///{directory / 'knowledge.db'}")
    upgrade(engine)
    return engine


def timed_import(engine: Any, articles_dir: Path) -> tuple[Any, float]:
    from app.knowledge.importer import import_documents
    from app.knowledge.readers import read_paths

    started = time.perf_counter()
    report = import_documents(engine, SOURCE_NAME, read_paths([articles_dir]))
    return report, time.perf_counter() - started


def chunk_count(engine: Any) -> int:
    from sqlalchemy import func, select
    from sqlmodel import Session

    from app.models.knowledge import KnowledgeChunk

    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(KnowledgeChunk)).one()[0])


def article_by_document(engine: Any, article_ids: set[str]) -> dict[int, str]:
    """The labelled article each document of the labelled import is (a synthetic variation is none)."""
    from sqlmodel import Session, select

    from app.models.knowledge import KnowledgeDocument, KnowledgeSource

    with Session(engine) as session:
        documents = session.exec(
            select(KnowledgeDocument.id, KnowledgeDocument.locator)
            .join(KnowledgeSource)
            .where(KnowledgeSource.name == SOURCE_NAME)
        ).all()
    found = {int(doc_id): article_of(locator, article_ids) for doc_id, locator in documents if doc_id is not None}
    return {doc_id: article for doc_id, article in found.items() if article is not None}
