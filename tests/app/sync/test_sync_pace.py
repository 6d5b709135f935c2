"""The conclusion sync's pace and deadline over real HTTP: a busy model (429, 503) is waited for and its
conversations retried instead of failed; the embedded model gets one conversation at a time; a conversation past
its deadline fails with a clear error, quickly, and is synced by the next run."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from app.settings import EMBEDDED_CHAT_MODEL
from app.sync import SyncRunner, app_sync_runner, options_from
from app.sync.conversation import SYNC_DEADLINE_SETTING, Outcome
from app.sync.pace import sync_concurrency
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import app_settings
from tests.support.sync_data import promise_notes, seed_promise_conversations

CONVERSATIONS = 6
# Past the test client's patience: a sync that waited for this model would not finish within the test's timeouts.
SLOW_MODEL_S = 30.0


def _settings(tmp_path: Any, server: ScriptedLLMServer, **overrides: Any) -> Any:
    options = {"memory_enabled": True, "memory_embedder": "hashing", "sync_concurrency": 4, **overrides}
    return app_settings(tmp_path, server, **options)


def _runner(live: LiveApp) -> SyncRunner:
    services = live.services
    assert services.memory is not None
    return app_sync_runner(
        services.db, services.gateway, services.settings, memory=services.memory.store, outbox=services.memory.outbox
    )


def _notes(request: RecordedRequest) -> ScriptedReply:
    return ScriptedReply(text=promise_notes(str(request.messages[-1].get("content"))))


@pytest.mark.parametrize("status", [429, 503])
def test_a_busy_model_is_waited_for_and_every_conversation_is_retried_instead_of_failed(
    tmp_path: Any, scripted_server: ScriptedLLMServer, status: int
) -> None:
    busy_answers = 5
    answered = 0
    lock = threading.Lock()

    def busy_for_a_while(request: RecordedRequest) -> ScriptedReply:
        nonlocal answered
        with lock:
            answered += 1
            busy = answered <= busy_answers
        return ScriptedReply.http_error(status, retry_after_s=0.2) if busy else _notes(request)

    scripted_server.set_rule(busy_for_a_while)
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        seeded = seed_promise_conversations(live.services.settings.resolved_database_url, CONVERSATIONS)
        report = _runner(live).run(options_from(live.services.settings))
        assert {item.conversation_id: item.outcome for item in report.conversations} == {
            public_id: Outcome.SUMMARIZED for _, public_id in seeded
        }
        assert report.record is not None and report.record.failed == 0 and report.record.errors == []
        assert report.delivered == CONVERSATIONS
        assert len(scripted_server.chat_requests) > CONVERSATIONS, "the busy answers were asked again"


def test_a_model_busy_for_good_fails_its_conversation_with_the_reason_after_bounded_retries(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(lambda request: ScriptedReply.http_error(503, retry_after_s=0.1))
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        seed_promise_conversations(live.services.settings.resolved_database_url, 1)
        report = _runner(live).run(options_from(live.services.settings))
        assert [item.outcome for item in report.conversations] == [Outcome.FAILED]
        assert "stayed busy (HTTP 503)" in (report.conversations[0].error or "")
        # Each try asks the override model, then the main model; the first try and two retries.
        assert len(scripted_server.chat_requests) == 2 * 3


def test_the_embedded_model_is_asked_for_one_summary_at_a_time(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    in_flight, most = 0, 0
    lock = threading.Lock()

    def one_slot(request: RecordedRequest) -> ScriptedReply:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.1)  # the model at work, inside the request
        with lock:
            in_flight -= 1
        return _notes(request)

    scripted_server.set_rule(one_slot)
    # The bundled model served by hand on its own URL: summaries still go to the one embedded model.
    settings = _settings(tmp_path, scripted_server, chat_model=EMBEDDED_CHAT_MODEL, summary_model_override=None)
    assert sync_concurrency(settings) == 1 and settings.sync_concurrency == 4
    for live in run_live_app(settings):
        seed_promise_conversations(live.services.settings.resolved_database_url, 4)
        report = _runner(live).run(options_from(live.services.settings))
        assert [item.outcome for item in report.conversations] == [Outcome.SUMMARIZED] * 4
    assert most == 1


def test_a_real_endpoint_keeps_the_configured_sync_concurrency(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    assert sync_concurrency(_settings(tmp_path, scripted_server, sync_concurrency=3)) == 3


def test_a_conversation_past_its_sync_deadline_fails_quickly_and_the_next_run_syncs_it(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(lambda request: ScriptedReply(text="late", delay_s=SLOW_MODEL_S))
    settings = _settings(
        tmp_path, scripted_server, llm_timeout_s=SLOW_MODEL_S, llm_max_retries=2, sync_conversation_deadline_s=1.0
    )
    for live in run_live_app(settings):
        seeded = seed_promise_conversations(live.services.settings.resolved_database_url, 1)
        report = _runner(live).run(options_from(live.services.settings))
        assert [item.outcome for item in report.conversations] == [Outcome.FAILED]
        error = report.conversations[0].error or ""
        assert SYNC_DEADLINE_SETTING in error and "retried next run" in error
        assert len(scripted_server.chat_requests) == 1, "neither a retry nor the main model is asked past it"

        scripted_server.set_rule(_notes)
        again = _runner(live).run(options_from(live.services.settings))
        assert [(item.conversation_id, item.outcome) for item in again.conversations] == [
            (seeded[0][1], Outcome.SUMMARIZED)
        ]
