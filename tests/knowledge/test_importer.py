"""Importing: unchanged documents cost nothing, changed ones are replaced whole, prune and dry runs do what they say."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from sqlalchemy import Engine, func, text
from sqlmodel import Session, col, select

from app.knowledge.importer import NOTHING_READ, SourceNameError, import_documents
from app.knowledge.types import DocumentFailure, SourceDocument
from app.knowledge.vectors import attach_vectors
from app.models.knowledge import KnowledgeChunk, KnowledgeDocument, KnowledgeSource
from memory.embedders import HashingEmbedder
from tests.support.knowledge import RecordingEmbedder, article, knowledge_engine

DOCUMENTS = [
    article("returns.md", "Returns", ("Refund timing", "Refunds take five business days."), ("Labels", "Print it.")),
    article("shipping.md", "Shipping", ("Delivery times", "Parcels arrive in three days.")),
    article("account.md", "Account", ("Password reset", "Use the 'Forgot password' link.")),
]


def chunk_ids(engine: Engine) -> dict[str, list[int]]:
    with Session(engine) as session:
        rows = session.exec(
            select(KnowledgeDocument.locator, KnowledgeChunk.id)
            .join(KnowledgeChunk, col(KnowledgeChunk.document_id) == KnowledgeDocument.id)
            .order_by(col(KnowledgeChunk.id))
        ).all()
    found: dict[str, list[int]] = {}
    for locator, chunk_id in rows:
        found.setdefault(locator, []).append(chunk_id)
    return found


def count(engine: Engine, table: str) -> int:
    with Session(engine) as session:
        return int(session.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def test_a_first_import_adds_every_document_with_its_chunks_and_vectors(engine: Engine) -> None:
    report = import_documents(engine, "help", DOCUMENTS)

    assert report.counts() == {"added": 3, "updated": 0, "unchanged": 0, "removed": 0, "failed": 0}
    assert report.added == ["returns.md", "shipping.md", "account.md"]
    assert count(engine, "knowledge_chunks") == count(engine, "knowledge_vectors") > 0
    with Session(engine) as session:
        document = session.exec(select(KnowledgeDocument).where(KnowledgeDocument.locator == "returns.md")).one()
        source = session.exec(select(KnowledgeSource)).one()
    assert document.headings == ["Returns", "Refund timing", "Labels"]
    assert len(document.content_hash) == 64
    assert source.name == "help" and source.last_import_at is not None
    assert source.last_import_report is not None and source.last_import_report["counts"]["added"] == 3


def test_a_re_import_of_unchanged_documents_embeds_nothing_and_keeps_every_chunk_id(
    engine: Engine, embedder: RecordingEmbedder
) -> None:
    import_documents(engine, "help", DOCUMENTS)
    before, embedded = chunk_ids(engine), len(embedder.texts)

    report = import_documents(engine, "help", DOCUMENTS)

    assert report.counts()["unchanged"] == 3 and report.counts()["added"] == report.counts()["updated"] == 0
    assert len(embedder.texts) == embedded
    assert chunk_ids(engine) == before


def test_a_changed_document_is_replaced_in_place_and_only_it_is_embedded(
    engine: Engine, embedder: RecordingEmbedder
) -> None:
    import_documents(engine, "help", DOCUMENTS)
    before = chunk_ids(engine)
    with Session(engine) as session:
        document_id = session.exec(select(KnowledgeDocument.id).where(KnowledgeDocument.locator == "shipping.md")).one()
    embedder.texts.clear()
    changed = article("shipping.md", "Shipping", ("Delivery times", "Parcels now arrive in two days."))

    report = import_documents(engine, "help", [DOCUMENTS[0], changed, DOCUMENTS[2]])

    assert report.updated == ["shipping.md"] and report.unchanged == ["returns.md", "account.md"]
    assert embedder.texts and all("two days" in text_ for text_ in embedder.texts)
    after = chunk_ids(engine)
    assert after["returns.md"] == before["returns.md"] and after["account.md"] == before["account.md"]
    assert not set(after["shipping.md"]) & set(before["shipping.md"])
    assert count(engine, "knowledge_chunks") == count(engine, "knowledge_vectors")
    with Session(engine) as session:
        stored = session.exec(select(KnowledgeDocument).where(KnowledgeDocument.locator == "shipping.md")).one()
        texts = session.exec(select(KnowledgeChunk.text).where(KnowledgeChunk.document_id == stored.id)).all()
    assert stored.id == document_id
    assert any("two days" in text_ for text_ in texts) and not any("three days" in text_ for text_ in texts)


def test_prune_removes_the_documents_that_left_the_source_and_only_those(engine: Engine) -> None:
    import_documents(engine, "help", DOCUMENTS)
    import_documents(engine, "other", [article("faq.md", "FAQ", ("Hours", "We answer from nine to five."))])

    report = import_documents(engine, "help", DOCUMENTS[:2], prune=True)

    assert report.removed == ["account.md"]
    assert set(chunk_ids(engine)) == {"returns.md", "shipping.md", "faq.md"}
    assert count(engine, "knowledge_chunks") == count(engine, "knowledge_vectors")


def test_without_prune_a_missing_document_stays(engine: Engine) -> None:
    import_documents(engine, "help", DOCUMENTS)
    report = import_documents(engine, "help", DOCUMENTS[:1])

    assert report.removed == []
    assert set(chunk_ids(engine)) == {"returns.md", "shipping.md", "account.md"}


def test_prune_keeps_a_document_that_failed_to_read_and_prunes_nothing_when_nothing_was_read(engine: Engine) -> None:
    import_documents(engine, "help", DOCUMENTS)

    partly = import_documents(
        engine, "help", [DOCUMENTS[0], DocumentFailure("shipping.md", "It timed out.")], prune=True
    )
    nothing = import_documents(engine, "help", [DocumentFailure("help-center/", "No such folder.")], prune=True)

    assert partly.removed == ["account.md"]
    assert nothing.removed == [] and NOTHING_READ in nothing.notes
    assert set(chunk_ids(engine)) == {"returns.md", "shipping.md"}


def test_a_dry_run_reports_what_would_change_and_writes_nothing(engine: Engine, embedder: RecordingEmbedder) -> None:
    import_documents(engine, "help", DOCUMENTS)
    before, embedded = chunk_ids(engine), len(embedder.texts)
    new = article("warranty.md", "Warranty", ("Coverage", "Two years."))
    changed = replace(DOCUMENTS[0], markdown=DOCUMENTS[0].markdown + "\nNew paragraph.\n")

    report = import_documents(engine, "help", [changed, DOCUMENTS[1], new], prune=True, dry_run=True)

    assert report.dry_run
    assert (report.added, report.updated, report.unchanged, report.removed) == (
        ["warranty.md"],
        ["returns.md"],
        ["shipping.md"],
        ["account.md"],
    )
    assert chunk_ids(engine) == before and len(embedder.texts) == embedded
    assert import_documents(engine, "new", [new], dry_run=True).added == ["warranty.md"]
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(KnowledgeSource)).one() == 1


def test_failures_are_reported_with_their_reason_and_the_import_goes_on(engine: Engine) -> None:
    documents: list[SourceDocument | DocumentFailure] = [
        DocumentFailure("scan.pdf", "The PDF has no text layer (a scan?); export it with text or use OCR first."),
        DOCUMENTS[0],
        DOCUMENTS[0],
        SourceDocument(locator="x" * 2001, title="Long", markdown="Text."),
        DOCUMENTS[1],
    ]

    report = import_documents(engine, "help", documents)

    assert report.added == ["returns.md", "shipping.md"]
    reasons = {failure.locator[:8]: failure.reason for failure in report.failed}
    assert "no text layer" in reasons["scan.pdf"]
    assert "appeared twice" in reasons["returns."]
    assert "longer than 2000" in reasons["xxxxxxxx"]
    assert report.as_dict()["failed"][0] == {"locator": "scan.pdf", "reason": documents[0].reason}  # type: ignore[union-attr]


def test_progress_hears_of_every_document_once(engine: Engine) -> None:
    heard: list[tuple[str, str]] = []
    import_documents(
        engine, "help", [*DOCUMENTS, DocumentFailure("bad.html", "Broken.")], progress=lambda *a: heard.append(a)
    )

    assert heard == [("returns.md", "added"), ("shipping.md", "added"), ("account.md", "added"), ("bad.html", "failed")]


@pytest.mark.parametrize("name", ["", "   ", "n" * 201])
def test_a_source_name_that_cannot_be_stored_is_refused(engine: Engine, name: str) -> None:
    with pytest.raises(SourceNameError, match="source name"):
        import_documents(engine, name, DOCUMENTS)


def test_an_import_on_a_callers_session_commits_each_document(engine: Engine) -> None:
    with Session(engine) as session:
        report = import_documents(session, "help", DOCUMENTS)
    assert report.counts()["added"] == 3
    assert set(chunk_ids(engine)) == {"returns.md", "shipping.md", "account.md"}


def test_a_document_that_cannot_be_stored_leaves_nothing_behind_and_the_rest_is_imported(postgres_url: str) -> None:
    engine, _ = knowledge_engine(postgres_url)
    # PostgreSQL refuses a NUL character in text: the second chunk's insert fails after the first one's succeeded.
    broken = article("broken.md", "Broken", ("First", "Fine text."), ("Second", "This part\x00fails."))

    report = import_documents(engine, "help", [DOCUMENTS[0], broken, DOCUMENTS[1]], budget_tokens=32)

    assert report.added == ["returns.md", "shipping.md"]
    assert [failure.locator for failure in report.failed] == ["broken.md"]
    assert "could not be stored" in report.failed[0].reason
    assert set(chunk_ids(engine)) == {"returns.md", "shipping.md"}
    assert count(engine, "knowledge_documents") == 2
    assert count(engine, "knowledge_chunks") == count(engine, "knowledge_vectors")
    engine.dispose()


class WrongSizeEmbedder(HashingEmbedder):
    def embed(self, text_: str, memory_action: object = None) -> list[float]:
        return super().embed(text_, memory_action)[:100]


def test_an_embedder_of_the_wrong_size_fails_each_document_with_a_clear_reason(engine: Engine) -> None:
    attach_vectors(engine, WrongSizeEmbedder())

    report = import_documents(engine, "help", DOCUMENTS[:2])

    assert [failure.locator for failure in report.failed] == ["returns.md", "shipping.md"]
    assert "384 dimensions" in report.failed[0].reason
    assert count(engine, "knowledge_documents") == 0


def test_two_servers_importing_one_source_at_once_store_each_document_once(postgres_url: str) -> None:
    engines = [knowledge_engine(postgres_url)[0] for _ in range(2)]
    documents = [article(f"a{n}.md", f"Article {n}", ("Body", f"Text of article {n}.")) for n in range(20)]
    errors: list[BaseException] = []

    def run(engine: Engine) -> None:
        try:
            import_documents(engine, "help", documents)
        except BaseException as error:  # the assertion below shows it
            errors.append(error)

    threads = [threading.Thread(target=run, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(chunk_ids(engines[0])) == 20
    assert count(engines[0], "knowledge_documents") == 20
    assert count(engines[0], "knowledge_chunks") == count(engines[0], "knowledge_vectors")
    again = import_documents(engines[1], "help", documents)
    assert again.counts()["unchanged"] == 20
    for engine in engines:
        engine.dispose()


def test_attach_vectors_decides_the_embedder_for_that_database_only(engine: Engine) -> None:
    recording = RecordingEmbedder()
    attach_vectors(engine, recording)
    import_documents(engine, "help", DOCUMENTS[:1])
    assert recording.texts
