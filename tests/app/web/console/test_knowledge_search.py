"""The Knowledge page's search box shows what the bot would find: each hit's fused score, confidence, the rank
each retriever gave it and whether it clears the confidence threshold; as a page and as an htmx fragment."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from app.knowledge.importer import import_documents
from app.knowledge.search import CONFIDENCE_THRESHOLD, search_knowledge
from app.knowledge.types import SourceDocument
from app.models import StaffRole
from tests.support.console_support import StaffClient, console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer

ARTICLES = [
    SourceDocument(
        locator="refunds.md",
        title="Refunds",
        markdown="# Refunds\n\n## Refund timing\n\nRefunds reach your card within 5 business days of our receiving "
        "the parcel.\n\n## Refund fees\n\nWe never charge a fee for a refund.\n",
        url="https://help.example.com/refunds",
    ),
    SourceDocument(
        locator="shipping.md",
        title="Shipping",
        markdown="# Shipping\n\n## Countries\n\nWe ship to Norway, Sweden and Denmark within 3 days.\n",
    ),
]


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    with ScriptedLLMServer() as llm:
        for live in console_app(tmp_path_factory.mktemp("console-search"), llm, memory_embedder="hashing"):
            import_documents(live.services.db, "help-center", ARTICLES)
            yield live


@pytest.fixture(scope="module")
def agent(console: LiveApp) -> StaffClient:
    return signed_in(console, StaffRole.AGENT)


def _hits(html: str) -> list[dict[str, str]]:
    found = []
    for block in re.findall(r'<li class="hit[^"]*">(.*?)</li>', html, re.S):
        title = re.search(
            r'<p class="hit__title"><a [^>]*>([^<]*)</a>(?: <span class="muted">· ([^<]*)</span>)?', block
        )
        scores = dict(re.findall(r"<span>(score|confidence|full-text rank|embedding rank) ([^<]*)</span>", block))
        verdict = re.search(r'<strong class="hit__verdict">([^<]*)</strong>', block)
        assert title is not None and verdict is not None
        found.append({"title": title.group(1), "path": title.group(2) or "", **scores, "verdict": verdict.group(1)})
    return found


def test_the_search_box_shows_what_the_bot_would_find_with_its_scores(console: LiveApp, agent: StaffClient) -> None:
    question = "how long does a refund take to reach my card"
    response = agent.get("/console/knowledge", params={"q": question})
    assert response.status_code == 200
    shown = _hits(response.text)
    with console.db() as session:
        expected = search_knowledge(session, question, limit=10)
    assert [(hit["title"], hit["path"]) for hit in shown] == [(h.title, h.heading_path) for h in expected]
    best, found = shown[0], expected[0]
    assert best["title"] == "Refunds" and best["path"].startswith("Refunds")
    assert best["score"] == f"{found.score:.4f}" and best["confidence"] == f"{found.confidence:.2f}"
    assert best["full-text rank"] == str(found.ranks.get("full_text", "–"))
    assert best["embedding rank"] == str(found.ranks.get("vector", "–"))
    assert best["verdict"] == (
        "clears the threshold" if found.confidence >= CONFIDENCE_THRESHOLD else "under the threshold"
    )
    assert f'value="{question}"' in response.text


def test_the_search_fragment_answers_htmx_and_a_question_outside_the_corpus_clears_nothing(
    agent: StaffClient,
) -> None:
    fragment = agent.get("/console/knowledge/search", params={"q": "qwxz vbnm plkj"}, headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "<html" not in fragment.text
    verdicts = {hit["verdict"] for hit in _hits(fragment.text)}
    assert verdicts <= {"under the threshold"}
    assert _hits(agent.get("/console/knowledge/search", params={"q": "refund fees"}).text)[0]["title"] == "Refunds"


def test_a_question_longer_than_search_takes_is_a_400_page(agent: StaffClient) -> None:
    response = agent.get("/console/knowledge", params={"q": "refund " * 400})
    assert response.status_code == 400, response.text
    assert "characters" in response.text
