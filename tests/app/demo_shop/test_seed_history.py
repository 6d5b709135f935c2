"""``memdesk seed-demo`` gives two demo customers a history: compacted conversations and memories in Mem0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from app.cli.database import deliver_conclusions
from app.db import create_db_engine, migrate
from app.demo_shop import seed_demo
from app.demo_shop.history import HISTORY_TITLE_PREFIX, seed_history
from app.models import Compaction, Conversation, Customer, Message, MessageRole
from app.models import Conclusion as ConclusionRow
from compression.decisions import parse_items
from tests.support.live_app import run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings


def test_seeded_history_is_compacted_delivered_to_memory_and_recalled_in_the_first_turn(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    settings = app_settings(tmp_path, scripted_server, memory_enabled=True, memory_embedder="hashing")
    migrate(settings.resolved_database_url)
    engine = create_db_engine(settings.resolved_database_url)
    with Session(engine) as session:
        seed_demo(session)
        report = seed_history(session)
        assert (report.conversations, report.compactions) == (3, 3) and report.conclusions == 7
        assert seed_history(session).conversations == 0, "seeding again adds nothing"
        histories = session.exec(
            select(Conversation).where(col(Conversation.title).startswith(HISTORY_TITLE_PREFIX))
        ).all()
        compactions = session.exec(select(Compaction)).all()
        assert {c.conversation_id for c in compactions} == {h.id for h in histories}
        assert all(c.fallback_used and c.summary_model is None for c in compactions)
        tool_results = session.exec(select(Message).where(Message.role == MessageRole.TOOL)).all()
        assert len(tool_results) == 3 and all('"order_number": "#W' in (m.content or "") for m in tool_results)
    assert deliver_conclusions(settings, engine) == "Delivered 7 conclusions to long-term memory."
    with Session(engine) as session:
        statuses = set(session.exec(select(ConclusionRow.status)))
        maya = session.exec(select(Customer).where(Customer.external_id == "demo-cust-0001")).one()
    engine.dispose()
    assert {str(status) for status in statuses} == {"delivered"}

    scripted_server.enqueue("Welcome back, Maya!")
    for live in run_live_app(settings):
        client, _ = live.visitor("demo-cust-0001")
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "Hello again"})
        live.wait_for_reply(conversation_id, timeout=30)
    turn_context = scripted_server.chat_requests[0].messages[-1]["content"]
    assert "<customer-memory>" in turn_context and "Open promises to this customer" in turn_context
    assert "replacement glass lid" in turn_context and "carrier's answer" in turn_context
    assert maya.name == "Maya Thompson"


def test_each_seeded_compaction_lists_exactly_the_promises_and_decisions_its_card_holds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    migrate(url)
    engine = create_db_engine(url)
    with Session(engine) as session:
        seed_demo(session)
        seed_history(session)
        compactions = session.exec(select(Compaction)).all()
        conclusions = session.exec(select(ConclusionRow)).all()
    engine.dispose()
    assert len(compactions) == 3
    for compaction in compactions:
        card = [
            row
            for row in conclusions
            if (row.source_message_first_id, row.source_message_last_id)
            == (compaction.first_message_id, compaction.last_message_id)
        ]
        noted = {(item.kind, item.text, item.due_field or "none") for item in parse_items(compaction.summary)}
        held = {(str(row.kind), row.text, row.due_date.isoformat() if row.due_date else "none") for row in card}
        assert noted == held, compaction.summary
        promises = [item for item in parse_items(compaction.summary) if item.kind == "promise"]
        assert all(item.tag and item.tag.startswith("P") for item in promises)
    assert sum(row.kind == "promise" for row in conclusions) == 2
