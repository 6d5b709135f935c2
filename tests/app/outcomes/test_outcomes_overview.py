"""The console's overview shows how conversations turned out, and supervisors download the outcomes as CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.models import StaffRole
from tests.support.console_support import console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def _rated(live: LiveApp, score: int, comment: str) -> str:
    widget, _ = live.visitor()
    conversation = live.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "where is my parcel?"})
    live.wait_for_reply(conversation)
    sue = signed_in(live, StaffRole.SUPERVISOR, f"sue{score}@example.com", "Sue Park")
    assert sue.post(f"/console/conversations/{conversation}/close").status_code == 303
    rated = widget.put(f"/api/widget/conversations/{conversation}/rating", json={"score": score, "comment": comment})
    assert rated.status_code == 200
    return conversation


def test_the_overview_shows_resolutions_and_ratings_and_the_csv_lists_each_conversation(console: LiveApp) -> None:
    first = _rated(console, 5, "Fast!")
    second = _rated(console, 2, "=cmd|' /C calc'!A0")
    supervisor = signed_in(console, StaffRole.SUPERVISOR, "lead@example.com", "Lee Ada")
    page = supervisor.get("/console/overview").text
    assert 'data-figure="bot-resolution">100.0 %' in page
    assert 'data-figure="csat-average">3.50 / 5' in page
    assert "<svg" in page and "Download as CSV" in page

    download = supervisor.http.get("/console/overview/outcomes.csv")
    assert download.status_code == 200 and download.headers["content-type"].startswith("text/csv")
    assert "attachment" in download.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(download.text)))
    by_id = {row["conversation"]: row for row in rows}
    assert set(by_id) == {first, second}
    assert by_id[first]["resolution"] == "bot" and by_id[first]["csat_score"] == "5"
    assert by_id[second]["csat_comment"] == "'=cmd|' /C calc'!A0"  # read as text, never as a formula


def test_an_agent_sees_the_outcomes_but_cannot_download_the_customers_comments(console: LiveApp) -> None:
    agent = signed_in(console, StaffRole.AGENT)
    page = agent.get("/console/overview").text
    assert "Is the bot helping?" in page and "Download as CSV" not in page
    assert agent.http.get("/console/overview/outcomes.csv").status_code == 403
