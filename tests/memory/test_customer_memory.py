"""CustomerMemory on real Mem0 and the embedded SQLite store: storing conclusions, recall, supersession, locks,
isolation, privacy, several processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import pytest

from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from memory.config import VectorStoreKind
from memory.store import CustomerMemory, InvalidCustomerIdError, MemoryNotFoundError
from tests.memory.conftest import hashing_options

SOON = date.today() + timedelta(days=3)


def promise(customer: str, text: str, *identifiers: str, due: date = SOON) -> Conclusion:
    return Conclusion(customer, ConclusionKind.PROMISE, text, ConclusionSource.COMPACTION, due, identifiers)


def preference(customer: str, text: str) -> Conclusion:
    return Conclusion(customer, ConclusionKind.PREFERENCE, text, ConclusionSource.COMPACTION)


def test_conclusions_are_stored_once_and_recalled_for_their_customer(customer_memory: CustomerMemory) -> None:
    refund = promise("101", f"Refund of $42.10 for order #W2378156 by {SOON}", "#W2378156", "$42.10")
    sms = preference("101", "Prefers SMS over email for updates")
    first = customer_memory.remember([refund, sms])
    assert len(set(first)) == 2
    assert customer_memory.remember([refund]) == first[:1], "the same conclusion is never stored twice"
    assert len(customer_memory.list("101")) == 2

    recalled = customer_memory.recall("101", "when does my refund for order #W2378156 arrive")
    assert recalled[0].text == refund.text and recalled[0].kind == "promise"
    assert recalled[0].due_date == SOON and recalled[0].identifiers == ("#W2378156", "$42.10")
    assert [p.text for p in customer_memory.active_promises("101")] == [refund.text]


def test_recall_never_returns_another_customers_memories(customer_memory: CustomerMemory) -> None:
    for customer in range(1, 21):
        customer_memory.remember([preference(str(customer), f"Customer {customer} prefers refunds to store credit")])
    for customer in range(1, 21):
        recalled = customer_memory.recall(str(customer), "refund or store credit preference", limit=50)
        assert [item.customer_id for item in recalled] == [str(customer)]
        assert recalled[0].text == f"Customer {customer} prefers refunds to store credit"


@pytest.mark.parametrize("bad_id", ["*", "", " ", "a b", "../etc", "1;DROP", "ü", "x" * 65, "-leading"])
def test_invalid_customer_ids_are_refused_everywhere(customer_memory: CustomerMemory, bad_id: str) -> None:
    calls = [
        lambda: customer_memory.recall(bad_id, "x"),
        lambda: customer_memory.list(bad_id),
        lambda: customer_memory.active_promises(bad_id),
        lambda: customer_memory.remember([preference(bad_id, "x")]),
        lambda: customer_memory.get(bad_id, "some-id"),
        lambda: customer_memory.edit(bad_id, "some-id", "x", editor="a"),
        lambda: customer_memory.delete(bad_id, "some-id"),
        lambda: customer_memory.export_customer(bad_id),
        lambda: customer_memory.forget_customer(bad_id),
    ]
    for call in calls:
        with pytest.raises(InvalidCustomerIdError, match="no wildcards"):
            call()


def test_another_customers_memory_id_is_not_found_on_get_edit_delete_and_history(
    customer_memory: CustomerMemory,
) -> None:
    (alice_memory,) = customer_memory.remember([preference("alice", "Alice wants deliveries after 6 pm")])
    for call in (
        lambda: customer_memory.get("bob", alice_memory),
        lambda: customer_memory.edit("bob", alice_memory, "hijacked", editor="bob"),
        lambda: customer_memory.delete("bob", alice_memory),
        lambda: customer_memory.history("bob", alice_memory),
        lambda: customer_memory.get("alice", "00000000-0000-0000-0000-000000000000"),
        lambda: customer_memory.get("alice", "not-a-uuid"),
        lambda: customer_memory.get("alice", ""),
    ):
        with pytest.raises(MemoryNotFoundError, match="No such memory for this customer"):
            call()
    assert customer_memory.get("alice", alice_memory).text == "Alice wants deliveries after 6 pm"


def test_a_newer_promise_about_the_same_order_supersedes_the_older_one(customer_memory: CustomerMemory) -> None:
    (old,) = customer_memory.remember([promise("7", "Replacement kettle for #W1111111 ships by Friday", "#W1111111")])
    (new,) = customer_memory.remember([promise("7", "Replacement kettle for #W1111111 ships Monday", "#W1111111")])
    by_id = {item.id: item for item in customer_memory.list("7")}
    assert by_id[old].status == "superseded" and by_id[old].superseded_by == new
    assert by_id[new].status == "active"
    assert [item.id for item in customer_memory.recall("7", "when does the replacement kettle ship")] == [new]
    assert [item.id for item in customer_memory.active_promises("7")] == [new]


def test_a_human_edit_is_locked_and_survives_a_superseding_conclusion(customer_memory: CustomerMemory) -> None:
    (original,) = customer_memory.remember([promise("8", "Refund of $20.00 for #W2222222 by 2026-12-01", "#W2222222")])
    edited = customer_memory.edit("8", original, "Refund of $25.00 for #W2222222 by 2026-12-01", editor="staff:ana")
    assert edited.locked and edited.text.startswith("Refund of $25.00")

    (automatic,) = customer_memory.remember([promise("8", "Refund of $20.00 for #W2222222 by 2026-12-03", "#W2222222")])
    by_id = {item.id: item for item in customer_memory.list("8")}
    assert by_id[original].status == "active" and by_id[original].text.startswith("Refund of $25.00")
    assert by_id[automatic].status == "superseded" and by_id[automatic].superseded_by == original

    history = customer_memory.history("8", original)
    assert [row["event"] for row in history] == ["ADD", "UPDATE"]
    assert history[1]["old_memory"].startswith("Refund of $20.00") and history[1]["new_memory"].startswith(
        "Refund of $25"
    )


def test_promises_expire_a_grace_period_after_they_fall_due(customer_memory: CustomerMemory) -> None:
    long_ago = date.today() - timedelta(days=60)
    customer_memory.remember([promise("9", f"Callback on {long_ago}", due=long_ago)])
    (current,) = customer_memory.remember([promise("9", f"Callback on {SOON}")])
    assert [item.id for item in customer_memory.active_promises("9")] == [current]
    assert len(customer_memory.export_customer("9")) == 2, "the export still contains the expired promise"


def test_forgetting_a_customer_leaves_nothing_behind(tmp_path: Path) -> None:
    store = CustomerMemory(hashing_options(tmp_path))
    try:
        ids = store.remember([preference("11", "Likes phone calls"), promise("11", "Call back tomorrow at 10", "#W3")])
        store.edit("11", ids[0], "Likes phone calls in the morning", editor="staff:ann")
        store.remember([preference("12", "Other customer")])
        exported = store.export_customer("11")
        assert {item.id for item in exported} == set(ids) and all(item.history for item in exported)

        assert store.forget_customer("11") == 2
        assert store.list("11") == [] and store.export_customer("11") == []
        assert [item.text for item in store.list("12")] == ["Other customer"]
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "memory-history.db") as history:
        remaining = {row[0] for row in history.execute("SELECT memory_id FROM history")}
    assert not remaining & set(ids), "Mem0's own history rows about the customer are gone too"


def test_mem0_runs_offline_with_telemetry_off(customer_memory: CustomerMemory, tmp_path: Path) -> None:
    import os

    from mem0.memory import telemetry

    assert telemetry.MEM0_TELEMETRY is False
    assert os.environ["MEM0_TELEMETRY"] == "False"
    assert customer_memory.options.sqlite_path.is_relative_to(tmp_path)
    assert customer_memory.options.sqlite_path.is_file()


def test_a_second_process_reads_and_writes_the_same_embedded_store_while_the_first_has_it_open(
    tmp_path: Path,
) -> None:
    store = CustomerMemory(hashing_options(tmp_path))
    try:
        (first,) = store.remember([preference("41", "Prefers SMS over email")])
        script = textwrap.dedent(
            f"""
            from pathlib import Path
            from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
            from memory.store import CustomerMemory
            from tests.memory.conftest import hashing_options
            other = CustomerMemory(hashing_options(Path({str(tmp_path)!r})))
            print("SEEN:", [item.text for item in other.list("41")])
            other.remember([Conclusion("41", ConclusionKind.FACT, "Lives in Lyon", ConclusionSource.AGENT)])
            print("ERASED:", other.forget_customer("42"))
            other.close()
            """
        )
        store.remember([preference("42", "Erase me")])
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert "SEEN: ['Prefers SMS over email']" in result.stdout, result.stderr
        assert "ERASED: 1" in result.stdout, result.stderr
        assert {item.text for item in store.list("41")} == {"Prefers SMS over email", "Lives in Lyon"}
        assert store.list("42") == []
        assert store.remember([preference("41", "Prefers SMS over email")]) == [first], "still stored once"
    finally:
        store.close()


def test_a_second_process_on_an_embedded_qdrant_store_gets_a_clear_error(tmp_path: Path) -> None:
    store = CustomerMemory(replace(hashing_options(tmp_path), vector_store=VectorStoreKind.QDRANT))
    try:
        script = textwrap.dedent(
            f"""
            from dataclasses import replace
            from pathlib import Path
            from memory.config import VectorStoreKind
            from memory.store import CustomerMemory, MemoryStoreLockedError
            from tests.memory.conftest import hashing_options
            try:
                CustomerMemory(replace(hashing_options(Path({str(tmp_path)!r})), vector_store=VectorStoreKind.QDRANT))
            except MemoryStoreLockedError as error:
                print("LOCKED:", error)
            """
        )
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    finally:
        store.close()
    assert "LOCKED: Another process already owns the embedded Qdrant store" in result.stdout, result.stderr
    assert "migrate-store --from qdrant --to sqlite" in result.stdout


def test_recall_with_the_local_minilm_embedder_finds_memories_by_meaning(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="the local embedder's runtime is not installed")
    from memory.config import EmbedderKind, MemoryOptions

    store = CustomerMemory(MemoryOptions(data_dir=tmp_path, embedder=EmbedderKind.LOCAL))
    try:
        store.warm_up()
        store.remember(
            [
                preference("21", "Customer prefers SMS over email for delivery updates"),
                promise("21", f"Refund of $42.10 for order #W2378156 by {SOON}", "#W2378156"),
                preference("21", "Customer is vegetarian and dislikes leather products"),
            ]
        )
        by_meaning = {
            "what is their preferred way to get delivery updates?": "SMS",
            "when will I get my money back?": "Refund",
            "would they like the leather wallet?": "leather",
        }
        for query, expected in by_meaning.items():
            assert expected in store.recall("21", query, limit=1)[0].text, query
    finally:
        store.close()
