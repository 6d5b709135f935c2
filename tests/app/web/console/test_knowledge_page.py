"""The console's Knowledge page: every staff member reads sources, documents and chunks (paged); supervisors
delete, after confirming, audited; imported markup stays text; bad ids are a 400 or 404 page, never a 500."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlmodel import select

from app.models import KnowledgeChunk, KnowledgeDocument, KnowledgeSource, StaffRole
from app.web.input import MAX_DATABASE_INT
from tests.support.console_support import StaffClient, audit_actions, console_app, signed_in
from tests.support.knowledge_rows import AddedSource, DocumentSpec, add_source
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer

HOSTILE_TITLE = '<script>alert("title")</script>Returns'
HOSTILE_PATH = "Returns › <img src=x onerror=alert(1)>"
HOSTILE_TEXT = '<a href="javascript:alert(2)" onclick="alert(3)">refund</a> within 14 days'
REFUND_DOC = DocumentSpec(
    title="Refunds",
    locator="returns/refunds.md",
    url="https://help.example.com/refunds",
    sections=[("Refunds › Timing", "Refunds reach your card within 5 business days."), ("Refunds › Fees", "No fee.")],
    citations=3,
)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    with ScriptedLLMServer() as llm:
        yield from console_app(tmp_path_factory.mktemp("console-knowledge"), llm)


@pytest.fixture(scope="module")
def agent(console: LiveApp) -> StaffClient:
    return signed_in(console, StaffRole.AGENT)


@pytest.fixture(scope="module")
def supervisor(console: LiveApp) -> StaffClient:
    return signed_in(console, StaffRole.SUPERVISOR)


def _source(console: LiveApp, name: str, *documents: DocumentSpec) -> AddedSource:
    with console.db() as session:
        return add_source(session, name, documents)


def test_every_staff_member_sees_sources_with_their_counts_and_last_import_report(
    console: LiveApp, agent: StaffClient
) -> None:
    added = _source(console, "help-center", REFUND_DOC)
    report = {"added": 1, "updated": 0, "unchanged": 4, "removed": 0, "failed": [
        {"locator": "scan.pdf", "reason": "The PDF has no text layer (a scan?); export it with its text."}
    ]}  # fmt: skip
    with console.db() as session:
        source = session.get(KnowledgeSource, added.id)
        assert source is not None
        source.last_import_report = report
        session.add(source)
        session.commit()
    home = agent.get("/console/knowledge")
    assert home.status_code == 200, home.text
    row = re.search(r"<tr>\s*<td data-label=\"Source\"><a href=\"/console/knowledge/sources/(\d+)\">help-center</a>"
                    r".*?</tr>", home.text, re.S)  # fmt: skip
    assert row is not None and int(row.group(1)) == added.id
    cells = re.findall(r'data-label="(Documents|Chunks|Cited)">([^<]*)<', row.group(0))
    assert cells == [("Documents", "1"), ("Chunks", "2"), ("Cited", "3")]
    assert "scan.pdf" in row.group(0) and "no text layer" in row.group(0)
    assert 'aria-current="page">Knowledge' in home.text


def test_a_source_lists_its_documents_a_page_at_a_time(console: LiveApp, agent: StaffClient) -> None:
    documents = [DocumentSpec(f"Article {n:03d}", f"articles/{n:03d}.md", [("Body", f"Text {n}")]) for n in range(120)]
    added = _source(console, "many-articles", *documents)
    base = f"/console/knowledge/sources/{added.id}"
    titles = [re.findall(r">(Article \d{3})</a>", agent.get(base, params={"page": p}).text) for p in (1, 2, 3)]
    assert [len(found) for found in titles] == [50, 50, 20]
    assert [title for found in titles for title in found] == [f"Article {n:03d}" for n in range(120)]
    assert f'href="{base}?page=2">Next' in agent.get(base).text
    assert "No documents on this page." in agent.get(base, params={"page": 9}).text


def test_a_document_shows_its_chunks_with_their_heading_paths_and_a_link_to_its_page(
    console: LiveApp, agent: StaffClient
) -> None:
    added = _source(console, "refund-docs", REFUND_DOC)
    shown = agent.get(f"/console/knowledge/documents/{added.document_ids[0]}")
    assert shown.status_code == 200
    paths = re.findall(r'<p class="chunk__path">([^<]*) <span', shown.text)
    assert paths == ["Refunds › Timing", "Refunds › Fees"]
    assert "Refunds reach your card within 5 business days." in shown.text
    assert (
        '<a href="https://help.example.com/refunds" rel="noopener noreferrer nofollow" target="_blank">' in shown.text
    )


def test_imported_markup_and_javascript_links_stay_inert_on_every_knowledge_page(
    console: LiveApp, supervisor: StaffClient
) -> None:
    hostile = DocumentSpec(HOSTILE_TITLE, "evil.html", [(HOSTILE_PATH, HOSTILE_TEXT)], url="javascript:alert(4)")
    added = _source(console, '<b onmouseover="alert(5)">evil</b>', hostile)
    pages = [
        supervisor.get("/console/knowledge").text,
        supervisor.get(f"/console/knowledge/sources/{added.id}").text,
        supervisor.get(f"/console/knowledge/documents/{added.document_ids[0]}").text,
    ]
    for html in pages:
        assert "<script>alert" not in html and "<img" not in html and "<b onmouseover" not in html
        assert 'href="javascript:' not in html and '<a href="javascript' not in html
        assert "&lt;b onmouseover=&#34;alert(5)&#34;&gt;evil&lt;/b&gt;" in html
    assert "&lt;script&gt;alert(&#34;title&#34;)&lt;/script&gt;Returns" in pages[1]
    assert '<td data-label="Where" class="locator">evil.html</td>' in pages[1]  # no link to a javascript: url
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[2]
    assert "&lt;a href=&#34;javascript:alert(2)&#34; onclick=&#34;alert(3)&#34;&gt;refund&lt;/a&gt;" in pages[2]


def _exists(console: LiveApp, model: type, row_id: int) -> bool:
    with console.db() as session:
        return session.get(model, row_id) is not None


def test_an_agent_can_neither_delete_a_source_nor_a_document(console: LiveApp, agent: StaffClient) -> None:
    added = _source(console, "kept-by-agents", REFUND_DOC)
    source = agent.post(f"/console/knowledge/sources/{added.id}/delete", {"confirm": "1"})
    document = agent.post(f"/console/knowledge/documents/{added.document_ids[0]}/delete", {"confirm": "1"})
    assert (source.status_code, document.status_code) == (403, 403)
    assert "does not allow this" in source.text
    assert _exists(console, KnowledgeSource, added.id) and _exists(console, KnowledgeDocument, added.document_ids[0])
    refusals = [e for e in audit_actions(console) if e.action == "console.forbidden"]
    assert {e.detail["permission"] for e in refusals[-2:]} == {"manage_knowledge"}
    assert "Delete this source" not in agent.get(f"/console/knowledge/sources/{added.id}").text


def test_a_supervisor_deletes_a_document_only_after_confirming_and_the_deletion_is_audited(
    console: LiveApp, supervisor: StaffClient
) -> None:
    other = DocumentSpec("Shipping", "shipping.md", [("Shipping", "We ship in 2 days.")])
    added = _source(console, "delete-one", REFUND_DOC, other)
    url = f"/console/knowledge/documents/{added.document_ids[0]}/delete"
    unconfirmed = supervisor.post(url)
    assert unconfirmed.status_code == 400 and "tick the box" in unconfirmed.text
    assert _exists(console, KnowledgeDocument, added.document_ids[0])
    deleted = supervisor.post(url, {"confirm": "1"})
    assert deleted.status_code == 303
    assert deleted.headers["location"] == f"/console/knowledge/sources/{added.id}"
    assert not _exists(console, KnowledgeDocument, added.document_ids[0])
    assert _exists(console, KnowledgeDocument, added.document_ids[1])
    event = audit_actions(console)[-1]
    assert event.action == "console.knowledge_document_deleted" and event.actor.startswith("staff:")
    assert event.detail == {"source": "delete-one", "locator": "returns/refunds.md", "title": "Refunds"}


def test_deleting_a_source_removes_its_documents_chunks_and_full_text_rows(
    console: LiveApp, supervisor: StaffClient
) -> None:
    unique = DocumentSpec("Zebra", "zebra.md", [("Zebra", "Quuxzebra crossings are free of charge.")])
    added = _source(console, "delete-all", unique, REFUND_DOC)
    match = text("SELECT count(*) FROM knowledge_chunks_search WHERE knowledge_chunks_search MATCH 'quuxzebra'")
    with console.db() as session:
        assert session.execute(match).scalar() == 1
    assert supervisor.post(f"/console/knowledge/sources/{added.id}/delete", {"confirm": "1"}).status_code == 303
    with console.db() as session:
        assert session.get(KnowledgeSource, added.id) is None
        documents = session.exec(select(KnowledgeDocument).where(KnowledgeDocument.source_id == added.id)).all()
        chunks = session.exec(
            select(KnowledgeChunk).where(KnowledgeChunk.document_id.in_(added.document_ids))  # type: ignore[attr-defined]
        ).all()
        assert (list(documents), list(chunks)) == ([], [])
        assert session.execute(match).scalar() == 0
    event = audit_actions(console)[-1]
    assert event.action == "console.knowledge_source_deleted"
    assert event.detail == {"name": "delete-all", "documents": 2, "chunks": 3}
    assert supervisor.get(f"/console/knowledge/sources/{added.id}").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/console/knowledge/sources/{value}",
        "/console/knowledge/documents/{value}",
    ],
)
@pytest.mark.parametrize("value", [str(MAX_DATABASE_INT + 1), "9" * 400, "-1", "1.0", "abc"])
def test_an_id_that_is_not_a_storable_number_is_a_400_page(agent: StaffClient, path: str, value: str) -> None:
    response = agent.get(path.format(value=value))
    assert response.status_code == 400, response.text
    assert "Give a whole number" in response.text or "too large" in response.text


def test_an_unknown_id_or_page_past_the_limit_is_a_clear_refusal(console: LiveApp, supervisor: StaffClient) -> None:
    assert supervisor.get(f"/console/knowledge/documents/{MAX_DATABASE_INT}").status_code == 404
    gone = supervisor.post(f"/console/knowledge/sources/{MAX_DATABASE_INT}/delete", {"confirm": "1"})
    assert gone.status_code == 404 and "does not exist" in gone.text
    assert supervisor.get("/console/knowledge/sources/1", params={"page": "0"}).status_code == 400
    assert supervisor.get("/console/knowledge/sources/1", params={"page": str(MAX_DATABASE_INT)}).status_code == 400
