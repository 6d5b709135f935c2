"""A compressor that fails never costs the customer their answer: the turn goes on with the uncompacted context,
or with the oldest turns dropped when that is what fits."""

from __future__ import annotations

from typing import Any

from app.models import Conversation, ConversationStatus
from app.turns.turn import FALLBACK_REPLY
from compression import ContextCompressor
from compression.messages import ChatMessage
from compression.tokens import estimate_messages_tokens
from compression.types import CompressionResult
from tests.support.live_app import run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import CHAT_MODEL, SUMMARY_MODEL, app_settings


class CrashingCompressor(ContextCompressor):
    """The real engine with a bug injected into ``compress`` (a fault the real one can no longer be made to have)."""

    calls = 0

    def compress(self, messages: list[ChatMessage], **options: Any) -> CompressionResult:
        CrashingCompressor.calls += 1
        raise KeyError("a bug in the compressor")


def run_conversation(tmp_path: Any, server: ScriptedLLMServer, window: int, turns: int) -> tuple[Any, list[Any]]:
    server.set_rule(lambda request: ScriptedReply(text="Answered. " + "Some detail. " * 30))
    settings = app_settings(tmp_path, server, context_length=window, max_reply_tokens=200)

    def factory() -> ContextCompressor:
        return CrashingCompressor(model=CHAT_MODEL, context_length=window)

    for live in run_live_app(settings, engine_factory=factory):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        url = f"/api/widget/conversations/{conversation_id}/messages"
        for number in range(turns):
            assert client.post(url, json={"content": f"turn {number}: " + "details " * 60}).status_code == 202
            live.wait_for_reply(conversation_id, count=number + 1)
        with live.db() as session:
            conversation = session.get(Conversation, live.conversation_key(conversation_id))
            status = conversation.status if conversation else None
        return status, live.transcript(conversation_id)
    raise AssertionError("the app did not start")


def test_a_crashing_compressor_still_answers_every_turn_and_truncates_safely(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    CrashingCompressor.calls = 0
    window = 2_048
    status, transcript = run_conversation(tmp_path, scripted_server, window, turns=12)
    assert CrashingCompressor.calls > 0, "the context outgrew the threshold, so compaction was attempted"
    replies = [m.content for m in transcript if m.role.value == "assistant"]
    assert len(replies) == 12 and FALLBACK_REPLY not in replies
    assert status == ConversationStatus.BOT
    chats: list[RecordedRequest] = [r for r in scripted_server.chat_requests if r.model != SUMMARY_MODEL]
    assert all(estimate_messages_tokens(r.messages) + 200 <= window for r in chats), "oldest turns were dropped"
    assert "turn 11" in str(chats[-1].messages[-2].get("content")), "the latest message is always sent"
