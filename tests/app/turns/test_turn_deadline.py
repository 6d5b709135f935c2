"""A turn has one deadline over every LLM call and retry in it: past it, the customer gets the fallback reply, the
conversation goes to a person with a note saying why, and nothing is lost."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from app.models import AuditEvent, Conversation, ConversationStatus, MessageAuthor
from app.tools.handoff import HANDOFF_ACTION
from app.turns.turn import DEADLINE_HANDOFF_REASON, FALLBACK_REPLY
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply
from tests.support.settings import app_settings

# The adversarial run's model: it answers after the gateway's whole timeout. Without a turn deadline the gateway's
# timeout and two retries would keep the customer waiting three times as long as WAIT_FOR_FALLBACK_S.
SLOW_MODEL_S = 30.0
TURN_DEADLINE_S = 1.5
WAIT_FOR_FALLBACK_S = 20.0


def _settings(tmp_path: Any, server: ScriptedLLMServer) -> Any:
    options = {"llm_timeout_s": SLOW_MODEL_S, "llm_max_retries": 2, "turn_deadline_s": TURN_DEADLINE_S}
    return app_settings(tmp_path, server, **options)


def _assert_handed_off_at_the_deadline(live: LiveApp, conversation_id: str, text: str) -> None:
    replies = live.wait_for_reply(conversation_id, timeout=WAIT_FOR_FALLBACK_S)
    assert [(m.content, m.author) for m in replies] == [(FALLBACK_REPLY, MessageAuthor.SYSTEM)], "exactly one reply"
    transcript = live.transcript(conversation_id)
    assert transcript[0].content == text and transcript[0].author == MessageAuthor.CUSTOMER
    key = live.conversation_key(conversation_id)
    with live.db() as session:
        conversation = session.get(Conversation, key)
        assert conversation is not None and conversation.status == ConversationStatus.NEEDS_HUMAN
        handoffs = session.exec(
            select(AuditEvent).where(col(AuditEvent.action) == HANDOFF_ACTION, col(AuditEvent.target_id) == str(key))
        ).all()
    assert [event.detail["reason"] for event in handoffs] == [DEADLINE_HANDOFF_REASON]
    assert "MEMDESK_TURN_DEADLINE_S" in handoffs[0].detail["summary"]


def test_a_model_slower_than_the_turn_deadline_gets_the_fallback_and_a_person(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(lambda request: ScriptedReply(text="Finally!", delay_s=SLOW_MODEL_S))
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "where is my parcel?"})
        _assert_handed_off_at_the_deadline(live, conversation_id, "where is my parcel?")
        assert len(scripted_server.chat_requests) == 1, "no retry starts after the deadline"
        listed = client.get(f"/api/widget/conversations/{conversation_id}/messages").json()
        assert [m["content"] for m in listed] == ["where is my parcel?", FALLBACK_REPLY]


def test_a_reply_still_streaming_at_the_turn_deadline_is_cut_off_for_the_fallback(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    endless = "Let me check that for you. " * 40
    scripted_server.set_rule(lambda request: ScriptedReply(text=endless, stream_chunk_chars=8, chunk_delay_s=0.2))
    for live in run_live_app(_settings(tmp_path, scripted_server)):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "refund please"})
        _assert_handed_off_at_the_deadline(live, conversation_id, "refund please")


def test_a_busy_model_is_retried_within_the_turn_deadline(tmp_path: Any, scripted_server: ScriptedLLMServer) -> None:
    scripted_server.enqueue(ScriptedReply.http_error(503, retry_after_s=0.1), "Your parcel is on its way.")
    settings = app_settings(tmp_path, scripted_server, llm_max_retries=2, turn_deadline_s=10.0)
    for live in run_live_app(settings):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "where is it?"})
        replies = live.wait_for_reply(conversation_id)
        assert [m.content for m in replies] == ["Your parcel is on its way."]
        assert len(scripted_server.chat_requests) == 2
