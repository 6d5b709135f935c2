"""Labels on conversations: staff add and remove them, every inbox shows them and filters by them, and an inbox
page reads them in one query however many rows carry them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from app.models import StaffRole
from tests.support.console_support import audit_actions, console_app, handed_off, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def test_staff_label_conversations_and_filter_the_inbox_by_label(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    dented = handed_off(console, scripted_server, "The kettle arrived dented, escalate")[1]
    other = handed_off(console, scripted_server, "Where is my invoice? Escalate please")[1]
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    base = f"/console/conversations/{dented}"
    assert sam.post(f"{base}/labels", {"label": "Damaged item"}).status_code == 303
    assert sam.post(f"{base}/labels", {"label": "vip"}).status_code == 303
    assert sam.post(f"{base}/labels", {"label": "vip"}).status_code == 303  # already there: no change
    assert sam.post(f"{base}/labels", {"label": "<script>"}).status_code == 422
    assert sam.post(f"{base}/labels", {"label": "x" * 41}).status_code == 422
    assert sam.post(f"{base}/labels", {"label": "vip"}, csrf=False).status_code == 403
    state = sam.get(f"{base}/state").text
    assert 'href="/console?label=damaged-item"' in state and 'value="vip"' in state
    inbox = sam.get("/console").text
    assert '<span class="label">damaged-item</span>' in inbox and '<option value="vip"' in inbox
    filtered = sam.get("/console", params={"label": "damaged-item"}).text
    assert f'data-conversation="{dented}"' in filtered and f'data-conversation="{other}"' not in filtered
    assert sam.get("/console", params={"label": "Damaged Item"}).text.count("data-conversation=") == 1
    assert sam.get("/console", params={"label": "no good!"}).status_code == 422
    assert sam.post(f"{base}/labels/remove", {"label": "vip"}).status_code == 303
    assert sam.post(f"{base}/labels/remove", {"label": "vip"}).status_code == 404
    assert 'value="vip"' not in sam.get(f"{base}/state").text
    actions = [e.action for e in audit_actions(console, "staff:1") if "label" in e.action]
    assert actions == ["console.label", "console.label", "console.label", "console.unlabel"]


def test_an_inbox_page_reads_every_rows_labels_in_one_query(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    conversations = [handed_off(console, scripted_server, f"Escalate case {n}")[1] for n in range(6)]
    for number, conversation in enumerate(conversations):
        sam.post(f"/console/conversations/{conversation}/labels", {"label": f"case-{number}"})
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = console.services.db
    event.listen(engine, "before_cursor_execute", record)
    try:
        page = sam.get("/console/inbox").text
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert all(f'<span class="label">case-{n}</span>' in page for n in range(6))
    assert sum("conversation_labels" in statement for statement in statements) == 2  # the page's, the known
