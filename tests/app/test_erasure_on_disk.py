"""An erasure reaches the disk: after it, no file in the data directory holds the erased customer's text in any form.

The customer's messages, the bot's reply, a private staff note, an outbox conclusion, an audit event and a memory
(added, then edited, so Mem0's history holds two versions) all carry one marker. After the admin API erases the
customer of a running server (SQLite, the app's own embedded memory store), the raw bytes of every file under the
data directory (the database, its ``-wal`` and ``-shm``, the memory store, Mem0's history database, their logs, lock
files) are searched for the marker: as written, lowercased (the full-text index keeps lowercased tokens), its tail
alone (the index stores a term after the prefix it shares with the previous one), in UTF-16 both ways. A second
customer's marker, written the same ways, must still be found, which proves that the search reads the files where
such text lands.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from app.models import (
    AuditEvent,
    Conclusion,
    ConclusionKind,
    ConclusionSource,
    Message,
    MessageAuthor,
    MessageRole,
    StaffMember,
)
from memory.conclusions import Conclusion as MemoryConclusion
from memory.conclusions import ConclusionKind as MemoryKind
from memory.conclusions import ConclusionSource as MemorySource
from memory.store import CustomerMemory
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

ADMIN_TOKEN = "admin-token-for-the-disk-erasure-test-0123456789"
ERASED = "Kwyjibo90210"
KEPT = "Zorblat55512"
# The part of a marker no other word of the test shares a prefix with.
TAIL_CHARS = 8


def _needles(marker: str) -> dict[str, bytes]:
    forms = {"as written": marker, "lowercased": marker.lower(), "tail": marker.lower()[-TAIL_CHARS:]}
    return {
        f"{form} in {encoding}": text.encode(encoding)
        for form, text in forms.items()
        for encoding in ("utf-8", "utf-16-le", "utf-16-be")
    }


def _found(data_dir: Path, marker: str) -> dict[str, list[str]]:
    """For each file under ``data_dir`` holding the marker in some form: the forms found."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        forms = [name for name, needle in _needles(marker).items() if needle in raw]
        if forms:
            found[str(path.relative_to(data_dir))] = forms
    return found


@pytest.fixture
def live(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    settings = app_settings(
        tmp_path, scripted_server, admin_token=ADMIN_TOKEN, memory_enabled=True, memory_embedder="hashing"
    )
    yield from run_live_app(settings)


def _customer_with_marker(live: LiveApp, scripted_server: ScriptedLLMServer, marker: str, staff_id: int) -> str:
    """A visitor who chatted, was noted about, concluded about and remembered, all with ``marker``."""
    client, reference = live.visitor()
    conversation = live.conversation(client)
    scripted_server.enqueue(f"Thanks, I noted {marker} for you.")
    url = f"/api/widget/conversations/{conversation}/messages"
    assert client.post(url, json={"content": f"My code word is {marker}"}).status_code == 202
    live.wait_for_reply(conversation)
    customer_id, conversation_id = live.customer(reference).id, live.conversation_key(conversation)
    assert customer_id is not None and conversation_id is not None
    with Session(live.services.db) as session:
        note = Message(
            conversation_id=conversation_id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.STAFF,
            staff_id=staff_id,
            private=True,
            content=f"Private: customer uses code word {marker}",
        )
        session.add(note)
        session.add(
            Conclusion(
                customer_id=customer_id,
                conversation_id=conversation_id,
                kind=ConclusionKind.FACT,
                text=f"The customer's code word is {marker}",
                source=ConclusionSource.AGENT,
                content_hash=f"{marker:0<64}",
            )
        )
        session.add(
            AuditEvent(
                actor="bot",
                action="order.cancel",
                target_type="conversation",
                target_id=str(conversation_id),
                detail={"reason": f"asked by {marker}"},
            )
        )
        session.commit()
    assert live.services.memory is not None
    store = live.services.memory.store
    assert isinstance(store, CustomerMemory)
    (memory_id,) = store.remember(
        [MemoryConclusion(str(customer_id), MemoryKind.PREFERENCE, f"Call {marker} by phone", MemorySource.AGENT)]
    )
    store.edit(str(customer_id), memory_id, f"Call {marker} by phone after 6 pm", editor="staff:1")
    return reference


def test_an_erased_customers_text_is_in_no_file_of_the_data_directory(
    live: LiveApp, scripted_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    with Session(live.services.db) as session:
        staff = StaffMember(email="ann@shop.example", name="Ann Lee", password_hash="unused")
        session.add(staff)
        session.commit()
        assert staff.id is not None
        staff_id = staff.id
    erased = _customer_with_marker(live, scripted_server, ERASED, staff_id)
    _customer_with_marker(live, scripted_server, KEPT, staff_id)
    assert _found(tmp_path, ERASED), "before the erasure the marker is on disk"

    response = live.client(ADMIN_TOKEN).delete(f"/api/admin/customers/{erased}")
    assert response.status_code == 200, response.text
    assert response.json()["erased"]["memories"] == 1 and response.json()["erased"]["messages"] >= 3

    assert _found(tmp_path, ERASED) == {}
    kept = _found(tmp_path, KEPT)
    for file in ("memdesk.db", "memory-store.db", "memory-history.db"):
        assert file in kept, f"the search reads {file}: the other customer's text is found there ({kept})"


def test_secure_delete_is_on_for_every_connection_that_writes_customer_data(live: LiveApp) -> None:
    with live.services.db.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA secure_delete").scalar() == 1
    assert live.services.memory is not None
    store: Any = live.services.memory.store
    assert store._mem0.vector_store._connection().execute("PRAGMA secure_delete").fetchone() == (1,)
    assert store._mem0.db.connection.execute("PRAGMA secure_delete").fetchone() == (1,)
