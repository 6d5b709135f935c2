"""What every console page counts and announces for a staff member (``/console/attention``), and their own
notification settings: a handoff nobody has taken is everyone's, a conversation assigned to someone is only theirs,
and a message counts until the assignee has read it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.models import StaffRole
from tests.support.console_support import StaffClient, audit_actions, console_app, handed_off, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def _attention(member: StaffClient) -> dict[str, Any]:
    response = member.get("/console/attention")
    assert response.status_code == 200 and response.headers["cache-control"] == "no-store"
    found: dict[str, Any] = response.json()
    return found


def test_a_handoff_nobody_has_taken_needs_every_agent_and_a_taken_one_only_its_assignee(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    kim = signed_in(console, StaffRole.AGENT, "kim@example.com", "Kim Lee")
    assert _attention(sam) == {"count": 0, "items": []}
    widget, conversation = handed_off(console, scripted_server, "Please escalate my kettle refund")
    for member in (sam, kim):
        found = _attention(member)
        assert found["count"] == 1
        item = found["items"][0]
        assert item["conversation"] == conversation and item["kind"] == "handoff"
        assert item["preview"] == "Please escalate my kettle refund" and item["customer"] == "visitor"
    sam.get(f"/console/conversations/{conversation}")  # opened, read, taken over
    assert sam.post(f"/console/conversations/{conversation}/take-over").status_code == 303
    assert _attention(kim)["count"] == 0
    assert _attention(sam)["count"] == 0
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "Any news? It is urgent."})
    console.wait_for(lambda: _attention(sam)["count"] or None, what="the new message counted for Sam")
    item = _attention(sam)["items"][0]
    assert item["kind"] == "message" and item["preview"] == "Any news? It is urgent."
    assert _attention(kim)["count"] == 0
    sam.get(f"/console/conversations/{conversation}")  # reading it
    assert _attention(sam)["count"] == 0


def test_notification_settings_are_each_members_own_need_a_csrf_token_and_reach_every_page(
    console: LiveApp,
) -> None:
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    kim = signed_in(console, StaffRole.AGENT, "kim@example.com", "Kim Lee")
    page = sam.get("/console/settings").text
    assert 'name="csrf_token"' in page and 'data-notify-desktop="0"' in page
    assert sam.post("/console/settings", {"desktop": "on"}, csrf=False).status_code == 403
    saved = sam.post("/console/settings", {"desktop": "on", "sound": "on"})
    assert saved.status_code == 303 and saved.headers["location"] == "/console/settings?saved=1"
    inbox = sam.get("/console").text
    assert 'data-notify-desktop="1"' in inbox and 'data-notify-sound="1"' in inbox
    assert 'data-notify-desktop="0"' in kim.get("/console").text
    assert sam.post("/console/settings", {}).status_code == 303
    assert 'data-notify-sound="0"' in sam.get("/console/overview").text
    assert [e.action for e in audit_actions(console, "staff:1")].count("console.settings") == 2
    assert httpx.get(f"{console.url}/console/attention", follow_redirects=False).status_code in (303, 401)
