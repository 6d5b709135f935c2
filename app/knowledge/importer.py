"""Importing a source's documents: added, updated, unchanged, removed and failed, each document whole or not at all.

``import_documents(session_or_engine, source_name, documents)`` reads the documents one at a time (a reader's
iterator, so a large folder or sitemap is never held in memory) and for each:

1. a ``DocumentFailure`` from the reader, a locator seen twice, or one too long to store, is reported as failed;
2. a document whose content hash is the stored one is unchanged: no chunking, no embedding, no write;
3. otherwise it is chunked and embedded outside any transaction, then written in a transaction of its own
   (``app.knowledge.store``): a failure there rolls back that document alone and is reported, and the import goes on.

With ``prune``, the source's documents that this import did not see are removed at the end; a document that failed
counts as seen (its stored copy stays), and nothing is pruned when no document at all could be read, so a wrong
path or an unreachable site never empties a source. With ``dry_run`` nothing is written: the report says what an
import would do, from the content hashes alone. Otherwise the source's ``last_import_at`` and
``last_import_report`` are updated.

``progress`` is called after each document with its locator and outcome (the command's progress bar).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlmodel import Session

from app.knowledge.store import (
    WriteOutcome,
    content_hash,
    delete_documents,
    prepare_document,
    source_named,
    stored_hashes,
    write_document,
)
from app.knowledge.types import DocumentFailure, SourceDocument
from app.knowledge.vectors import KnowledgeVectors, session_vectors
from app.models.base import utc_now
from app.models.knowledge import LOCATOR_LENGTH, SOURCE_NAME_LENGTH
from app.settings import KNOWLEDGE_CHUNK_TOKENS

logger = logging.getLogger(__name__)

ADDED, UPDATED, UNCHANGED, REMOVED, FAILED = "added", "updated", "unchanged", "removed", "failed"
NOTHING_READ = "No document could be read, so nothing was pruned."
# How many locators of each outcome the source's stored report keeps (the console shows them; counts are exact).
STORED_REPORT_ITEMS = 200
Progress = Callable[[str, str], None]
WRITE_ATTEMPTS = 2
_OUTCOMES = {WriteOutcome.ADDED: ADDED, WriteOutcome.UPDATED: UPDATED, WriteOutcome.UNCHANGED: UNCHANGED}


class SourceNameError(ValueError):
    """The import cannot start: the source name cannot be stored."""


@dataclass
class ImportReport:
    source: str
    dry_run: bool = False
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[DocumentFailure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def read_any(self) -> bool:
        return bool(self.added or self.updated or self.unchanged)

    def counts(self) -> dict[str, int]:
        return {
            ADDED: len(self.added),
            UPDATED: len(self.updated),
            UNCHANGED: len(self.unchanged),
            REMOVED: len(self.removed),
            FAILED: len(self.failed),
        }

    def as_dict(self, *, max_items: int | None = None) -> dict[str, Any]:
        """The report as JSON-ready data (``--json``); with ``max_items``, each list cut to that many."""
        end = max_items
        return {
            "source": self.source,
            "dry_run": self.dry_run,
            "counts": self.counts(),
            ADDED: self.added[:end],
            UPDATED: self.updated[:end],
            UNCHANGED: self.unchanged[:end],
            REMOVED: self.removed[:end],
            FAILED: [{"locator": failure.locator, "reason": failure.reason} for failure in self.failed[:end]],
            "notes": list(self.notes),
        }


def import_documents(
    session_or_engine: Session | Engine,
    source_name: str,
    documents: Iterable[SourceDocument | DocumentFailure],
    *,
    prune: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
    vectors: KnowledgeVectors | None = None,
    budget_tokens: int = KNOWLEDGE_CHUNK_TOKENS,
) -> ImportReport:
    """Import ``documents`` into the source named ``source_name`` (created if missing); see the module docstring.

    Given an engine, each step runs in a session of its own; given a session, each document is committed on it."""
    name = source_name.strip()
    if not name or len(name) > SOURCE_NAME_LENGTH:
        raise SourceNameError(f"A source name needs 1 to {SOURCE_NAME_LENGTH} characters; got {len(name)}.")
    with _session(session_or_engine) as session:
        run = _ImportRun(session, name, vectors or session_vectors(session), budget_tokens, dry_run, progress)
        for item in documents:
            run.take(item)
        if prune:
            run.prune()
        run.finish()
        return run.report


@contextmanager
def _session(session_or_engine: Session | Engine) -> Iterator[Session]:
    if isinstance(session_or_engine, Session):
        yield session_or_engine
        return
    with Session(session_or_engine, expire_on_commit=False) as session:
        yield session


class _ImportRun:
    def __init__(
        self,
        session: Session,
        name: str,
        vectors: KnowledgeVectors,
        budget_tokens: int,
        dry_run: bool,
        progress: Progress | None,
    ) -> None:
        self.session = session
        self.vectors = vectors
        self.budget_tokens = budget_tokens
        self.dry_run = dry_run
        self.progress = progress
        self.report = ImportReport(source=name, dry_run=dry_run)
        source = source_named(session, name, create=not dry_run)
        self.source_id = source.id if source is not None else None
        self.stored = stored_hashes(session, self.source_id) if self.source_id is not None else {}
        self.seen: set[str] = set()
        session.commit()  # the reads above took no lock worth holding while documents are read and embedded

    def take(self, item: SourceDocument | DocumentFailure) -> None:
        if isinstance(item, DocumentFailure):
            self._fail(item.locator, item.reason)
        elif item.locator in self.seen:
            self._fail(item.locator, "The same document appeared twice in this import; the first copy was kept.")
        elif len(item.locator) > LOCATOR_LENGTH:
            self._fail(item.locator[:200] + "…", f"Its path or URL is longer than {LOCATOR_LENGTH} characters.")
        else:
            self._take_document(item)

    def _take_document(self, document: SourceDocument) -> None:
        self.seen.add(document.locator)
        digest = content_hash(document)
        stored = self.stored.get(document.locator)
        if stored == digest:
            self._record(document.locator, UNCHANGED)
            return
        if self.dry_run or self.source_id is None:
            self._record(document.locator, ADDED if stored is None else UPDATED)
            return
        try:
            prepared = prepare_document(document, self.vectors, budget_tokens=self.budget_tokens, digest=digest)
        except Exception as error:  # an embeddings endpoint's error types are its client's: report, go on
            logger.warning("knowledge import: %s could not be embedded", document.locator, exc_info=True)
            self._fail(document.locator, f"It could not be embedded ({type(error).__name__}: {error}).")
            return
        for attempt in range(WRITE_ATTEMPTS):
            try:
                outcome = write_document(self.session, self.vectors, self.source_id, prepared)
                self.session.commit()
                break
            except IntegrityError:
                # Another server added this locator in the meantime: the next attempt finds its copy.
                self.session.rollback()
                if attempt + 1 == WRITE_ATTEMPTS:
                    self._fail(document.locator, "Another import stored it at the same time; try the import again.")
                    return
            except SQLAlchemyError as error:
                self.session.rollback()
                logger.warning("knowledge import: %s was not stored", document.locator, exc_info=True)
                self._fail(document.locator, f"It could not be stored ({type(error).__name__}); try the import again.")
                return
        self._record(document.locator, _OUTCOMES[outcome])

    def _fail(self, locator: str, reason: str) -> None:
        self.seen.add(locator)
        self.report.failed.append(DocumentFailure(locator, reason))
        self._notify(locator, FAILED)

    def _record(self, locator: str, outcome: str) -> None:
        getattr(self.report, outcome).append(locator)
        self._notify(locator, outcome)

    def _notify(self, locator: str, outcome: str) -> None:
        if self.progress is not None:
            self.progress(locator, outcome)

    def prune(self) -> None:
        if not self.report.read_any:
            self.report.notes.append(NOTHING_READ)
            return
        gone = sorted(locator for locator in self.stored if locator not in self.seen)
        if gone and not self.dry_run and self.source_id is not None:
            delete_documents(self.session, self.source_id, gone)
            self.session.commit()
        for locator in gone:
            self._record(locator, REMOVED)

    def finish(self) -> None:
        if self.dry_run or self.source_id is None:
            return
        source = source_named(self.session, self.report.source, create=True)
        assert source is not None
        source.last_import_at = utc_now()
        source.last_import_report = self.report.as_dict(max_items=STORED_REPORT_ITEMS)
        self.session.add(source)
        self.session.commit()
