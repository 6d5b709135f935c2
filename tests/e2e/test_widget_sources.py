"""A reply drawn from imported knowledge, in headless Chromium: the widget shows a "Sources" line under it with the
document's link, a marker that points at no chunk is gone, the console's transcript shows the same source and the
Knowledge page counts the citation. Imported text that carries markup stays text in both."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from app.console.staff import add_staff
from app.knowledge.importer import import_documents
from app.models import KnowledgeDocument, MessageSource, StaffRole
from tests.e2e.conftest import CHROMIUM_PATH, PHONE, StaffBrowser, Visitor
from tests.e2e.test_widget_browser import Visit
from tests.support.console_support import STAFF_PASSWORD, console_settings
from tests.support.knowledge import article
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply, ScriptedToolCall

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

SUPERVISOR = "sue@example.com"
HOSTILE_TITLE = 'Refunds <img src=x onerror="alert(1)">'
SOURCE_URL = "https://help.acme.test/refunds"
REPLY = "Refunds reach your card within 5 business days [1]. Gift cards are excluded [9]."


def _knowledge_or_search(request: RecordedRequest) -> ScriptedReply:
    """Search the knowledge first; once a result with refs is in the request, answer citing ref 1 and a ref that
    was never given."""
    given = any(m.get("role") == "tool" and '"ref"' in str(m.get("content")) for m in request.messages)
    if given:
        return ScriptedReply(text=REPLY)
    call = ScriptedToolCall(name="search_knowledge", arguments=json.dumps({"query": "refund card timing"}))
    return ScriptedReply(tool_calls=(call,))


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        server.set_rule(_knowledge_or_search)
        yield server


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, scripted: ScriptedLLMServer) -> Iterator[LiveApp]:
    for running in run_live_app(console_settings(tmp_path_factory.mktemp("memdesk-sources"), scripted)):
        with Session(running.services.db) as session:
            add_staff(session, email=SUPERVISOR, name="Sue Park", role=StaffRole.SUPERVISOR, password=STAFF_PASSWORD)
        refunds = article(
            "refunds.md",
            HOSTILE_TITLE,
            ("Card refunds", "Refunds reach your card within 5 business days. <script>alert(2)</script>"),
            ("More", '[Read on](javascript:alert(3)) and <a href="#" onclick="alert(4)">here</a>.'),
            url=SOURCE_URL,
        )
        report = import_documents(running.services.db, "acme-help", [refunds])
        assert report.added == ["refunds.md"], report.as_dict()
        yield running


def _ask(visit: Visit, *, phone: bool = False) -> Visitor:
    visitor = visit(viewport=PHONE, phone=phone) if phone else visit()
    visitor.goto()
    visitor.open()
    visitor.send("How long until a refund reaches my card?")
    visitor.widget(".log .msg--bot .sources").wait_for()
    return visitor


def test_a_reply_from_imported_knowledge_shows_its_source_link_and_drops_an_unknown_marker(
    live: LiveApp, visit: Visit
) -> None:
    visitor = _ask(visit)
    bot = visitor.widget(".log .msg--bot").last
    expected = "Refunds reach your card within 5 business days [1]. Gift cards are excluded."
    assert bot.locator(".body").inner_text().strip() == expected
    link = bot.locator(".sources a.source")
    assert link.get_attribute("href") == SOURCE_URL
    assert link.get_attribute("rel") == "noopener noreferrer"
    assert link.inner_text() == f"[1] {HOSTILE_TITLE}"  # the title's markup is text
    assert bot.locator("img, script").count() == 0
    visitor.screenshot("widget-sources")
    assert visitor.dialogs == [] and visitor.errors == []
    with Session(live.services.db) as session:
        assert [s.marker for s in session.exec(select(MessageSource))] == [1]
        assert session.exec(select(KnowledgeDocument.citation_count)).one() >= 1


def test_the_sources_line_fits_a_phone(visit: Visit) -> None:
    visitor = _ask(visit, phone=True)
    line = visitor.widget(".log .msg--bot .sources").last.bounding_box()
    panel = visitor.widget(".panel").bounding_box()
    assert line is not None and panel is not None
    assert line["x"] >= panel["x"] and line["x"] + line["width"] <= panel["x"] + panel["width"] + 0.5
    visitor.screenshot("widget-sources-phone")


def test_the_console_shows_the_same_source_and_counts_the_citation(
    browser: Any, live: LiveApp, visit: Visit, artifacts: Path
) -> None:
    visitor = _ask(visit)
    conversation = visitor.page.evaluate(
        "() => Object.entries(localStorage).map(([, v]) => JSON.parse(v).conversationId).find(Boolean)"
    )
    with Session(live.services.db) as session:
        cited = session.exec(select(KnowledgeDocument.citation_count)).one()
    sue = StaffBrowser(browser, live, artifacts)
    try:
        sue.sign_in(SUPERVISOR)
        sue.page.wait_for_url("**/console")
        sue.page.goto(f"{live.url}/console/conversations/{conversation}")
        source = sue.page.locator(".msg__sources a").last
        source.wait_for()
        assert source.get_attribute("href") == SOURCE_URL
        assert source.inner_text() == f"[1] {HOSTILE_TITLE}"
        assert sue.page.locator(".msg img").count() == 0
        sue.screenshot("console-sources")
        sue.page.goto(f"{live.url}/console/knowledge")
        row = sue.page.locator("tr", has_text="acme-help")
        assert row.locator("td[data-label=Cited]").inner_text() == f"{cited:,}"
        assert cited >= 2  # this test's reply and the earlier ones
        sue.page.goto(f"{live.url}/console/knowledge")
        assert sue.dialogs == [] and not sue.errors
    finally:
        sue.close()
