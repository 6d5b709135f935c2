"""Canned replies: each member keeps their own, supervisors keep the team's, and a reply's fields are filled in for
the conversation from a fixed list that no text can reach past."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from app.models import CannedReply, Conversation, Customer, StaffRole
from tests.support.console_support import StaffClient, audit_actions, console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def _suggest(member: StaffClient, query: str, conversation: str | None = None) -> list[dict[str, Any]]:
    params = {"q": query} | ({"conversation": conversation} if conversation else {})
    response = member.get("/console/canned/suggest", params=params)
    assert response.status_code == 200
    replies: list[dict[str, Any]] = response.json()["replies"]
    return replies


def _conversation_of(live: LiveApp, server: ScriptedLLMServer, name: str, focus: str | None) -> str:
    server.enqueue("Let me look.")
    widget, _ = live.visitor()
    conversation = live.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "about my order"})
    live.wait_for_reply(conversation)
    with live.db() as session:
        row = session.exec(select(Conversation).where(Conversation.public_id == conversation)).one()
        row.focus_kind, row.focus_ref = ("order", focus) if focus else (None, None)
        session.add(row)
        found = session.get(Customer, row.customer_id)
        assert found is not None
        found.name = name
        session.add(found)
        session.commit()
    return conversation


def test_members_keep_their_own_replies_and_supervisors_the_teams(console: LiveApp) -> None:
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    kim = signed_in(console, StaffRole.AGENT, "kim@example.com", "Kim Lee")
    sue = signed_in(console, StaffRole.SUPERVISOR, "sue@example.com", "Sue Park")
    assert sam.post("/console/canned", {"shortcut": "/Thanks", "body": "Thank you for waiting!"}).status_code == 303
    team = {"shortcut": "refund-time", "body": "Refunds reach your card in 5 days.", "scope": "team"}
    refused = sam.post("/console/canned", team)
    assert refused.status_code == 403 and "Only supervisors" in refused.text
    assert sam.post("/console/canned", team, csrf=False).status_code == 403
    assert sue.post("/console/canned", team).status_code == 303
    assert [(r["shortcut"], r["team"]) for r in _suggest(sam, "")] == [("refund-time", True), ("thanks", False)]
    assert [r["shortcut"] for r in _suggest(kim, "")] == ["refund-time"]  # Sam's own stay his
    assert [r["shortcut"] for r in _suggest(sam, "ref")] == ["refund-time"]
    assert [r["shortcut"] for r in _suggest(sam, "waiting")] == ["thanks"]  # by text too
    assert [r["shortcut"] for r in _suggest(sam, "%")] == []  # a LIKE wildcard is a character
    taken = sam.post("/console/canned", {"shortcut": "refund-time", "body": "Mine"})
    assert taken.status_code == 422 and "taken" in taken.text
    with console.db() as session:
        ids = {row.shortcut: row.id for row in session.exec(select(CannedReply)).all()}
    assert sam.post(f"/console/canned/{ids['refund-time']}/delete").status_code == 403
    assert kim.post(f"/console/canned/{ids['thanks']}/delete").status_code == 404
    assert sam.post(f"/console/canned/{ids['thanks']}/delete").status_code == 303
    assert sue.post(f"/console/canned/{ids['refund-time']}/delete").status_code == 303
    assert _suggest(sam, "") == []
    actions = [event.action for event in audit_actions(console) if event.action.startswith("console.canned")]
    assert actions == ["console.canned_add", "console.canned_add", "console.canned_delete", "console.canned_delete"]
    page = sam.get("/console/canned").text
    assert "No canned replies yet." in page and 'name="csrf_token"' in page and 'value="team"' not in page


def test_fields_are_filled_in_for_the_conversation_and_nothing_else_is_reachable(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    body = "Hi {{ customer.first_name }}, {{agent.first_name}} here: order {{ order.number }} is on its way."
    assert sam.post("/console/canned", {"shortcut": "on-its-way", "body": body}).status_code == 303
    focused = _conversation_of(console, scripted_server, "Maya {{ agent.name }} Thompson", "#W4877327")
    [reply] = _suggest(sam, "on", focused)
    # The customer's name is inserted as it is: a field in it is not filled in again.
    assert reply["text"] == "Hi Maya, Sam here: order #W4877327 is on its way."
    plain = _conversation_of(console, scripted_server, "", None)
    assert _suggest(sam, "on", plain)[0]["text"] == "Hi there, Sam here: order  is on its way."
    hostile = [
        "{{ customer.__class__.__mro__ }}",
        "{{ config }}",
        "{{ customer.first_name | upper }}",
        "{{ ''.__class__ }}",
        "{{ agent.password_hash }}",
    ]
    for text in hostile:
        refused = sam.post("/console/canned", {"shortcut": "evil", "body": text})
        assert refused.status_code == 422 and "Unknown field" in refused.text, text
    literal = "{% for x in range(10**9) %}{{ x }}{% endfor %} stays text"
    assert sam.post("/console/canned", {"shortcut": "loop", "body": literal.replace("{{ x }}", "")}).status_code == 303
    assert _suggest(sam, "loop", plain)[0]["text"] == "{% for x in range(10**9) %}{% endfor %} stays text"
    for shortcut in ("", "has space", "x" * 40, "émoji", "<b>"):
        # An empty field is a form the console refuses as incomplete (400), the others are checked (422).
        assert sam.post("/console/canned", {"shortcut": shortcut, "body": "Hello"}).status_code in (400, 422), shortcut
    assert sam.get("/console/canned/suggest", params={"q": "x" * 65}).status_code == 400
