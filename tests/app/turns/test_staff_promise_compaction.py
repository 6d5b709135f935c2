"""A staff member's promise that a compaction summarizes reaches long-term memory as theirs, and the customer panel
names them."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlmodel import select

from app.customer_memory.ids import memory_customer_id
from app.models import Compaction, Conclusion, OutboxStatus, StaffRole
from tests.support.console_support import console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.staff_promises import ORDER, STAFF_NAME, STAFF_PROMISE, script_summaries


def _say(live: LiveApp, widget: httpx.Client, conversation: str, text: str, replies: int) -> None:
    response = widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": text})
    assert response.status_code == 202
    live.wait_for_reply(conversation, count=replies, timeout=30.0)


def _delivered_staff_row(live: LiveApp) -> Conclusion:
    def probe() -> Conclusion | None:
        with live.db() as session:
            rows = session.exec(select(Conclusion).where(Conclusion.status == OutboxStatus.DELIVERED)).all()
        return next((row for row in rows if "claim with UPS" in row.text), None)

    return live.wait_for(probe, timeout=30.0, what="the staff promise delivered")


def test_a_staff_promise_summarized_by_a_compaction_reaches_memory_as_theirs(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    script_summaries(scripted_server)
    options = {"memory_enabled": True, "memory_embedder": "hashing", "context_length": 2_048}
    for live in console_app(tmp_path, scripted_server, **options):
        widget, customer_ref = live.visitor()
        conversation = live.conversation(widget)
        long_text = f"My parcel for order {ORDER} never arrived. " + "The tracking page has not moved in days. " * 8
        _say(live, widget, conversation, long_text, replies=1)
        sam = signed_in(live, StaffRole.AGENT, "sam@example.com", STAFF_NAME)
        base = f"/console/conversations/{conversation}"
        assert sam.post(f"{base}/reply", {"text": STAFF_PROMISE}).status_code == 303
        assert sam.post(f"{base}/hand-back").status_code == 303
        staff_id = next(m.staff_id for m in live.transcript(conversation) if m.content == STAFF_PROMISE)
        replies = len([m for m in live.transcript(conversation) if m.role.value == "assistant" and m.content])
        for number in range(8):
            replies += 1
            _say(live, widget, conversation, f"Follow-up {number}: " + long_text, replies=replies)

        row = _delivered_staff_row(live)

        with live.db() as session:
            assert session.exec(select(Compaction)).first() is not None, "a compaction summarized the staff reply"
        assert row.source == "compaction" and row.said_by == f"staff:{staff_id}"
        sent = [message for request in scripted_server.chat_requests for message in request.messages]
        assert any(STAFF_PROMISE in str(m.get("content")) for m in sent), "the staff reply went to the model"
        assert all("author" not in message for message in sent), "only keys the API accepts are sent"
        customer_key = live.customer(customer_ref).id
        assert customer_key is not None and live.services.memory is not None
        memories = live.services.memory.store.list(memory_customer_id(customer_key))
        [memory] = [m for m in memories if m.id == row.memory_id]
        assert memory.metadata["said_by"] == f"staff:{staff_id}"
        panel = sam.get(f"/console/customers/{customer_ref}/panel")
        assert panel.status_code == 200 and f"promised by {STAFF_NAME}" in panel.text
