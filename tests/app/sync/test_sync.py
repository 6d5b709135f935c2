"""The conclusion sync: a short conversation's promise reaches Mem0 once, with an absolute date, and is recalled the
next day; reruns write nothing; failures are retried; a human-locked memory wins; one run at a time."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlmodel import select

from app.models import Compaction, Conclusion, Conversation, SyncRun
from app.sync import SyncAlreadyRunningError, SyncOptions, SyncRunner, exclusive_sync
from app.sync.conversation import Outcome
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import CHAT_MODEL, SUMMARY_MODEL, app_settings
from tests.support.sync_data import live_sync_runner

PROMISE_REPLY = "I've approved a refund of $24.99 for order #W1112223. It will reach your card by Friday."
# Written the way the summary prompt asks: the due date as the turn said it, the turn it came from.
NOTES = """## Customer Goal
- A refund for a broken mug on order #W1112223.
## Promises & Commitments
- Refund of $24.99 for order #W1112223 {due: by Friday | ids: #W1112223, $24.99 | from: #1}
## Customer Preferences
- None
"""
LATER = datetime.now(UTC) + timedelta(hours=2)  # past the idle window, so every conversation counts as idle


def _settings(tmp_path: Any, server: ScriptedLLMServer, **overrides: Any) -> Any:
    return app_settings(tmp_path, server, **{"memory_enabled": True, "memory_embedder": "hashing", **overrides})


def _script(server: ScriptedLLMServer, *, summary_ok: Callable[[RecordedRequest], bool] = lambda r: True) -> None:
    def answer(request: RecordedRequest) -> ScriptedReply:
        if request.model in (SUMMARY_MODEL, CHAT_MODEL) and "<turns>" in str(request.messages[-1].get("content")):
            return ScriptedReply(text=NOTES) if summary_ok(request) else ScriptedReply.http_error(503)
        last = str(request.messages[-2].get("content") if len(request.messages) > 1 else "")
        return ScriptedReply(text=PROMISE_REPLY if "refund" in last else "Happy to help.")

    server.set_rule(answer)


def _conversation(live: LiveApp, client: httpx.Client, text: str) -> str:
    conversation = live.conversation(client)
    client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": text})
    live.wait_for_reply(conversation)
    return conversation


def _runner(live: LiveApp) -> SyncRunner:
    return live_sync_runner(live, now=LATER)


OPTIONS = SyncOptions(idle_minutes=30, concurrency=4)
DATABASES = ["sqlite", "postgresql"]


def _database_url(request: pytest.FixtureRequest, database: str) -> str | None:
    return str(request.getfixturevalue("postgres_url")) if database == "postgresql" else None


@pytest.mark.parametrize("database", DATABASES)
def test_a_short_conversations_promise_reaches_memory_once_with_an_absolute_date_and_is_recalled_next_day(
    tmp_path: Any, scripted_server: ScriptedLLMServer, request: pytest.FixtureRequest, database: str
) -> None:
    _script(scripted_server)
    for live in run_live_app(_settings(tmp_path, scripted_server, database_url=_database_url(request, database))):
        client, customer_ref = live.visitor()
        _conversation(live, client, "Can I get a refund for my broken mug, order #W1112223?")
        report = _runner(live).run(OPTIONS)
        assert [item.outcome for item in report.conversations] == [Outcome.SUMMARIZED]
        store = live.services.memory.store  # type: ignore[union-attr]
        memories = store.list(str(live.customer(customer_ref).id))
        assert len(memories) == 1 and memories[0].kind == "promise" and "$24.99" in memories[0].text
        assert memories[0].due_date is not None and memories[0].due_date.weekday() == 4  # a Friday, absolute
        record = report.record
        assert record is not None and record.summarized == 1 and record.conclusions_written == 1
        assert record.usage[SUMMARY_MODEL]["prompt_tokens"] > 0, "the override model wrote the summary"

        rerun = _runner(live).run(OPTIONS)
        assert rerun.conversations == [] and rerun.delivered == 0
        assert len(store.list(str(live.customer(customer_ref).id))) == 1

        chat_requests_before = len(scripted_server.chat_requests)
        _conversation(live, client, "Hello again, any news?")
        day_two = [r for r in scripted_server.chat_requests[chat_requests_before:] if r.model == CHAT_MODEL]
        assert "Refund of $24.99 for order #W1112223" in str(day_two[0].messages[-1]["content"])


def test_summaries_use_the_override_model_and_fall_back_to_the_main_model(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    _script(scripted_server, summary_ok=lambda request: request.model == CHAT_MODEL)
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        client, _ = live.visitor()
        _conversation(live, client, "Can I get a refund for my broken mug, order #W1112223?")
        report = _runner(live).run(OPTIONS)
        assert [item.model for item in report.conversations] == [CHAT_MODEL]
        summary_models = [r.model for r in scripted_server.chat_requests if "<turns>" in str(r.messages[-1])]
        assert summary_models == [SUMMARY_MODEL, CHAT_MODEL], "the override is tried first"


def test_a_conversation_whose_summary_fails_is_retried_next_run_and_the_others_succeed(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    failing: set[str] = set()

    def summary_ok(request: RecordedRequest) -> bool:
        return not any(marker in str(request.messages[-1].get("content")) for marker in failing)

    _script(scripted_server, summary_ok=summary_ok)
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        client, _ = live.visitor()
        good = _conversation(live, client, "Can I get a refund for my broken mug, order #W1112223?")
        bad = _conversation(live, client, "Another question about my stove (marker-BAD)")
        failing.add("marker-BAD")
        first = _runner(live).run(OPTIONS)
        outcomes = {item.conversation_id: item.outcome for item in first.conversations}
        assert outcomes == {good: Outcome.SUMMARIZED, bad: Outcome.FAILED}
        assert (
            first.record is not None and first.record.failed == 1 and first.record.errors[0]["conversation_id"] == bad
        )
        failing.clear()
        second = _runner(live).run(OPTIONS)
        assert {item.conversation_id: item.outcome for item in second.conversations} == {bad: Outcome.SUMMARIZED}
        with live.db() as session:
            synced = session.exec(select(Conversation.synced_through_message_id)).all()
            assert all(mark is not None for mark in synced)


def test_a_human_locked_memory_survives_a_conflicting_synced_decision(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    _script(scripted_server)
    # The real local embedder: whether two promises are one decision is judged by meaning.
    for live in run_live_app(_settings(tmp_path, scripted_server, memory_embedder="local")):
        client, customer_ref = live.visitor()
        _conversation(live, client, "Can I get a refund for my broken mug, order #W1112223?")
        store = live.services.memory.store  # type: ignore[union-attr]
        key = str(live.customer(customer_ref).id)
        from memory.conclusions import Conclusion as MemoryConclusion
        from memory.conclusions import ConclusionKind, ConclusionSource

        agreed = "Refund of $20.00 for order #W1112223"
        store.remember([MemoryConclusion(key, ConclusionKind.PROMISE, agreed, ConclusionSource.AGENT,
                                         identifiers=("#W1112223", "$20.00"))])  # fmt: skip
        human = store.list(key)[0]
        store.edit(key, human.id, "Refund of $20.00 for order #W1112223.", editor="staff:1")
        _runner(live).run(OPTIONS)
        memories = {item.id: item for item in store.list(key)}
        assert memories[human.id].active and memories[human.id].locked
        synced = [item for item in memories.values() if item.id != human.id]
        assert len(synced) == 1 and not synced[0].active, "the automatic decision yields to the human's"


def test_a_dry_run_writes_nothing(tmp_path: Any, scripted_server: ScriptedLLMServer) -> None:
    _script(scripted_server)
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        client, _ = live.visitor()
        _conversation(live, client, "Can I get a refund for my broken mug, order #W1112223?")
        requests_before = len(scripted_server.chat_requests)
        report = _runner(live).run(SyncOptions(idle_minutes=30, concurrency=2, dry_run=True))
        assert [item.outcome for item in report.conversations] == [Outcome.SUMMARIZED] and report.record is None
        assert len(scripted_server.chat_requests) == requests_before
        with live.db() as session:
            assert session.exec(select(SyncRun)).all() == [] and session.exec(select(Conclusion)).all() == []


def test_conversations_still_active_wait_for_the_idle_window(tmp_path: Any, scripted_server: ScriptedLLMServer) -> None:
    _script(scripted_server)
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        client, _ = live.visitor()
        conversation = _conversation(live, client, "Can I get a refund for my broken mug, order #W1112223?")
        runner = _runner(live)
        runner.clock = lambda: datetime.now(UTC)
        assert runner.run(OPTIONS).conversations == []
        only = runner.run(SyncOptions(idle_minutes=30, concurrency=1, conversation=conversation))
        assert [item.conversation_id for item in only.conversations] == [conversation]


@pytest.mark.parametrize("database", DATABASES)
def test_only_one_sync_runs_at_a_time(
    tmp_path: Any, scripted_server: ScriptedLLMServer, request: pytest.FixtureRequest, database: str
) -> None:
    for live in run_live_app(_settings(tmp_path, scripted_server, database_url=_database_url(request, database))):
        _assert_exclusive(live.services.db, tmp_path)


def _assert_exclusive(db: Any, data_dir: Any) -> None:
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with exclusive_sync(db, data_dir):
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(5)
    try:
        with pytest.raises(SyncAlreadyRunningError, match="already running"), exclusive_sync(db, data_dir):
            pass
    finally:
        release.set()
        holder.join(5)
    with exclusive_sync(db, data_dir):
        pass  # free again


def test_the_server_schedules_the_daily_sync_and_its_health_shows_the_last_run(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    _script(scripted_server)
    settings = _settings(tmp_path, scripted_server, sync_at="03:00", timezone="Europe/Paris", sync_idle_minutes=0)
    for live in run_live_app(settings):
        health = live.client().get("/healthz").json()
        assert health["sync"]["last_run"] is None and "T03:00:00+0" in health["sync"]["next_run"]  # Paris time
        client, _ = live.visitor()
        _conversation(live, client, "Can I get a refund for my broken mug, order #W1112223?")
        report = live.services.sync_once()
        assert report.record is not None and report.record.summarized == 1
        last = live.client().get("/healthz").json()["sync"]["last_run"]
        assert last["summarized"] == 1 and last["conclusions_written"] == 1 and last["status"] == "finished"


def test_turns_compacted_while_the_summary_models_were_down_still_yield_their_promises(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    models_up = threading.Event()
    _script(scripted_server, summary_ok=lambda request: models_up.is_set())
    settings = _settings(tmp_path, scripted_server, context_length=2_048, max_reply_tokens=200)
    for live in run_live_app(settings):
        client, customer_ref = live.visitor()
        conversation = live.conversation(client)
        url = f"/api/widget/conversations/{conversation}/messages"
        client.post(url, json={"content": "Can I get a refund for my broken mug, order #W1112223?"})
        live.wait_for_reply(conversation)
        for number in range(1, 12):
            client.post(url, json={"content": f"Another detail {number}: " + "the handle came off. " * 60})
            live.wait_for_reply(conversation, count=number + 1)
        with live.db() as session:
            compactions = session.exec(select(Compaction)).all()
        assert compactions and all(c.fallback_used for c in compactions), "compacted by the fallback only"
        store = live.services.memory.store  # type: ignore[union-attr]
        key = str(live.customer(customer_ref).id)
        assert store.list(key) == [], "the fallback turned nothing into a memory"

        models_up.set()
        report = _runner(live).run(OPTIONS)
        assert [item.outcome for item in report.conversations] == [Outcome.SUMMARIZED]
        assert [memory.kind for memory in store.list(key)] == ["promise"]


def _outbox_row(customer_id: int, kind: str, text: str, **fields: Any) -> Conclusion:
    from app.models import ConclusionKind as RowKind
    from app.models import ConclusionSource as RowSource

    digest = hashlib.sha256(f"{customer_id}:{kind}:{text}".encode()).hexdigest()
    return Conclusion(
        customer_id=customer_id, kind=RowKind(kind), text=text, source=RowSource.AGENT, content_hash=digest, **fields
    )


@pytest.mark.parametrize("database", DATABASES)
def test_the_run_record_counts_superseded_memories_and_marks_promises_past_their_grace_period_expired(
    tmp_path: Any, scripted_server: ScriptedLLMServer, request: pytest.FixtureRequest, database: str
) -> None:
    from memory.conclusions import PROMISE_GRACE_DAYS

    _script(scripted_server)
    for live in run_live_app(_settings(tmp_path, scripted_server, database_url=_database_url(request, database))):
        _, customer_ref = live.visitor()
        customer_id = live.customer(customer_ref).id
        assert customer_id is not None
        today = LATER.date()
        long_overdue = today - timedelta(days=PROMISE_GRACE_DAYS + 10)
        with live.db() as session:
            for row in (
                _outbox_row(customer_id, "promise", "Call back about order #W1112223.", due_date=long_overdue,
                            identifiers=["#W1112223"]),
                _outbox_row(customer_id, "promise", "Refund #W1112224 by next week.", due_date=today,
                            identifiers=["#W1112224"]),
                _outbox_row(customer_id, "decision", "Replacement for #W1112225 goes by courier.",
                            identifiers=["#W1112225"]),
            ):  # fmt: skip
                session.add(row)
            session.commit()
        first = _runner(live).run(OPTIONS)
        assert first.record is not None and first.record.conclusions_written == 3
        assert first.record.promises_expired == 1 and first.record.conclusions_superseded == 0

        store = live.services.memory.store  # type: ignore[union-attr]
        key = str(customer_id)
        kept = {item.text: item for item in store.export_customer(key)}
        assert kept["Call back about order #W1112223."].status == "expired", "kept for the record, marked"
        assert kept["Refund #W1112224 by next week."].active, "a promise within its grace period stays open"
        assert [p.text for p in store.active_promises(key)] == ["Refund #W1112224 by next week."]

        with live.db() as session:
            session.add(_outbox_row(customer_id, "decision", "Replacement for #W1112225 goes by post instead.",
                                    identifiers=["#W1112225"]))  # fmt: skip
            session.commit()
        second = _runner(live).run(OPTIONS)
        assert second.record is not None and second.record.conclusions_written == 1
        assert second.record.conclusions_superseded == 1, "the courier decision gave way to the post one"
        assert second.record.promises_expired == 0, "an expired promise is marked once"
