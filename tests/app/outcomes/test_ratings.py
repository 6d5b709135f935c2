"""A customer rates a closed conversation once, may change it within a day, and is never asked when ratings are off."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update

from app.models import ConversationOutcome, StaffRole, utc_now
from tests.support.console_support import console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def _closed_conversation(live: LiveApp) -> tuple[httpx.Client, str]:
    widget, _ = live.visitor()
    conversation = live.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "where is my parcel?"})
    live.wait_for_reply(conversation)
    sam = signed_in(live, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    assert sam.post(f"/console/conversations/{conversation}/close").status_code == 303
    return widget, conversation


def test_a_closed_conversation_is_rated_once_and_can_be_changed_within_a_day(console: LiveApp) -> None:
    widget, conversation = _closed_conversation(console)
    path = f"/api/widget/conversations/{conversation}/rating"
    assert widget.get(path).json() == {"asked": True, "score": None, "comment": None, "changeable_until": None}

    rated = widget.put(path, json={"score": 4, "comment": "  Quick answer, thanks!  "})
    assert rated.status_code == 200, rated.text
    assert rated.json()["score"] == 4 and rated.json()["comment"] == "Quick answer, thanks!"
    assert widget.get(path).json()["asked"] is False  # never asked twice

    changed = widget.put(path, json={"score": 5})
    assert changed.status_code == 200 and changed.json()["score"] == 5 and changed.json()["comment"] is None
    assert changed.json()["changeable_until"] == rated.json()["changeable_until"]  # the window starts at the first

    with console.db() as session:
        session.exec(update(ConversationOutcome).values(csat_at=utc_now() - timedelta(days=1, minutes=1)))
        session.commit()
    late = widget.put(path, json={"score": 1})
    assert late.status_code == 409 and "no longer be changed" in late.json()["detail"]
    with console.db() as session:
        stored = session.get(ConversationOutcome, console.conversation_key(conversation))
        assert stored is not None and stored.csat_score == 5


def test_an_open_conversation_cannot_be_rated(console: LiveApp) -> None:
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    path = f"/api/widget/conversations/{conversation}/rating"
    assert widget.get(path).json()["asked"] is False
    refused = widget.put(path, json={"score": 5})
    assert refused.status_code == 409 and "once it is closed" in refused.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [{"score": 0}, {"score": 6}, {"score": "5"}, {"score": 4.5}, {"score": True}, {}, {"score": 3, "extra": 1},
     {"score": 3, "comment": "x" * 2001}, {"score": 2 ** 70}],
)  # fmt: skip
def test_a_malformed_rating_is_a_422(console: LiveApp, body: dict[str, object]) -> None:
    widget, conversation = _closed_conversation(console)
    response = widget.put(f"/api/widget/conversations/{conversation}/rating", json=body)
    assert response.status_code == 422, response.text


def test_another_customers_conversation_cannot_be_rated(console: LiveApp) -> None:
    _, conversation = _closed_conversation(console)
    stranger, _ = console.visitor()
    path = f"/api/widget/conversations/{conversation}/rating"
    assert stranger.put(path, json={"score": 1}).status_code == 404
    assert stranger.get(path).status_code == 404


def test_with_ratings_off_nothing_is_asked_and_nothing_stored(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    for live in console_app(tmp_path, scripted_server, csat_enabled=False):
        widget, conversation = _closed_conversation(live)
        path = f"/api/widget/conversations/{conversation}/rating"
        assert widget.get(path).json()["asked"] is False
        assert widget.put(path, json={"score": 5}).status_code == 409
