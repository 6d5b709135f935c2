"""Supersession on real Mem0 with the local MiniLM embedder: by subject (orders, not the customer's phone or email),
by preference topic, with what replaced what, when and why; and locking keeps a promise's dates."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from memory.conclusions import PROMISE_GRACE_DAYS, Conclusion, ConclusionKind, ConclusionSource, MemoryItem
from memory.config import EmbedderKind, MemoryOptions
from memory.store import CustomerMemory
from memory.supersession import HUMAN_EDIT_WINS

SOON = date.today() + timedelta(days=3)


@pytest.fixture
def minilm_memory(tmp_path: Path) -> Iterator[CustomerMemory]:
    pytest.importorskip("onnxruntime", reason="the local embedder's runtime is not installed")
    store = CustomerMemory(MemoryOptions(data_dir=tmp_path, embedder=EmbedderKind.LOCAL))
    yield store
    store.close()


def promise(customer: str, text: str, *identifiers: str, due: date = SOON) -> Conclusion:
    return Conclusion(customer, ConclusionKind.PROMISE, text, ConclusionSource.COMPACTION, due, identifiers)


def preference(customer: str, text: str, *identifiers: str) -> Conclusion:
    return Conclusion(customer, ConclusionKind.PREFERENCE, text, ConclusionSource.COMPACTION, None, identifiers)


def by_id(store: CustomerMemory, customer: str) -> dict[str, MemoryItem]:
    return {item.id: item for item in store.list(customer)}


def assert_superseded(item: MemoryItem, by: str, reason: str, since: datetime) -> None:
    assert item.status == "superseded" and item.superseded_by == by
    assert item.metadata["superseded_reason"] == reason
    assert datetime.fromisoformat(item.metadata["superseded_at"]) >= since


def test_a_newer_contact_preference_replaces_the_older_one_and_says_why(minilm_memory: CustomerMemory) -> None:
    since = datetime.now().astimezone()
    (sms,) = minilm_memory.remember([preference("31", "Prefers text messages (SMS) to email for updates", "#W1111111")])
    (email,) = minilm_memory.remember([preference("31", "Email only, never phone")])
    memories = by_id(minilm_memory, "31")
    assert memories[email].active
    assert_superseded(memories[sms], email, "same topic (contact channel): newer preference", since)
    recalled = minilm_memory.recall("31", "how should we contact the customer?")
    assert [item.id for item in recalled] == [email]


def test_preferences_on_different_topics_both_stay_active(minilm_memory: CustomerMemory) -> None:
    minilm_memory.remember(
        [
            preference("32", "Prefers text messages (SMS) to email for updates"),
            preference("32", "Never put the invoice in the box"),
            preference("32", "Prefers weekday deliveries (works from home on weekdays)"),
            preference("32", "If out, parcels may be left with the neighbour at number 12"),
        ]
    )
    assert all(item.active for item in minilm_memory.list("32"))


@pytest.mark.parametrize("contact", ["+1 415 555 0100", "jane@example.com", "cus_8f2k1"])
def test_promises_about_two_orders_naming_the_same_contact_both_stay_active(
    minilm_memory: CustomerMemory, contact: str
) -> None:
    first, second = minilm_memory.remember(
        [
            promise("33", f"Text {contact} when the replacement for #W1111111 ships", "#W1111111", contact),
            promise("33", f"Text {contact} when the replacement for #W2222222 ships", "#W2222222", contact),
        ]
    )
    assert {item.id for item in minilm_memory.active_promises("33")} == {first, second}


def test_two_promises_that_only_name_the_customers_phone_are_told_apart_by_meaning(
    minilm_memory: CustomerMemory,
) -> None:
    phone = "+1 415 555 0100"
    first, second = minilm_memory.remember(
        [
            promise("34", f"Call the customer back on {phone} about the warranty claim", phone),
            promise("34", f"Send a discount voucher by text message to {phone}", phone),
        ]
    )
    assert {item.id for item in minilm_memory.active_promises("34")} == {first, second}


def test_a_new_amount_for_the_same_order_replaces_the_old_promise(minilm_memory: CustomerMemory) -> None:
    since = datetime.now().astimezone()
    phone = "+1 415 555 0100"
    (old,) = minilm_memory.remember(
        [promise("35", f"Refund of $20.00 for order #W3333333 by {SOON}", "#W3333333", "$20.00", phone)]
    )
    (new,) = minilm_memory.remember(
        [promise("35", f"Refund of $25.00 for order #W3333333 by {SOON}", "#W3333333", "$25.00", phone)]
    )
    reason = "same order #W3333333, newer version with changed values"
    assert_superseded(by_id(minilm_memory, "35")[old], new, reason, since)
    assert [item.id for item in minilm_memory.active_promises("35")] == [new]


def test_every_supersession_records_what_replaced_it_when_and_why(minilm_memory: CustomerMemory) -> None:
    since = datetime.now().astimezone()
    (first,) = minilm_memory.remember([promise("36", "Replacement kettle for #W4444444 ships by Friday", "#W4444444")])
    (second,) = minilm_memory.remember([promise("36", "Replacement kettle for #W4444444 ships Monday", "#W4444444")])
    minilm_memory.lock("36", second, editor="staff:ana")
    (third,) = minilm_memory.remember([promise("36", "Replacement kettle for #W4444444 ships Tuesday", "#W4444444")])
    (automatic,) = minilm_memory.remember([preference("36", "Prefers phone calls to emails")])
    written = minilm_memory.add_locked(preference("36", "Email only, never phone"), editor="staff:ana")

    memories = by_id(minilm_memory, "36")
    assert_superseded(memories[first], second, "same order #W4444444, newer version", since)
    assert_superseded(memories[third], second, HUMAN_EDIT_WINS, since)
    human_wrote = "a human wrote the memory that replaces it (same topic (contact channel): newer preference)"
    assert_superseded(memories[automatic], written.id, human_wrote, since)
    assert {item.id for item in memories.values() if item.active} == {second, written.id}


def test_locking_a_promise_keeps_its_due_date_and_expiry(minilm_memory: CustomerMemory) -> None:
    (memory_id,) = minilm_memory.remember([promise("37", f"Refund of $42.10 for #W5555555 by {SOON}", "#W5555555")])
    locked = minilm_memory.lock("37", memory_id, editor="staff:ana")
    assert locked.locked and locked.due_date == SOON
    assert locked.metadata["expires_on"] == (SOON + timedelta(days=PROMISE_GRACE_DAYS)).isoformat()
    assert [item.id for item in minilm_memory.active_promises("37")] == [memory_id]


def test_the_customers_export_says_who_made_a_promise_and_why_it_was_replaced(minilm_memory: CustomerMemory) -> None:
    first = Conclusion(
        "32",
        ConclusionKind.PROMISE,
        "Refund of $20.00 for order #W2222222",
        ConclusionSource.COMPACTION,
        SOON,
        ("#W2222222", "$20.00"),
        said_by="staff:4",
    )
    (old,) = minilm_memory.remember([first])
    (new,) = minilm_memory.remember([promise("32", "Refund of $25.00 for order #W2222222", "#W2222222", "$25.00")])

    exported = {item["id"]: item for item in (m.to_dict() for m in minilm_memory.export_customer("32"))}

    assert exported[old]["said_by"] == "staff:4" and exported[old]["superseded_by"] == new
    assert exported[old]["superseded_reason"]
