"""A staff member's promise, typed in the console, is remembered by the conclusion sync as theirs: the outbox row and
the Mem0 memory say who said it, and the customer panel shows their name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlmodel import select

from app.customer_memory.ids import memory_customer_id
from app.models import Conclusion, StaffRole
from app.sync import SyncOptions, SyncRunner
from app.sync.conversation import Outcome
from tests.support.console_support import console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.staff_promises import ORDER, STAFF_NAME, STAFF_PROMISE, script_summaries
from tests.support.sync_data import live_sync_runner

LATER = datetime.now(UTC) + timedelta(hours=2)  # past the idle window


def sync_runner(live: LiveApp) -> SyncRunner:
    return live_sync_runner(live, now=LATER)


OPTIONS = SyncOptions(idle_minutes=30, concurrency=1)


def test_a_staff_promise_made_after_the_last_sync_reaches_memory_as_the_staff_members(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    script_summaries(scripted_server)
    for live in console_app(tmp_path, scripted_server, memory_enabled=True, memory_embedder="hashing"):
        widget, customer_ref = live.visitor()
        conversation = live.conversation(widget)
        text = f"My parcel for order {ORDER} never arrived."
        widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": text})
        live.wait_for_reply(conversation)
        assert sync_runner(live).run(OPTIONS).record is not None  # the night before: nothing promised yet
        sam = signed_in(live, StaffRole.AGENT, "sam@example.com", STAFF_NAME)
        assert sam.post(f"/console/conversations/{conversation}/reply", {"text": STAFF_PROMISE}).status_code == 303
        staff_id = next(m.staff_id for m in live.transcript(conversation) if m.content == STAFF_PROMISE)

        report = sync_runner(live).run(OPTIONS)

        assert [item.outcome for item in report.conversations] == [Outcome.SUMMARIZED]
        with live.db() as session:
            [row] = session.exec(select(Conclusion)).all()
        assert row.said_by == f"staff:{staff_id}" and "claim with UPS" in row.text
        customer_key = live.customer(customer_ref).id
        assert customer_key is not None and live.services.memory is not None
        [memory] = live.services.memory.store.list(memory_customer_id(customer_key))
        assert memory.metadata["said_by"] == f"staff:{staff_id}" and memory.said_by == f"staff:{staff_id}"
        panel = sam.get(f"/console/customers/{customer_ref}/panel")
        assert panel.status_code == 200 and f"promised by {STAFF_NAME}" in panel.text
