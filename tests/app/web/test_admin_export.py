"""The customer's export through the admin API and the console: the documented schema, staff notes in their own
section, and a printable HTML page that escapes what customers wrote and runs no script."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.models import StaffRole
from app.privacy import CustomerExport
from tests.support.console_support import console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer

ADMIN_TOKEN = "admin-token-for-the-export-tests-0123456789"
CUSTOMER_TEXT = "Where is my parcel? <img src=x onerror=alert(1)> & thanks"
NOTE = "Staff only: refund already approved by Sam, do not offer a voucher"


@pytest.fixture
def live(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server, admin_token=ADMIN_TOKEN)


def _customer_with_a_note(live: LiveApp, scripted_server: ScriptedLLMServer) -> tuple[str, str]:
    """A visitor who asked something and got a reply, and a private note a staff member wrote about it."""
    client, reference = live.visitor()
    conversation = live.conversation(client)
    scripted_server.enqueue("Let me check that for you.")
    assert (
        client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": CUSTOMER_TEXT}).status_code
        == 202
    )
    live.wait_for_reply(conversation)
    sam = signed_in(live, StaffRole.AGENT, name="Sam Ortiz")
    assert sam.post(f"/console/conversations/{conversation}/note", {"text": NOTE}).status_code == 303
    return reference, conversation


def test_admin_export_matches_its_schema_and_keeps_notes_out_of_the_messages(
    live: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    reference, conversation = _customer_with_a_note(live, scripted_server)
    response = live.client(ADMIN_TOKEN).get(f"/api/admin/customers/{reference}/export")
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    exported = CustomerExport.model_validate(response.json())
    (chat,) = exported.conversations
    assert chat.reference == conversation
    assert [(m.sender, m.text) for m in chat.messages] == [
        ("you", CUSTOMER_TEXT),
        ("the assistant", "Let me check that for you."),
    ]
    (note,) = exported.staff_notes.notes
    assert (note.text, note.written_by, note.conversation) == (NOTE, "Sam Ortiz", conversation)
    assert response.text.count(NOTE) == 1, "the note appears once: in its own section"


def test_printable_export_escapes_customer_text_and_allows_no_script(
    live: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    reference, _ = _customer_with_a_note(live, scripted_server)
    response = live.client(ADMIN_TOKEN).get(f"/api/admin/customers/{reference}/export", params={"format": "html"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    page = response.text
    assert "Where is my parcel? &lt;img src=x onerror=alert(1)&gt; &amp; thanks" in page
    assert "<img" not in page and "<script" not in page
    staff_at = page.index('<section class="staff"')
    assert NOTE in page[staff_at:] and NOTE not in page[:staff_at]


def test_an_unknown_export_format_is_refused_with_422(live: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    reference, _ = _customer_with_a_note(live, scripted_server)
    response = live.client(ADMIN_TOKEN).get(f"/api/admin/customers/{reference}/export", params={"format": "xml"})
    assert response.status_code == 422


def test_the_console_downloads_the_export_as_json_or_as_a_printable_page(
    live: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    reference, _ = _customer_with_a_note(live, scripted_server)
    admin = signed_in(live, StaffRole.ADMIN)
    as_json = admin.post(f"/console/customers/{reference}/export")
    assert as_json.status_code == 200
    assert as_json.headers["content-disposition"] == f'attachment; filename="memdesk-customer-{reference}.json"'
    assert CustomerExport.model_validate_json(as_json.text).staff_notes.notes[0].text == NOTE
    page = admin.post(f"/console/customers/{reference}/export", {"format": "html"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["content-disposition"] == f'attachment; filename="memdesk-customer-{reference}.html"'
    assert "Notes by our staff (never shown in the chat)" in page.text
