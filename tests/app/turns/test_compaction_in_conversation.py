"""A long conversation compacts on the way: an overlay and a new segment are stored, the transcript stays whole."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from app.models import Compaction, ContextSegment, SegmentReason
from compression.assembly import SUMMARY_PREFIX
from tests.support.live_app import run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import SUMMARY_MODEL, app_settings

SUMMARY = """## Customer Goal
- Sort out a late delivery.
## Key Decisions
- Replacement approved.
## Promises & Commitments
- Ship the replacement by 2026-12-02.
"""


def test_long_conversation_compacts_into_an_overlay_and_a_new_segment(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    def answer(request: RecordedRequest) -> ScriptedReply:
        if request.model == SUMMARY_MODEL:
            return ScriptedReply(text=SUMMARY)
        return ScriptedReply(text="Noted, thank you. " + "I have recorded the details. " * 8)

    scripted_server.set_rule(answer)
    settings = app_settings(tmp_path, scripted_server, context_length=2_048)
    for live in run_live_app(settings):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        url = f"/api/widget/conversations/{conversation_id}/messages"
        sent = [(f"Message {i}: " + f"details about my delivery problem number {i}. " * 16).strip() for i in range(10)]
        for count, text in enumerate(sent, start=1):
            assert client.post(url, json={"content": text}).status_code == 202
            live.wait_for_reply(conversation_id, count=count)

        with live.db() as session:
            compactions = session.exec(select(Compaction).order_by(col(Compaction.id))).all()
            segments = session.exec(select(ContextSegment).order_by(col(ContextSegment.number))).all()
        assert compactions, "the conversation outgrew the threshold and was compacted"
        first = compactions[0]
        assert first.summary_model == SUMMARY_MODEL and not first.fallback_used
        assert first.first_message_id <= first.last_message_id
        assert first.trace_event["strategy"] == "summary" and first.tokens_after < first.tokens_before
        assert [s.number for s in segments] == list(range(1, len(compactions) + 2))
        assert segments[1].reason == SegmentReason.COMPRESSION and segments[1].parent_id == segments[0].id
        assert segments[1].title == "Segment 2 (compression)" and first.segment_id == segments[1].id

        # The transcript is never deleted: every message is still stored and listed.
        transcript = live.transcript(conversation_id)
        assert [m.content for m in transcript if m.role.value == "user"] == sent
        listed = client.get(url).json()
        assert [m["content"] for m in listed if m["role"] == "user"] == sent

        summary_requests = [r for r in scripted_server.chat_requests if r.model == SUMMARY_MODEL]
        assert summary_requests and summary_requests[0].max_tokens is not None
        last_chat = [r for r in scripted_server.chat_requests if r.model != SUMMARY_MODEL][-1]
        contents = [str(m.get("content")) for m in last_chat.messages]
        assert any(c.startswith(SUMMARY_PREFIX) or SUMMARY_PREFIX in c for c in contents)
        assert not any(sent[1] in c for c in contents), "compacted turns are no longer sent"
        assert sent[-1] in contents[-2], "the latest message is the last of the transcript"
        assert last_chat.messages[-1]["role"] == "system" and contents[-1].startswith("Now: "), "turn context last"
