"""The console's live streams over real HTTP: a conversation page sees new messages and state changes as they happen,
and without a session a stream request is refused before it says anything about a conversation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.models import StaffRole
from tests.support.console_support import console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer

READ_TIMEOUT = httpx.Timeout(10.0, read=5.0)


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def _page_events(response: httpx.Response) -> Iterator[tuple[str, str]]:
    """(event name, data) of each event; the data of a rendered entry spans several ``data:`` lines."""
    name, data = "", []
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data.append(line.removeprefix("data: "))
        elif not line and name:
            yield name, "\n".join(data)
            name, data = "", []


def test_a_conversation_page_sees_the_customers_message_and_a_takeover_as_they_happen(console: LiveApp) -> None:
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    sam = signed_in(console, StaffRole.AGENT, name="Sam Rivera")
    path = f"/console/conversations/{conversation}/events"
    with sam.http.stream("GET", path, timeout=READ_TIMEOUT) as response:
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-cache" and response.headers["x-accel-buffering"] == "no"
        events = _page_events(response)
        widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "Where is my parcel?"})
        name, entry = next(events)
        console.wait_for_reply(conversation)
        assert sam.post(f"/console/conversations/{conversation}/take-over").status_code == 303
        state = next(event for event in events if event[0] == "state")
    assert name == "transcript" and "Where is my parcel?" in entry and "\n" in entry
    assert state == ("state", "{}")


def test_without_a_session_every_stream_is_refused_alike_whether_the_conversation_exists_or_not(
    console: LiveApp,
) -> None:
    widget, _ = console.visitor()
    known = console.conversation(widget)
    anonymous = console.client()
    paths = ["/console/events", *(f"/console/conversations/{ref}/events" for ref in (known, "cnv_no_such_one"))]
    refusals = [anonymous.get(path, headers={"Accept": "text/event-stream"}) for path in paths]
    assert [(r.status_code, r.text) for r in refusals] == [(401, refusals[0].text)] * 3
    assert "sign in again" in refusals[0].text
