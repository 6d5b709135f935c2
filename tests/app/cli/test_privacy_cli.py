"""`memdesk customer export|erase`: everything about one customer, database rows and memories, and nothing else."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from sqlmodel import Session, select

from app.cli import main
from app.db import create_db_engine, migrate
from app.models import (
    AuditEvent,
    Conclusion,
    ConclusionKind,
    ConclusionSource,
    Conversation,
    Message,
    MessageAuthor,
    MessageRole,
    Order,
    StaffMember,
)
from memory.conclusions import Conclusion as MemoryConclusion
from memory.conclusions import ConclusionKind as MemoryKind
from memory.conclusions import ConclusionSource as MemorySource
from memory.config import VectorStoreKind
from memory.store import CustomerMemory
from tests.memory.conftest import hashing_options
from tests.support.rows import add_customer_conversation
from tests.support.serve_process import REPOSITORY_ROOT, ServeProcess, start_serve


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMDESK_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MEMDESK_MEMORY_EMBEDDER", "hashing")
    monkeypatch.delenv("MEMDESK_DATABASE_URL", raising=False)
    return tmp_path


NOTE = "Staff only: she was rude on the phone, be careful"


def _populate(data_dir: Path) -> tuple[int, int]:
    url = f"sqlite:///{(data_dir / 'memdesk.db').resolve()}"
    migrate(url)
    engine = create_db_engine(url)
    ids = []
    with Session(engine) as session:
        ann = StaffMember(email="ann@shop.example", name="Ann Lee", password_hash="unused")
        session.add(ann)
        session.flush()
        for name in ("Jane", "Other"):
            customer_id, conversation_id = add_customer_conversation(session, name, email=f"{name.lower()}@example.com")
            session.add(
                Message(
                    conversation_id=conversation_id,
                    role=MessageRole.USER,
                    author=MessageAuthor.CUSTOMER,
                    content=f"{name}'s secret address is 1 Main St",
                )
            )
            session.add(
                Message(
                    conversation_id=conversation_id,
                    role=MessageRole.ASSISTANT,
                    author=MessageAuthor.STAFF,
                    staff_id=ann.id,
                    private=True,
                    content=f"{NOTE} ({name})",
                )
            )
            session.add(
                Conclusion(
                    customer_id=customer_id,
                    conversation_id=conversation_id,
                    kind=ConclusionKind.FACT,
                    text=f"{name} lives at 1 Main St",
                    source=ConclusionSource.AGENT,
                    content_hash=f"{name:0<64}",
                )
            )
            session.add(
                Order(
                    number=f"#W{customer_id:07d}",
                    customer_id=customer_id,
                    total_cents=100,
                    shipping_name=name,
                    shipping_line1="1 Main St",
                    shipping_city="X",
                    shipping_postal_code="1",
                    shipping_country="US",
                )
            )
            session.add(
                AuditEvent(
                    actor="bot",
                    action="order.cancelled",
                    target_type="conversation",
                    target_id=str(conversation_id),
                    detail={"summary": f"{name} wants a refund"},
                )
            )
            ids.append(customer_id)
        session.commit()
    engine.dispose()
    store = CustomerMemory(hashing_options(data_dir))
    for customer_id, name in zip(ids, ("Jane", "Other"), strict=True):
        (memory_id,) = store.remember(
            [MemoryConclusion(str(customer_id), MemoryKind.PREFERENCE, f"{name} prefers SMS", MemorySource.AGENT)]
        )
        store.edit(str(customer_id), memory_id, f"{name} prefers SMS after 6 pm", editor="staff:ann")
    store.close()
    return ids[0], ids[1]


def test_export_is_a_readable_document_with_staff_notes_in_their_own_section(data_dir: Path) -> None:
    jane, _ = _populate(data_dir)
    out = data_dir / "export.json"
    assert main(["customer", "export", str(jane), "--output", str(out)]) == 0
    exported = json.loads(out.read_text())
    assert exported["your_details"]["name"] == "Jane" and exported["your_details"]["email"] == "jane@example.com"
    (conversation,) = exported["conversations"]
    assert [(m["sender"], m["text"]) for m in conversation["messages"]] == [
        ("you", "Jane's secret address is 1 Main St")
    ], "the private note is not among the messages"
    assert conversation["outcome"] == "answered by the assistant"
    (note,) = exported["staff_notes"]["notes"]
    assert note["text"] == f"{NOTE} (Jane)" and note["written_by"] == "Ann Lee"
    assert note["conversation"] == conversation["reference"]
    assert "never shown to you" in exported["staff_notes"]["about"]
    assert [c["concluded"] for c in exported["conclusions_not_yet_remembered"]] == ["Jane lives at 1 Main St"]
    (order,) = exported["orders"]
    assert order["order_number"] == f"#W{jane:07d}" and order["total"] == "1.00 USD"
    (action,) = exported["actions_on_your_account"]
    assert action == {
        "at": action["at"],
        "action": "order cancelled",
        "by": "the assistant",
        "details": {"summary": "Jane wants a refund"},
    }
    (memory,) = exported["memories"]
    assert memory["remembered"] == "Jane prefers SMS after 6 pm" and memory["confirmed_by_a_person"]
    assert memory["kind"] == "your preference" and memory["status"] == "current"
    assert [(h["change"], h["before"], h["after"]) for h in memory["history"]] == [
        ("remembered", None, "Jane prefers SMS"),
        ("changed", "Jane prefers SMS", "Jane prefers SMS after 6 pm"),
    ]
    assert "Other" not in json.dumps(exported)


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {key for child in value.values() for key in _keys(child)}
    if isinstance(value, list):
        return {key for child in value for key in _keys(child)}
    return set()


def test_export_holds_no_database_column_names_nor_internal_ids(data_dir: Path) -> None:
    jane, _ = _populate(data_dir)
    out = data_dir / "export.json"
    assert main(["customer", "export", str(jane), "--output", str(out)]) == 0
    exported = json.loads(out.read_text())
    columns = {"id", "customer_id", "conversation_id", "staff_id", "private", "role", "author", "content",
               "public_id", "external_id", "memory_id", "content_hash", "target_id", "detail", "metadata"}  # fmt: skip
    assert _keys(exported) & columns == set()
    with Session(create_db_engine(f"sqlite:///{data_dir / 'memdesk.db'}")) as session:
        internal = {row.id for row in session.exec(select(Message)).all()} | {jane}
    numbers = {value for value in _values(exported) if isinstance(value, int) and not isinstance(value, bool)}
    assert numbers & internal == set(), "no row id appears as a number"


def _values(value: object) -> list[object]:
    if isinstance(value, dict):
        return [item for child in value.values() for item in _values(child)]
    if isinstance(value, list):
        return [item for child in value for item in _values(child)]
    return [value]


def test_html_export_is_a_printable_page_that_escapes_what_customers_wrote(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jane, _ = _populate(data_dir)
    engine = create_db_engine(f"sqlite:///{data_dir / 'memdesk.db'}")
    with Session(engine) as session:
        conversation = session.exec(select(Message).where(Message.private == False)).first()  # noqa: E712
        assert conversation is not None
        session.add(
            Message(
                conversation_id=conversation.conversation_id,
                role=MessageRole.USER,
                author=MessageAuthor.CUSTOMER,
                content="<script>alert(1)</script> & <b>bold</b>",
            )
        )
        session.commit()
    engine.dispose()
    assert main(["customer", "export", str(jane), "--html"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("<!doctype html>") and "<title>Your data at our customer support desk</title>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    assert "<script>" not in page
    staff_section = page[page.index('<section class="staff"') :]
    assert f"{NOTE} (Jane)" in staff_section and "never shown in the chat" in staff_section
    assert f"{NOTE} (Jane)" not in page[: page.index('<section class="staff"')]


def test_the_export_holds_the_customers_rating_and_comment_escaped(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.models.outcomes import ConversationOutcome

    jane, other = _populate(data_dir)
    engine = create_db_engine(f"sqlite:///{data_dir / 'memdesk.db'}")
    with Session(engine) as session:
        for customer_id, score in ((jane, 4), (other, 1)):
            conversation = session.exec(select(Conversation).where(Conversation.customer_id == customer_id)).one()
            comment = f"<i>quick</i> ({score})"
            outcome = ConversationOutcome(conversation_id=conversation.id, csat_score=score, csat_comment=comment)
            session.add(outcome)
        session.commit()
    engine.dispose()
    out = data_dir / "export.json"
    assert main(["customer", "export", str(jane), "--output", str(out)]) == 0
    (conversation,) = json.loads(out.read_text())["conversations"]
    assert conversation["your_rating"]["score"] == 4 and conversation["your_rating"]["comment"] == "<i>quick</i> (4)"
    assert main(["customer", "export", str(jane), "--html"]) == 0
    page = capsys.readouterr().out
    assert "Your rating: 4 out of 5: “&lt;i&gt;quick&lt;/i&gt; (4)”" in page and "(1)" not in page


def test_erase_removes_the_customer_everywhere_and_leaves_others_alone(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jane, other = _populate(data_dir)
    assert main(["customer", "erase", str(jane)]) == 1, "erasure needs --yes"
    assert main(["customer", "erase", str(jane), "--yes"]) == 0
    assert "Erased customer" in capsys.readouterr().out

    dump = "\n".join(sqlite3.connect(data_dir / "memdesk.db").iterdump())
    assert "Jane" not in dump and "jane@example.com" not in dump
    assert "other@example.com" in dump and "Other''s secret address" in dump
    store = CustomerMemory(hashing_options(data_dir))
    try:
        assert store.export_customer(str(jane)) == []
        assert [m.text for m in store.list(str(other))] == ["Other prefers SMS after 6 pm"]
    finally:
        store.close()
    history = "\n".join(sqlite3.connect(data_dir / "memory-history.db").iterdump())
    assert "Jane" not in history and "Other prefers SMS" in history
    engine = create_db_engine(f"sqlite:///{data_dir / 'memdesk.db'}")
    with Session(engine) as session:
        erased = session.exec(select(AuditEvent).where(AuditEvent.action == "customer.erased")).one()
        assert erased.target_id == str(jane) and erased.detail == {}
    engine.dispose()
    assert main(["customer", "export", str(jane)]) == 1


def test_export_works_while_another_process_has_the_embedded_memory_store_open(data_dir: Path) -> None:
    jane, _ = _populate(data_dir)
    store = CustomerMemory(hashing_options(data_dir))  # the SQLite store admits several processes
    try:
        result = _cli(data_dir, "customer", "export", str(jane))
    finally:
        store.close()
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", "no warning about the optional extras memdesk does without"
    memories = [item["remembered"] for item in json.loads(result.stdout)["memories"]]
    assert memories == ["Jane prefers SMS after 6 pm"]


def test_the_cli_explains_a_qdrant_memory_store_held_by_a_process_that_is_not_a_server(data_dir: Path) -> None:
    jane, _ = _populate(data_dir)
    store = CustomerMemory(replace(hashing_options(data_dir), vector_store=VectorStoreKind.QDRANT))
    try:
        result = _cli(data_dir, "customer", "export", str(jane), MEMDESK_MEMORY_STORE="qdrant")
    finally:
        store.close()
    assert result.returncode == 1
    assert result.stderr.startswith("memdesk customer export: Another process already owns the embedded Qdrant store")
    assert f"No memdesk server is recorded as running from {data_dir}" in result.stderr


ADMIN_TOKEN = "admin-token-for-the-cli-tests-0123456789"


def _cli(data_dir: Path, *arguments: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """``memdesk`` in its own process, configured only by ``MEMDESK_*`` variables; MEMDESK_PORT is deliberately
    wrong, so reaching the server proves its own record was used."""
    environment = {
        **{key: value for key, value in os.environ.items() if not key.startswith("MEMDESK_")},
        "PYTHONPATH": str(REPOSITORY_ROOT),
        "MEM0_TELEMETRY": "False",
        "MEMDESK_DATA_DIR": str(data_dir),
        "MEMDESK_MEMORY_EMBEDDER": "hashing",
        "MEMDESK_PORT": "9",
        **settings,
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *arguments],
        cwd=data_dir.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def running_server(tmp_path: Path) -> Iterator[tuple[ServeProcess, Path, int, int]]:
    """``memdesk serve`` (with an admin token) on a data directory holding two customers with memories."""
    data_dir = tmp_path / "data"
    jane, other = _populate(data_dir)
    served = start_serve(
        tmp_path,
        {
            "MEMDESK_LLM_BASE_URL": "http://127.0.0.1:9/v1",  # never called: no customer writes in these tests
            "MEMDESK_MEMORY_EMBEDDER": "hashing",
            "MEMDESK_ADMIN_TOKEN": ADMIN_TOKEN,
        },
    )
    try:
        yield served, data_dir, jane, other
        served.stop(timeout_s=30)
    finally:
        served.ensure_stopped()


def test_export_and_erase_work_while_the_server_owns_the_memory_store(
    running_server: tuple[ServeProcess, Path, int, int],
) -> None:
    served, data_dir, jane, other = running_server
    exported = _cli(data_dir, "customer", "export", str(jane), MEMDESK_ADMIN_TOKEN=ADMIN_TOKEN)
    assert exported.returncode == 0, exported.stderr
    document = json.loads(exported.stdout)
    assert document["your_details"]["name"] == "Jane"
    assert [m["remembered"] for m in document["memories"]] == ["Jane prefers SMS after 6 pm"]
    assert "Other" not in exported.stdout

    erased = _cli(data_dir, "customer", "erase", str(jane), "--yes", MEMDESK_ADMIN_TOKEN=ADMIN_TOKEN)
    assert erased.returncode == 0, erased.stderr
    # The server's outbox may have delivered Jane's pending conclusion as a second memory by now.
    assert re.match(rf"Erased customer {jane}: memories [12],", erased.stdout), erased.stdout

    admin = httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    public_ids = {
        name: public_id
        for name, public_id in sqlite3.connect(data_dir / "memdesk.db").execute("SELECT name, public_id FROM customers")
    }
    assert set(public_ids) == {"Other"}
    assert admin.get(f"/api/admin/customers/{public_ids['Other']}/export").json()["memories"][0]["remembered"] == (
        "Other prefers SMS after 6 pm"
    )
    again = _cli(data_dir, "customer", "export", str(jane), MEMDESK_ADMIN_TOKEN=ADMIN_TOKEN)
    assert again.returncode == 1 and f"No customer '{jane}'" in again.stderr
    # The other customer is still there, and still found by their internal id.
    assert _cli(data_dir, "customer", "export", str(other), MEMDESK_ADMIN_TOKEN=ADMIN_TOKEN).returncode == 0


def test_without_the_admin_token_the_cli_says_how_to_reach_the_running_server(
    running_server: tuple[ServeProcess, Path, int, int],
) -> None:
    served, data_dir, jane, _ = running_server
    missing = _cli(data_dir, "customer", "erase", str(jane), "--yes")
    assert missing.returncode == 1
    assert missing.stderr.startswith(f"memdesk customer erase: memdesk serve (pid {served.process.pid}, {served.url})")
    assert "Set MEMDESK_ADMIN_TOKEN here to the value the server was started with" in missing.stderr
    wrong = _cli(data_dir, "customer", "export", str(jane), MEMDESK_ADMIN_TOKEN="not-the-token")
    assert wrong.returncode == 1 and "refused the admin token" in wrong.stderr
    still_there = _cli(data_dir, "customer", "export", str(jane), MEMDESK_ADMIN_TOKEN=ADMIN_TOKEN)
    assert json.loads(still_there.stdout)["your_details"]["name"] == "Jane"


def test_a_command_for_another_database_is_not_sent_to_the_running_server(
    running_server: tuple[ServeProcess, Path, int, int], tmp_path: Path
) -> None:
    _, data_dir, jane, _ = running_server
    elsewhere = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    result = _cli(
        data_dir, "customer", "export", str(jane), "--database-url", elsewhere, MEMDESK_ADMIN_TOKEN=ADMIN_TOKEN
    )
    # Run here, on the other database, which has no such customer; the server would have found Jane.
    assert result.returncode == 1
    assert (
        result.stderr.strip().splitlines()[-1] == f"memdesk customer export: No customer '{jane}': give their "
        "public id (cus_…) or the shop's customer id."
    )
