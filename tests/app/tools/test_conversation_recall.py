"""In a real conversation that compacted, the model finds a detail that only the compacted turns hold by searching
the conversation, and the notes it is sent say that it can."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sqlmodel import col, select

from app.llm import LLMGateway
from app.models import Compaction
from app.tools.conversation_search import RECALL_HINT, TOOL_NAME
from benchmarks.conversation_recall import KIND_WORDS, Fact, Stored, measure_recall, plausible_query
from compression import ContextCompressor
from compression.facts import FactExtractor
from tests.support.live_app import run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply, ScriptedToolCall
from tests.support.settings import SUMMARY_MODEL, app_settings

ORDER = "#W2378156"
SUMMARY = """## Customer Goal
- Sort out a late kettle delivery.
## Pending Customer Asks
- Wants to know where the kettle is.
"""
QUESTION = "Sorry, what was the number of my kettle order again?"
WINDOW = 2_048


def answer(request: RecordedRequest) -> ScriptedReply:
    if request.model == SUMMARY_MODEL:
        return ScriptedReply(text=SUMMARY)
    if request.last_user_text == QUESTION and request.messages[-2].get("role") != "tool":
        query = json.dumps({"query": "kettle order number"})
        return ScriptedReply.with_tool_calls(ScriptedToolCall(TOOL_NAME, query, id="call_search"))
    return ScriptedReply(text="Noted, thank you. " + "I have recorded the details. " * 8)


def test_a_detail_only_the_compacted_turns_hold_is_found_by_searching_the_conversation(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(answer)
    settings = app_settings(tmp_path, scripted_server, context_length=WINDOW)
    gateway = LLMGateway.from_settings(settings)

    def engine() -> ContextCompressor:
        # No pinned identifiers: the order number then survives in the transcript alone.
        return ContextCompressor(model=gateway.chat_model, context_length=WINDOW, summary_llm=gateway,
                                 summary_model_override=SUMMARY_MODEL, pinned_budget_share=0.0,
                                 recall_hint=RECALL_HINT)  # fmt: skip

    try:
        for live in run_live_app(settings, engine_factory=engine):
            client, _ = live.visitor()
            conversation_id = live.conversation(client)
            url = f"/api/widget/conversations/{conversation_id}/messages"
            sent = ["Hello there.", "I have a question about a delivery.", f"My kettle order is {ORDER} and late."]
            sent += [f"Message {i}: " + f"details about my delivery problem number {i}. " * 16 for i in range(8)]
            for count, content in enumerate([*sent, QUESTION], start=1):
                assert client.post(url, json={"content": content}).status_code == 202
                live.wait_for_reply(conversation_id, count=count)

            with live.db() as session:
                compactions = session.exec(select(Compaction).order_by(col(Compaction.id))).all()
            assert compactions, "the conversation compacted"
            chats = [r for r in scripted_server.chat_requests if r.model != SUMMARY_MODEL]
            asked, answered = chats[-2], chats[-1]
            assert ORDER not in json.dumps(asked.messages), "the order number left the context"
            notes = [m for m in asked.messages if RECALL_HINT in str(m.get("content"))]
            assert len(notes) == 1, "the notes say the earlier turns can be searched"
            assert TOOL_NAME in {tool["function"]["name"] for tool in asked.tools}
            [result] = [m for m in answered.messages if m.get("tool_call_id") == "call_search"]
            found = json.loads(result["content"])["results"]
            assert any(ORDER in item["snippet"] and item["speaker"] == "customer" for item in found)
    finally:
        asyncio.run(gateway.aclose())


def test_every_compacted_fact_stays_answerable_in_the_recall_benchmark() -> None:
    result = measure_recall()
    assert result["compactions"] >= 2 and result["facts"] > 0
    assert result["answerable_share"] == 1.0, result["misses"]
    without_pins = result["without_pins"]
    assert without_pins["in_context_share"] < 1.0, "without pins, compaction loses facts from the context"
    assert without_pins["found_by_search"] > 0 and without_pins["answerable_share"] == 1.0, without_pins["misses"]


def test_the_benchmarks_queries_never_hold_the_answer() -> None:
    extractor = FactExtractor()
    ask = "Where is my order #W1234567?"
    for kind, value, text in (
        ("tracking", "1Z999AA10123456784", '{"number": "#W1234567", "tracking_number": "1Z999AA10123456784"}'),
        ("order", "#W1234567", ask),
        ("money", "$42.10", f"{ask} For reference: $42.10."),
    ):
        query = plausible_query(Fact(kind, value, Stored(1, text, ask)), extractor)
        assert value not in query and query.startswith(KIND_WORDS[kind])
