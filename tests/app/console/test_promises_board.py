"""The promises board: open promises of every customer (delivered through the outbox into real Mem0), filtered by
due date, an overdue one flagged in its customer's panel; marking one kept locks and audits it, takes it off the
board and moves the overview's kept-on-time rate; a form without its CSRF token is refused; an erased customer's
promises leave the board."""

from __future__ import annotations

import asyncio
import re
from datetime import date, timedelta
from pathlib import Path

from sqlmodel import select

from app.customer_memory.ids import memory_customer_id
from app.customer_memory.service import format_memory_section
from app.models import PromiseRecord, StaffRole
from app.web.deps import shop_today
from memory.conclusions import MemoryItem
from tests.support.console_support import audit_actions, console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.promises import deliver_promises, queue_promise
from tests.support.scripted_llm import ScriptedLLMServer


def _rate(overview: str) -> str:
    found = re.search(r'data-figure="promises-kept-on-time">([^<]*)<', overview)
    assert found is not None
    return found.group(1).strip()


def _memory_id(live: LiveApp, order: str) -> str:
    with live.db() as session:
        record = session.exec(select(PromiseRecord).where(PromiseRecord.subject == order)).one()
    return record.memory_id


def test_board_lists_filters_marks_and_forgets_erased_customers(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    options = {"memory_enabled": True, "memory_embedder": "hashing"}
    for live in console_app(tmp_path, scripted_server, **options):
        today = shop_today(live.services.settings)
        ann, ann_ref = live.visitor()
        bob, bob_ref = live.visitor()
        ann_chat, bob_chat = live.conversation(ann), live.conversation(bob)
        queue_promise(live, ann_ref, ann_chat, "#W1000001", today - timedelta(days=2))
        queue_promise(live, ann_ref, ann_chat, "#W1000002", today)
        queue_promise(live, bob_ref, bob_chat, "#W2000001", today + timedelta(days=3))
        deliver_promises(live, 3)

        agent = signed_in(live, StaffRole.AGENT)
        board = agent.get("/console/promises")
        assert board.status_code == 200
        assert all(order in board.text for order in ("#W1000001", "#W1000002", "#W2000001"))
        assert bob_chat in board.text and ann_chat in board.text
        overdue = agent.get("/console/promises", params={"due": "overdue"}).text
        assert "#W1000001" in overdue and "#W1000002" not in overdue and "#W2000001" not in overdue
        due_today = agent.get("/console/promises", params={"due": "today"}).text
        assert "#W1000002" in due_today and "#W1000001" not in due_today
        week = agent.get("/console/promises", params={"due": "week"}).text
        assert "#W2000001" in week and "#W1000002" in week and "#W1000001" not in week
        assert agent.get("/console/promises", params={"due": "someday"}).status_code == 422
        assert "badge--overdue" in agent.get(f"/console/customers/{ann_ref}/panel").text
        assert "badge--overdue" not in agent.get(f"/console/customers/{bob_ref}/panel").text

        kept_id = _memory_id(live, "#W1000002")
        mark = f"/console/promises/{kept_id}/mark"
        assert agent.post(mark, {"outcome": "kept"}).status_code == 403  # agents read memory, they do not edit it
        supervisor = signed_in(live, StaffRole.SUPERVISOR, name="Sue Visor")
        assert supervisor.post(mark, {"outcome": "kept"}, csrf=False).status_code == 403
        assert supervisor.post(mark, {"outcome": "maybe"}).status_code == 422
        assert _rate(supervisor.get("/console/overview").text).startswith("0.0 %")  # one overdue, none kept

        marked = supervisor.post(mark, {"outcome": "kept", "note": "Refund sent by bank transfer."})
        assert marked.status_code in (200, 303)
        assert "#W1000002" not in supervisor.get("/console/promises").text
        assert supervisor.post(mark, {"outcome": "kept"}).status_code == 404  # no longer open
        assert _rate(supervisor.get("/console/overview").text).startswith("50.0 %")
        actions = [event.action for event in audit_actions(live)]
        assert "console.memory_lock" in actions and "console.promise_kept" in actions
        assert live.services.memory is not None
        ann_key = live.customer(ann_ref).id
        assert ann_key is not None
        item = live.services.memory.store.get(memory_customer_id(ann_key), kept_id)
        assert item.locked
        recall = asyncio.run(live.services.memory.section(ann_key, "Where is my refund?"))
        assert "#W1000001" in recall and "#W1000002" not in recall  # a kept promise is no longer an open one

        admin = signed_in(live, StaffRole.ADMIN)
        assert admin.post(f"/console/customers/{bob_ref}/erase").status_code in (200, 303)
        assert "#W2000001" not in agent.get("/console/promises").text
        with live.db() as session:
            assert not session.exec(select(PromiseRecord).where(PromiseRecord.subject == "#W2000001")).all()


def _item(memory_id: str, due: date) -> MemoryItem:
    return MemoryItem(id=memory_id, customer_id="c1", text=f"Promise {memory_id}", kind="promise", due_date=due)


def test_recall_puts_an_overdue_promise_first_and_says_it_is_overdue() -> None:
    today = date(2026, 12, 2)
    upcoming, late = _item("upcoming", today + timedelta(days=1)), _item("late", today - timedelta(days=3))
    section = format_memory_section([], [upcoming, late], today=today)
    lines = section.splitlines()
    assert "late" in lines[1] and "OVERDUE" in lines[1]
    assert "upcoming" in lines[2] and "OVERDUE" not in lines[2]


def test_a_changed_promise_replaces_its_earlier_version_on_the_board(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    options = {"memory_enabled": True, "memory_embedder": "hashing"}
    for live in console_app(tmp_path, scripted_server, **options):
        today = shop_today(live.services.settings)
        ann, ann_ref = live.visitor()
        chat = live.conversation(ann)
        first, moved = today + timedelta(days=1), today + timedelta(days=4)
        queue_promise(live, ann_ref, chat, "#W3000001", first)
        deliver_promises(live, 1)
        queue_promise(live, ann_ref, chat, "#W3000001", moved)
        deliver_promises(live, 1)

        board = signed_in(live, StaffRole.AGENT).get("/console/promises").text
        assert moved.isoformat() in board and first.isoformat() not in board
