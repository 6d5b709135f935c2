"""A site imported into the knowledge store: a second import of an unchanged site costs nothing, a changed page is
replaced, a page gone from the sitemap is pruned, and a sitemap that could not be read prunes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.knowledge.importer import HIDDEN_DOCUMENTS, import_documents
from app.knowledge.web import WebLimits, read_urls
from app.models.knowledge import KnowledgeChunk, KnowledgeDocument
from tests.support.knowledge import RecordingEmbedder
from tests.support.web_site import LocalSite, Route, running_site

LIMITS = WebLimits(allow_private=True)


def article(topic: str, detail: str) -> str:
    return f"<h1>{topic}</h1><p>Everything about {topic.lower()}.</p><h2>Details</h2><p>{detail}</p>"


@pytest.fixture
def site() -> Iterator[LocalSite]:
    with running_site() as site:
        yield site


def stored(engine: Engine) -> dict[str, list[int]]:
    with Session(engine) as session:
        rows = session.exec(
            select(KnowledgeDocument.locator, KnowledgeChunk.id).join(
                KnowledgeChunk, col(KnowledgeChunk.document_id) == KnowledgeDocument.id
            )
        ).all()
    found: dict[str, list[int]] = {}
    for locator, chunk_id in rows:
        found.setdefault(locator, []).append(chunk_id)
    return found


def test_a_site_imported_again_unchanged_embeds_nothing_and_keeps_every_chunk(
    site: LocalSite, sqlite_engine: Engine, embedder: RecordingEmbedder
) -> None:
    pages = [site.page(f"/help/{n}", f"Topic {n}", article(f"Topic {n}", f"Detail number {n}.")) for n in range(4)]
    sitemap = site.sitemap("/sitemap.xml", [(page, "2026-11-20") for page in pages])

    first = import_documents(sqlite_engine, "website", read_urls([sitemap], limits=LIMITS))
    chunks, embedded = stored(sqlite_engine), len(embedder.texts)
    second = import_documents(sqlite_engine, "website", read_urls([sitemap], limits=LIMITS))

    assert sorted(first.added) == sorted(pages) and first.failed == []
    assert sorted(second.unchanged) == sorted(pages)
    assert second.added == second.updated == second.removed == [] and second.failed == []
    assert len(embedder.texts) == embedded > 0  # the second import embedded nothing
    assert stored(sqlite_engine) == chunks
    with Session(sqlite_engine) as session:
        document = session.exec(select(KnowledgeDocument).where(KnowledgeDocument.locator == pages[0])).one()
    assert document.url == pages[0] and document.title == "Topic 0"
    assert document.headings == ["Topic 0", "Details"]
    assert document.source_updated_at is not None and document.source_updated_at.date().isoformat() == "2026-11-20"


def test_prune_removes_a_page_gone_from_the_sitemap_and_a_changed_page_is_replaced(
    site: LocalSite, sqlite_engine: Engine
) -> None:
    kept, changed, dropped = (site.page(f"/help/{name}", name, article(name, "As before.")) for name in "ABC")
    sitemap = site.sitemap("/sitemap.xml", [kept, changed, dropped])
    import_documents(sqlite_engine, "website", read_urls([sitemap], limits=LIMITS))

    site.page("/help/B", "B", article("B", "Now shipped within one day."))
    site.sitemap("/sitemap.xml", [kept, changed])
    report = import_documents(sqlite_engine, "website", read_urls([sitemap], limits=LIMITS), prune=True)

    assert (report.unchanged, report.updated, report.removed) == ([kept], [changed], [dropped])
    assert set(stored(sqlite_engine)) == {kept, changed}


def test_a_sitemap_that_cannot_be_read_prunes_nothing(site: LocalSite, sqlite_engine: Engine) -> None:
    first_pages = [site.page(f"/a/{n}", f"A{n}", article(f"A{n}", "First half.")) for n in range(2)]
    second_pages = [site.page(f"/b/{n}", f"B{n}", article(f"B{n}", "Second half.")) for n in range(2)]
    index = site.sitemap(
        "/sitemap_index.xml",
        [site.sitemap("/sitemap-a.xml", first_pages), site.sitemap("/sitemap-b.xml", second_pages)],
        index=True,
    )
    import_documents(sqlite_engine, "website", read_urls([index], limits=LIMITS))

    site.routes["/sitemap-b.xml"] = Route(b"busy", "text/plain", status=503)
    report = import_documents(sqlite_engine, "website", read_urls([index], limits=LIMITS), prune=True)

    assert report.removed == []
    assert HIDDEN_DOCUMENTS in report.notes
    assert [failure.locator for failure in report.failed] == [site.url("/sitemap-b.xml")]
    assert "503" in report.failed[0].reason
    assert set(stored(sqlite_engine)) == set(first_pages + second_pages)
