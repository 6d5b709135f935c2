"""Importing from the console's Knowledge page: pasted URLs from a real local site, uploaded Markdown and a ZIP,
a file over the cap reported as a failure, a re-import that changes nothing; agents get no forms and 403, and a
form without its CSRF token is refused."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator

import httpx
import pytest
from sqlmodel import select

from app.models import KnowledgeDocument, KnowledgeSource, StaffRole
from tests.support.console_support import StaffClient, audit_actions, console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.web_site import LocalSite, running_site

MAX_DOCUMENT_BYTES = 4096
REFUNDS_HTML = "<h1>Refunds</h1><p>We refund every order within 30 days of delivery, to the card you paid with.</p>"
SHIPPING_HTML = "<h1>Shipping</h1><p>Orders leave our warehouse within two working days, tracked from the scan.</p>"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    options = {"knowledge_allow_private_urls": True, "knowledge_max_document_bytes": MAX_DOCUMENT_BYTES}
    with ScriptedLLMServer() as llm:
        yield from console_app(tmp_path_factory.mktemp("console-import"), llm, **options)


@pytest.fixture(scope="module")
def supervisor(console: LiveApp) -> StaffClient:
    return signed_in(console, StaffRole.SUPERVISOR)


@pytest.fixture(scope="module")
def agent(console: LiveApp) -> StaffClient:
    return signed_in(console, StaffRole.AGENT)


@pytest.fixture
def site() -> Iterator[LocalSite]:
    with running_site() as site:
        yield site


def _locators(console: LiveApp, name: str) -> set[str]:
    with console.db() as session:
        source = session.exec(select(KnowledgeSource).where(KnowledgeSource.name == name)).one()
        documents = session.exec(select(KnowledgeDocument).where(KnowledgeDocument.source_id == source.id)).all()
        return {document.locator for document in documents}


def _report(client: StaffClient, response: httpx.Response) -> str:
    assert response.status_code == 303, response.text
    page = client.get(response.headers["location"])
    assert page.status_code == 200
    return page.text


def _upload(client: StaffClient, source: str, files: list[tuple[str, bytes]], *, csrf: bool = True) -> httpx.Response:
    fields = {"source": source, **({"csrf_token": client.csrf_token} if csrf else {})}
    parts = [("files", (name, data, "application/octet-stream")) for name, data in files]
    return client.http.post("/console/knowledge/upload", data=fields, files=parts)


def _zip(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_pasted_urls_are_imported_and_a_reimport_changes_nothing(
    console: LiveApp, supervisor: StaffClient, site: LocalSite
) -> None:
    refunds = site.page("/help/refunds", "Refunds", REFUNDS_HTML)
    shipping = site.page("/help/shipping", "Shipping", SHIPPING_HTML)
    sitemap = site.sitemap("/sitemap.xml", [(shipping, "2026-11-21")])

    response = supervisor.post("/console/knowledge/import", {"source": "help-site", "urls": f"{refunds}\n\n{sitemap}"})

    page = _report(supervisor, response)
    assert _locators(console, "help-site") == {refunds, shipping}
    assert '<div class="report__added"><dt>added</dt><dd>2</dd></div>' in page
    assert 'data-form="reimport"' in page

    source_path = response.headers["location"]
    again = _report(supervisor, supervisor.post(f"{source_path}/reimport"))
    assert '<div class="report__unchanged"><dt>unchanged</dt><dd>2</dd></div>' in again
    for outcome in ("added", "updated", "removed", "failed"):
        assert f'<div class="report__{outcome}"><dt>{outcome}</dt><dd>0</dd></div>' in again


def test_a_page_that_cannot_be_read_is_a_failure_with_its_reason(
    console: LiveApp, supervisor: StaffClient, site: LocalSite
) -> None:
    refunds = site.page("/help/refunds", "Refunds", REFUNDS_HTML)
    missing = site.url("/help/gone")

    page = _report(
        supervisor, supervisor.post("/console/knowledge/import", {"source": "partial", "urls": f"{refunds}\n{missing}"})
    )

    assert _locators(console, "partial") == {refunds}
    assert '<div class="report__failed"><dt>failed</dt><dd>1</dd></div>' in page
    assert "/help/gone" in page


@pytest.mark.parametrize(
    ("urls", "reason"),
    [
        ("", "paste at least one URL"),
        ("  \n\n", "paste at least one URL"),
        ("file:///etc/passwd", "is not an http:// or https:// address"),
    ],
)
def test_a_url_form_without_web_addresses_is_a_400_page(supervisor: StaffClient, urls: str, reason: str) -> None:
    response = supervisor.post("/console/knowledge/import", {"source": "nothing", "urls": urls})

    assert response.status_code == 400
    assert reason in response.text


def test_uploaded_markdown_and_zip_keep_their_file_names_and_an_oversized_file_fails(
    console: LiveApp, supervisor: StaffClient
) -> None:
    archive = _zip({"returns/refunds.md": "# Refunds\n\nWithin 30 days.\n", "shipping.txt": "Two working days."})
    files = [
        ("faq.md", b"# FAQ\n\nWe answer within a day.\n"),
        ("export.zip", archive),
        ("huge.md", b"# Huge\n\n" + b"word " * MAX_DOCUMENT_BYTES),
    ]

    page = _report(supervisor, _upload(supervisor, "uploads", files))

    assert _locators(console, "uploads") == {"faq.md", "export.zip/returns/refunds.md", "export.zip/shipping.txt"}
    assert '<div class="report__added"><dt>added</dt><dd>3</dd></div>' in page
    assert "<code>huge.md</code>: is larger than 4,096 bytes" in page
    assert "memdesk-upload" not in page  # no temporary path leaks into a locator or a reason
    assert "upload the files again" in page
    assert 'data-form="reimport"' not in page
    imported = [event for event in audit_actions(console) if event.action == "console.knowledge_imported"]
    assert imported[-1].detail["from"] == "upload" and imported[-1].detail["failed"] == 1


def test_agents_see_no_import_forms_and_are_refused(console: LiveApp, agent: StaffClient) -> None:
    home = agent.get("/console/knowledge")

    assert home.status_code == 200
    assert 'data-form="import-urls"' not in home.text and 'data-form="upload"' not in home.text
    assert agent.post("/console/knowledge/import", {"source": "x", "urls": "https://example.com/"}).status_code == 403
    assert _upload(agent, "x", [("a.md", b"# A\n\ntext\n")]).status_code == 403


def test_supervisors_see_the_forms_and_a_post_without_csrf_is_refused(
    console: LiveApp, supervisor: StaffClient
) -> None:
    home = supervisor.get("/console/knowledge")
    assert 'data-form="import-urls"' in home.text and 'enctype="multipart/form-data"' in home.text

    refused = supervisor.post("/console/knowledge/import", {"source": "x", "urls": "https://example.com/"}, csrf=False)
    assert refused.status_code == 403
    assert _upload(supervisor, "no-token", [("a.md", b"# A\n\ntext\n")], csrf=False).status_code == 403
    with console.db() as session:
        assert session.exec(select(KnowledgeSource).where(KnowledgeSource.name == "no-token")).first() is None


def test_a_source_of_uploaded_files_cannot_be_reimported_and_says_to_upload_again(
    console: LiveApp, supervisor: StaffClient, agent: StaffClient
) -> None:
    source_path = _upload(supervisor, "files-only", [("notes.md", b"# Notes\n\nOpen on Sundays.\n")]).headers[
        "location"
    ]

    refused = supervisor.post(f"{source_path}/reimport")

    assert refused.status_code == 400
    assert "upload its files again" in refused.text
    assert agent.post(f"{source_path}/reimport").status_code == 403
    assert _locators(console, "files-only") == {"notes.md"}


def test_a_file_name_too_long_to_store_is_refused_with_a_sentence(console: LiveApp, supervisor: StaffClient) -> None:
    refused = _upload(supervisor, "odd-names", [("n" * 300 + ".md", b"# Notes\n\nOpen on Sundays.\n")])
    assert refused.status_code == 400, refused.text
    assert "its name cannot be stored" in refused.text
    with console.db() as session:
        assert session.exec(select(KnowledgeSource).where(KnowledgeSource.name == "odd-names")).first() is None
