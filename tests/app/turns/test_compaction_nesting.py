"""A long conversation through the real app at an 8k window: compactions nest, and nothing is summarized twice.

Each customer message and each reply carries a unique marker, so the summary requests the scripted server received
show which turns were sent to the summary model as raw text (inside ``<turns>``), and how often.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from typing import Any

from sqlmodel import col, select

from app.models import Compaction
from compression.tokens import estimate_messages_tokens
from tests.support.live_app import add_customer_with_order, run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply, ScriptedToolCall
from tests.support.settings import SUMMARY_MODEL, app_settings

WINDOW = 8_192
TURNS = 64
ORDER = "#W5550001"
MARKER = re.compile(r"\b(?:msg|reply)-\d{3}\b")
SUMMARY = """## Customer Goal
- Follow up on a delayed kettle order.
## Key Decisions
- Escalated the delay to the carrier {ids: #W5550001 | from: #2}
## Promises & Commitments
- Call the customer back with news {due: by Friday | ids: #W5550001 | from: #2}
## Customer Preferences
- Prefers short answers
"""


def chat_reply(request: RecordedRequest) -> ScriptedReply:
    transcript = [m for m in request.messages if m.get("role") != "system"]
    last = transcript[-1]
    if last.get("role") == "tool":
        return ScriptedReply(text="The order is still in transit. reply-tool " + "Details follow. " * 20)
    marker = MARKER.search(str(last.get("content")))
    number = int(marker.group()[4:]) if marker else 0
    if number % 4 == 0:
        return ScriptedReply.with_tool_calls(ScriptedToolCall("get_order", json.dumps({"order_number": ORDER})))
    return ScriptedReply(text=f"reply-{number:03d}: I have noted that. " + "Here is what I found about it. " * 25)


def raw_turn_markers(request: RecordedRequest) -> list[str]:
    prompt = str(request.messages[-1].get("content"))
    turns = prompt.split("<turns>", 1)[1].split("</turns>", 1)[0]
    return MARKER.findall(turns)


def test_sixty_turns_at_an_8k_window_nest_fit_and_never_resummarize(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    def answer(request: RecordedRequest) -> ScriptedReply:
        if request.model == SUMMARY_MODEL:
            return ScriptedReply(text=SUMMARY)
        return chat_reply(request)

    scripted_server.set_rule(answer)
    settings = app_settings(tmp_path, scripted_server, context_length=WINDOW, visitor_messages_per_minute=1_000)
    for live in run_live_app(settings):
        add_customer_with_order(live, external_id="nesting-1", number=ORDER)
        client, _ = live.visitor("nesting-1")
        conversation_id = live.conversation(client)
        url = f"/api/widget/conversations/{conversation_id}/messages"
        for number in range(TURNS):
            text = f"msg-{number:03d} about {ORDER}: " + "the kettle has still not arrived, please check. " * 14
            assert client.post(url, json={"content": text}).status_code == 202
            live.wait_for_reply(conversation_id, count=number + 1, timeout=20)

        with live.db() as session:
            compactions = list(session.exec(select(Compaction).order_by(col(Compaction.id))).all())
        ranges = [(c.first_message_id, c.last_message_id) for c in compactions]
        assert len(compactions) >= 4, ranges
        for (first, last), (next_first, next_last) in itertools.pairwise(ranges):
            assert next_first <= first and next_last > last, f"ranges must nest and grow: {ranges}"

        summary_requests = [r for r in scripted_server.chat_requests if r.model == SUMMARY_MODEL]
        for request in summary_requests:
            size = estimate_messages_tokens(request.messages) + int(request.json.get("max_tokens") or 0)
            assert size <= WINDOW, f"a summary request of {size} tokens does not fit the {WINDOW}-token window"
        sent = Counter(marker for request in summary_requests for marker in raw_turn_markers(request))
        assert sent, "turns were summarized"
        twice = sorted(marker for marker, count in sent.items() if count > 1 and marker != "reply-tool")
        assert twice == [], f"sent raw to the summary model more than once: {twice}"

        replies = [m for m in live.transcript(conversation_id) if m.role.value == "assistant" and m.content]
        assert len(replies) >= TURNS, "every turn got its answer"
        last_chat = [r for r in scripted_server.chat_requests if r.model != SUMMARY_MODEL][-1]
        assert estimate_messages_tokens(last_chat.messages) < WINDOW
        assert any("[P1]" in str(m.get("content")) for m in last_chat.messages), "the notes carry the promise key"
