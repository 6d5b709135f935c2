"""A reply that loops is stopped and marked, a reply cut at the cap ends visibly, and neither is fed back."""

from __future__ import annotations

from typing import Any

from sqlmodel import select

from app.llm.repetition import ELLIPSIS, RepetitionGuard
from app.models import AuditEvent, MessageRole
from app.settings import EMBEDDED_CHAT_MODEL
from app.turns.context import CUT_REPLY_ACTION
from tests.support.live_app import run_live_app
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply
from tests.support.settings import app_settings

LOOP = "I am happy to help. " + "I love you so much, " * 40


def test_the_guard_keeps_the_text_before_a_loop_and_leaves_varied_text_alone() -> None:
    looping = RepetitionGuard()
    tripped = [looping.feed(LOOP[i : i + 7]) for i in range(0, len(LOOP), 7)]
    assert any(tripped) and looping.kept_text().strip() == "I am happy to help. I love you so much,"

    varied = RepetitionGuard()
    text = (
        "Order #W1234567 will arrive on 2026-12-02. Order #W2345678 will arrive on 2026-12-02. "
        "Order #W3456789 will arrive on 2026-12-02. Anything else I can do?"
    )
    assert not any(varied.feed(word + " ") for word in text.split()) and varied.kept_text().strip() == text


def test_a_chinese_loop_is_caught_too() -> None:
    guard = RepetitionGuard()
    assert guard.feed("好的。" + "我爱你，" * 30) and guard.kept_text().startswith("好的。我爱你")


def test_a_looping_embedded_reply_is_cut_marked_counted_and_not_fed_back(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text=LOOP), "A fresh answer.")
    settings = app_settings(tmp_path, scripted_server, chat_model=EMBEDDED_CHAT_MODEL, playbooks="off")
    for live in run_live_app(settings):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        url = f"/api/widget/conversations/{conversation_id}/messages"
        client.post(url, json={"content": "hello"})
        cut = live.wait_for_reply(conversation_id)[-1]
        assert cut.content is not None and cut.content.endswith(ELLIPSIS) and cut.content.count("love") == 1
        with live.db() as session:
            marks = session.exec(select(AuditEvent).where(AuditEvent.action == CUT_REPLY_ACTION)).all()
        assert [(m.target_id, m.detail["reason"]) for m in marks] == [(str(cut.id), "repetition")]
        assert 'memdesk_replies_cut_total{reason="repetition"} 1.0' in live.client().get("/metrics").text

        client.post(url, json={"content": "are you there?"})
        live.wait_for_reply(conversation_id, count=2)
        second = scripted_server.chat_requests[1]
        assert [m["role"] for m in second.messages] == ["system", "user", "user", "system"]
        assert not any("love" in str(m.get("content")) for m in second.messages)
        # The embedded model gets its penalties and its lower cap.
        assert second.json["repeat_penalty"] > 1.0 and second.json["max_tokens"] == settings.reply_token_cap
        assert [m.role for m in live.transcript(conversation_id)].count(MessageRole.ASSISTANT) == 2


def test_a_reply_cut_at_the_cap_ends_with_an_ellipsis_and_is_marked(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text="Your parcel left the warehouse and is now", finish_reason="length"))
    for live in run_live_app(app_settings(tmp_path, scripted_server)):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "hello"})
        reply = live.wait_for_reply(conversation_id)[-1]
        assert reply.content == f"Your parcel left the warehouse and is now{ELLIPSIS}"
        with live.db() as session:
            mark = session.exec(select(AuditEvent).where(AuditEvent.action == CUT_REPLY_ACTION)).one()
        assert mark.detail["reason"] == "length"
