"""The quick backfill after a summary-model outage: what the fallback compacted while the models were down reaches
Mem0 at the next tick once a model answers again, long before the nightly sync (on SQLite, and through the job
queue's job on PostgreSQL); while they are still down a tick leaves it for the next, a conversation the models keep
refusing holds up no other, with nothing to backfill a tick calls no model, and a nightly run meeting the backfill
on one conversation queues its conclusions once."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import procrastinate
import pytest
from pydantic import ValidationError
from sqlmodel import select

from app.customer_memory.ids import memory_customer_id
from app.jobs.queue import BACKFILL_CONCLUSIONS
from app.jobs.schema import psycopg_conninfo
from app.models import Compaction, Conclusion, Conversation, OutboxStatus, SyncRun
from app.settings import BACKFILL_INTERVAL_S, MAX_BACKFILL_INTERVAL_S
from app.sync import SyncOptions, SyncReport, SyncRunner
from app.sync.backfill import Backfill, app_backfill, cron_every
from app.sync.conversation import Outcome
from app.turns.context_engines import default_compressor
from compression import ContextCompressor
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import CHAT_MODEL, SUMMARY_MODEL, app_settings

ORDER = "#W4440001"
PROMISE_REPLY = f"I've approved a refund of $24.99 for order {ORDER}. It will reach your card by Friday."
FILLER_REPLY = "Thank you, I have noted that. " + "Every detail of your order is recorded here. " * 5
OUTAGE_TURNS = 10
LATER = datetime.now(UTC) + timedelta(hours=2)  # past the nightly sync's idle window
_TURN = re.compile(r"\[#(\d+) [^\]]*\]\n([^\[]*)")
_PROMISE_LINE = re.compile(r"^- Refund of \$24\.99 .*$", re.MULTILINE)


class SummaryOutage:
    """A scripted model server whose summary requests fail (both models) while ``down``; chat always answers."""

    def __init__(self, server: ScriptedLLMServer) -> None:
        self.down = True
        self.summary_requests = 0
        self.refused: set[str] = set()  # words whose conversations the models refuse to summarize, outage or not
        server.set_rule(self.answer)

    def answer(self, request: RecordedRequest) -> ScriptedReply:
        material = str(request.messages[-1].get("content"))
        if request.model in (SUMMARY_MODEL, CHAT_MODEL) and "<turns>" in material:
            self.summary_requests += 1
            refused = self.down or any(word in material for word in self.refused)
            return ScriptedReply.http_error(503) if refused else ScriptedReply(text=notes(material))
        last = str(request.messages[-2].get("content") if len(request.messages) > 1 else "")
        return ScriptedReply(text=PROMISE_REPLY if "refund" in last else FILLER_REPLY)


def notes(material: str) -> str:
    """Notes with the refund promise: cited from its turn when the material holds it, else kept as the current
    notes have it (a long stretch is summarized in chunks, each updating the notes of the one before)."""
    cited = [number for number, text in _TURN.findall(material) if "refund of $24.99" in text]
    kept = _PROMISE_LINE.search(material)
    promise = kept.group(0) if kept else f"- Refund of $24.99 for order {ORDER} {{due: by Friday | ids: {ORDER}}}"
    if cited:
        promise = f"- Refund of $24.99 for order {ORDER} {{due: by Friday | ids: {ORDER}, $24.99 | from: #{cited[0]}}}"
    return f"""## Customer Goal
- A refund for a broken mug on order {ORDER}.
## Promises & Commitments
{promise}
## Customer Preferences
- None
"""


def _settings(tmp_path: Path, server: ScriptedLLMServer, **overrides: Any) -> Any:
    # No background tick: the test drives the backfill itself.
    options = {"memory_enabled": True, "memory_embedder": "hashing", "context_length": 2_048, "backfill_interval_s": 0}
    return app_settings(tmp_path, server, **{**options, **overrides})


def _chat_through_outage(live: LiveApp, label: str = "Follow-up") -> str:
    """A conversation long enough to be compacted, with a refund promise in its first reply; the customer's id."""
    widget, customer_ref = live.visitor()
    conversation = live.conversation(widget)
    url = f"/api/widget/conversations/{conversation}/messages"
    first = f"{label}: can I get a refund for my broken mug, order {ORDER}? " + "It arrived in pieces. " * 10
    for count in range(1, OUTAGE_TURNS + 1):
        text = first if count == 1 else f"{label} {count}: " + "the box was crushed as well. " * 14
        assert widget.post(url, json={"content": text}).status_code == 202
        live.wait_for_reply(conversation, count=count, timeout=30.0)
    return customer_ref


def _backfill(live: LiveApp) -> Backfill:
    services = live.services
    assert services.memory is not None
    return app_backfill(services.db, services.gateway, services.settings, outbox=services.memory.outbox)


def _compactions(live: LiveApp) -> list[Compaction]:
    with live.db() as session:
        return list(session.exec(select(Compaction)).all())


def _remembered_refunds(live: LiveApp, customer_ref: str) -> list[str]:
    customer_key = live.customer(customer_ref).id
    assert customer_key is not None and live.services.memory is not None
    return [m.text for m in live.services.memory.store.list(memory_customer_id(customer_key)) if "$24.99" in m.text]


def _no_nightly_sync_ran(live: LiveApp) -> bool:
    with live.db() as session:
        return session.exec(select(SyncRun)).first() is None


def test_after_an_outage_the_next_backfill_tick_brings_the_fallback_ranges_conclusions_to_memory(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    outage = SummaryOutage(scripted_server)
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        customer_ref = _chat_through_outage(live)
        compactions = _compactions(live)
        assert compactions and all(c.fallback_used for c in compactions), "every compaction fell back"
        assert _remembered_refunds(live, customer_ref) == []

        outage.down = False
        report = _backfill(live).tick()

        assert [item.outcome for item in report.conversations] == [Outcome.SUMMARIZED]
        with live.db() as session:
            [row] = session.exec(select(Conclusion)).all()
            assert row.status == OutboxStatus.DELIVERED and row.said_by == "bot"
            [conversation] = session.exec(select(Conversation)).all()
        # Up to the end of what the fallback compacted: later turns are for the next compaction to summarize.
        assert conversation.synced_through_message_id == max(c.last_message_id for c in compactions)
        assert len(_remembered_refunds(live, customer_ref)) == 1 and report.delivered == 1
        assert _no_nightly_sync_ran(live)
        requests = outage.summary_requests
        assert _backfill(live).tick().conversations == [], "a backfilled conversation is not backfilled again"
        assert outage.summary_requests == requests, "with nothing to backfill, no model is called"


def test_while_the_models_are_still_down_a_tick_leaves_the_conversation_for_the_next(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    outage = SummaryOutage(scripted_server)
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        customer_ref = _chat_through_outage(live)
        backfill = _backfill(live)

        still_down = backfill.tick()

        assert [item.outcome for item in still_down.conversations] == [Outcome.FAILED]
        with live.db() as session:
            assert session.exec(select(Conclusion)).all() == []
            assert session.exec(select(Conversation.synced_through_message_id)).one() is None
        outage.down = False
        assert [item.outcome for item in backfill.tick().conversations] == [Outcome.SUMMARIZED]
        assert len(_remembered_refunds(live, customer_ref)) == 1


def test_a_conversation_the_models_keep_refusing_holds_up_no_other(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    outage = SummaryOutage(scripted_server)
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        _chat_through_outage(live, label="Refused")
        other = _chat_through_outage(live)
        outage.down, outage.refused = False, {"Refused"}
        backfill = _backfill(live)

        first, second = backfill.tick(), backfill.tick()

        [refused] = first.conversations
        assert refused.outcome == Outcome.FAILED
        outcomes = [(item.conversation_id == refused.conversation_id, item.outcome) for item in second.conversations]
        assert outcomes == [(False, Outcome.SUMMARIZED), (True, Outcome.FAILED)], "the next tick starts after it"
        assert len(_remembered_refunds(live, other)) == 1


def _backfill_met_by_a_nightly_run(live: LiveApp) -> tuple[Backfill, list[SyncReport]]:
    """A backfill whose every conversation is synced by a nightly run after the backfill read it and before its
    summary is in (the nightly run's reports come in the list)."""
    services = live.services
    assert services.memory is not None

    def compressor() -> ContextCompressor:
        return default_compressor(services.gateway, services.settings)

    deliver = services.memory.outbox.deliver_due
    nightly = SyncRunner(services.db, compressor, services.gateway.ledger, deliver=deliver, clock=lambda: LATER)
    nightly_reports: list[SyncReport] = []

    def compressor_after_a_nightly_run() -> ContextCompressor:
        nightly_reports.append(nightly.run(SyncOptions(idle_minutes=30, concurrency=1)))
        return compressor()

    return Backfill(services.db, compressor_after_a_nightly_run, deliver=deliver), nightly_reports


def test_a_nightly_run_meeting_the_backfill_on_one_conversation_queues_its_conclusions_once(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    outage = SummaryOutage(scripted_server)
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        customer_ref = _chat_through_outage(live)
        outage.down = False
        backfill, nightly_reports = _backfill_met_by_a_nightly_run(live)

        report = backfill.tick()

        assert [item.outcome for item in nightly_reports[0].conversations] == [Outcome.SUMMARIZED]
        assert [item.outcome for item in report.conversations] == [Outcome.SKIPPED], "the nightly run had it"
        with live.db() as session:
            assert len(session.exec(select(Conclusion)).all()) == 1
        assert len(_remembered_refunds(live, customer_ref)) == 1


async def _defer_backfill_job(live: LiveApp) -> None:
    """Defer the backfill job from a connection of its own, as the periodic tick of any server would."""
    connector = procrastinate.PsycopgConnector(conninfo=psycopg_conninfo(live.services.db))
    app = procrastinate.App(connector=connector)
    async with app.open_async():
        await app.configure_task(BACKFILL_CONCLUSIONS).defer_async(timestamp=0)


def test_on_postgresql_the_job_queues_backfill_job_brings_the_conclusions_to_memory(
    tmp_path: Path, scripted_server: ScriptedLLMServer, postgres_url: str
) -> None:
    outage = SummaryOutage(scripted_server)
    # An hourly tick: the test defers the job itself instead of waiting for one.
    settings = _settings(tmp_path, scripted_server, database_url=postgres_url, backfill_interval_s=3600)
    for live in run_live_app(settings):
        customer_ref = _chat_through_outage(live)
        assert all(c.fallback_used for c in _compactions(live))
        outage.down = False

        asyncio.run(_defer_backfill_job(live))

        refunds = live.wait_for(partial(_remembered_refunds, live, customer_ref), timeout=30.0, what="the job's work")
        assert len(refunds) == 1 and _no_nightly_sync_ran(live)


def test_the_backfill_interval_is_validated_ticks_in_whole_minutes_and_zero_switches_it_off(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    for wrong in (-1, MAX_BACKFILL_INTERVAL_S + 1):
        with pytest.raises(ValidationError, match="backfill_interval_s"):
            _settings(tmp_path, scripted_server, backfill_interval_s=wrong)
    assert [cron_every(s) for s in (BACKFILL_INTERVAL_S, 30, 3600)] == ["*/2 * * * *", "*/1 * * * *", "0 * * * *"]
    for live in run_live_app(_settings(tmp_path, scripted_server, backfill_interval_s=0)):
        assert live.services.backfill() is None
