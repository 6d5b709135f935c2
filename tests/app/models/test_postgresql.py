"""The scale setup: the same schema and the same chat turn on a real PostgreSQL server."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import inspect, text

from app.db import create_db_engine, downgrade, migrate, upgrade
from app.jobs.schema import is_job_queue_table
from app.models import MessageRole
from tests.app.models.test_models_and_migrations import ALL_TABLES, schema_differences
from tests.support.live_app import add_customer_with_order, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply, ScriptedToolCall
from tests.support.settings import app_settings

JOB_QUEUE_TABLES = {
    "procrastinate_jobs",
    "procrastinate_periodic_defers",
    "procrastinate_events",
    "procrastinate_workers",
}


def test_migrations_produce_exactly_the_models_schema_on_postgresql(postgres_url: str) -> None:
    migrate(postgres_url)
    migrate(postgres_url)  # idempotent
    engine = create_db_engine(postgres_url)
    try:
        assert engine.dialect.name == "postgresql"
        tables = set(inspect(engine).get_table_names())
        assert {name for name in tables if not is_job_queue_table(name)} == ALL_TABLES | {
            "alembic_version",
            "knowledge_vectors",
        }
        assert tables >= JOB_QUEUE_TABLES
        assert schema_differences(engine) == []
    finally:
        engine.dispose()


def test_the_job_queue_schema_goes_with_a_downgrade_and_comes_back(postgres_url: str) -> None:
    engine = create_db_engine(postgres_url)
    try:
        upgrade(engine)
        downgrade(engine, revision="0008_message_index")
        assert not any(is_job_queue_table(name) for name in inspect(engine).get_table_names())
        with engine.connect() as connection:
            leftovers = connection.execute(
                text("SELECT count(*) FROM pg_proc WHERE proname LIKE 'procrastinate%' UNION ALL "
                     "SELECT count(*) FROM pg_type WHERE typname LIKE 'procrastinate%'")
            ).scalars().all()  # fmt: skip
        assert leftovers == [0, 0]
        upgrade(engine)
        assert set(inspect(engine).get_table_names()) >= JOB_QUEUE_TABLES
    finally:
        engine.dispose()


def test_a_chat_turn_with_a_tool_call_runs_on_postgresql(
    tmp_path: Any, scripted_server: ScriptedLLMServer, postgres_url: str
) -> None:
    scripted_server.enqueue(
        ScriptedReply.with_tool_calls(ScriptedToolCall("get_order", json.dumps({"order_number": "#W2223334"}))),
        "Order #W2223334 has shipped.",
    )
    for live in run_live_app(app_settings(tmp_path, scripted_server, database_url=postgres_url)):
        add_customer_with_order(live, external_id="pg-1", number="#W2223334")
        client, _ = live.visitor("pg-1")
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "status?"})
        live.wait_for_reply(conversation_id)
        transcript = live.transcript(conversation_id)
        assert [m.role for m in transcript] == [
            MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.ASSISTANT,
        ]  # fmt: skip
        assert "#W2223334" in (transcript[2].content or "")
        assert transcript[-1].content == "Order #W2223334 has shipped."
