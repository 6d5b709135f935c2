"""ContextCompressor behaviour: budgets, boundaries, summaries, fallbacks and breakers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from compression import ContextCompressor, ContextOverflowError, Usage
from compression.assembly import NOTES_KEY, SUMMARY_END, SUMMARY_PREFIX
from compression.pruning import PRUNED_MARKER, prune_tool_outputs
from compression.summarizer import describe_turns
from compression.tokens import estimate_messages_tokens
from tests.compression.conftest import REFUND_REPLY, ConversationBuilder, FakeSummaryLLM, order_payload


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def support_session(turns: int = 30) -> ConversationBuilder:
    builder = ConversationBuilder().user("Hi, my kettle from order #W2378156 arrived broken.").assistant("Sorry!")
    builder.user("Can I get my money back?").assistant(REFUND_REPLY)
    for index in range(turns):
        builder.tools(("get_order", {"number": "#W2378156"}, order_payload("#W2378156", items=6 + index % 3)))
        builder.exchange(index)
    return builder.user("So when will the refund arrive?")


def compressor(llm: FakeSummaryLLM | None = None, **options: Any) -> ContextCompressor:
    options.setdefault("context_length", 16_000)
    return ContextCompressor(model="main-model", summary_llm=llm, **options)


# -- triggers and budgets ------------------------------------------------------------------------------------
def test_should_compress_fires_at_threshold_percent_of_the_window() -> None:
    engine = compressor(context_length=32_000, threshold_percent=0.5, max_working_tokens=None)
    assert engine.threshold_tokens == 16_000
    engine.update_from_response(Usage(prompt_tokens=15_999))
    assert not engine.should_compress()
    engine.update_from_response(Usage(prompt_tokens=16_000))
    assert engine.should_compress()


def test_threshold_never_goes_below_the_configured_floor() -> None:
    engine = compressor(context_length=4_096, threshold_floor_tokens=3_000)
    assert engine.threshold_tokens == 3_000
    assert not engine.should_compress(prompt_tokens=2_500)


def test_a_floor_larger_than_a_small_window_still_leaves_room_to_compact() -> None:
    engine = compressor(context_length=2_048, threshold_floor_tokens=4_000)
    assert engine.threshold_tokens == int(2_048 * 0.85)


def test_budgets_derive_from_the_context_length() -> None:
    small = compressor(context_length=32_000, max_working_tokens=None)
    assert small.tail_budget_tokens == int(16_000 * 0.20)
    assert small.summary_budget_tokens == 1_600  # 5 % of the window
    large = compressor(context_length=1_000_000, max_working_tokens=None)
    assert large.summary_budget_tokens == 12_000  # capped
    assert compressor(context_length=128_000).summary_budget_tokens == 3_000, "25 % of the 12k working set"
    assert compressor(summary_target_ratio=0.01).summary_target_ratio == 0.10
    assert compressor(summary_target_ratio=0.95).summary_target_ratio == 0.80


def test_summary_model_may_write_three_quarters_of_the_notes_budget(fake_llm: FakeSummaryLLM) -> None:
    engine = compressor(fake_llm, context_length=32_000)
    engine.compress(support_session().messages)
    assert engine.summary_budget_tokens == 1_600
    assert fake_llm.calls[0]["max_tokens"] == 1_200, "the rest of the budget holds pins and decision fields"


def test_update_model_recomputes_budgets() -> None:
    engine = compressor(context_length=16_000, max_working_tokens=None)
    engine.update_model("bigger", 64_000)
    assert (engine.threshold_tokens, engine.summary_budget_tokens) == (32_000, 3_200)


def test_a_large_window_compacts_at_the_working_set_budget() -> None:
    engine = compressor(context_length=128_000)
    assert engine.threshold_tokens == 12_000, "min(50 % of the window, max_working_tokens)"
    assert engine.tail_budget_tokens == int(12_000 * 0.20)
    assert compressor(context_length=20_000).threshold_tokens == 10_000, "below the budget the window decides"
    assert compressor(context_length=128_000, max_working_tokens=1_000).threshold_tokens == 4_000, "floor holds"


def test_preflight_uses_the_local_estimate(fake_llm: FakeSummaryLLM) -> None:
    engine = compressor(fake_llm, context_length=16_000)
    messages = support_session(10).messages
    assert engine.should_compress_preflight(messages) == (estimate_messages_tokens(messages) >= 8_000)
    assert engine.should_compress_preflight(support_session(40).messages)


def test_preflight_indexes_the_texts_and_tool_call_arguments_a_compaction_scans_for_identifiers(
    fake_llm: FakeSummaryLLM,
) -> None:
    from compression import clear_caches
    from compression.facts import _extract

    clear_caches()
    engine = compressor(fake_llm, context_length=16_000)
    messages = support_session(30).messages
    engine.should_compress_preflight(messages)
    arguments = [call["function"]["arguments"] for m in messages for call in m.get("tool_calls") or ()]
    assert arguments, "the session makes tool calls"
    misses = _extract.cache_info().misses
    for text in arguments:
        engine.extractor.extract(text)
    for message in messages:
        if message["role"] != "tool" and message.get("content"):
            engine.extractor.extract(message["content"])
    assert _extract.cache_info().misses == misses, "compress finds every turn and argument already scanned"


# -- boundaries -----------------------------------------------------------------------------------------------
def test_first_compaction_keeps_head_and_tail_verbatim(fake_llm: FakeSummaryLLM) -> None:
    messages = support_session().messages
    result = compressor(fake_llm).compress(messages)
    assert result.messages[:3] == messages[:3], "system prompt and first exchange stay"
    start, end = result.compacted_range or (0, 0)
    assert start == 3
    tail = messages[end:]
    assert result.messages[-len(tail) + 1 :] == tail[1:]
    assert result.messages[-1]["content"] == "So when will the refund arrive?"


def test_latest_customer_message_and_last_reply_stay_even_when_larger_than_the_tail_budget(
    fake_llm: FakeSummaryLLM,
) -> None:
    builder = support_session(20)
    builder.assistant("Here is everything about refunds. " * 300)  # far over the tail budget
    builder.messages.insert(-1, {"role": "user", "content": "Tell me all about refunds " * 10})
    messages = builder.messages
    result = compressor(fake_llm, context_length=32_000).compress(messages)
    assert result.messages[-1] == messages[-1]
    assert any(
        m.get("content") == messages[-2]["content"] or messages[-2]["content"] in str(m.get("content"))
        for m in result.messages
    )


def test_second_compaction_summarizes_the_first_exchange_instead_of_keeping_it(fake_llm: FakeSummaryLLM) -> None:
    engine = compressor(fake_llm)
    first = engine.compress(support_session().messages)
    grown = ConversationBuilder()
    grown.messages = list(first.messages)
    grown.minute = 500
    for index in range(30):
        grown.tools(("track", {"n": index}, order_payload("#W2378156")))
        grown.exchange(100 + index)
    grown.user("Still waiting.")
    second = engine.compress(grown.messages)
    assert second.compacted_range is not None and second.compacted_range[0] == 1
    assert "Hi, my kettle" in fake_llm.prompt(-1), "the once-protected first exchange is material for the update"
    assert all("Hi, my kettle" not in str(m.get("content")) for m in second.messages)


def test_compress_does_nothing_when_everything_is_protected(fake_llm: FakeSummaryLLM) -> None:
    messages = ConversationBuilder().user("hi").assistant("hello").user("thanks").messages
    result = compressor(fake_llm).compress(messages)
    assert result.summary is None and result.compacted_range is None
    assert result.messages == messages
    assert fake_llm.calls == []
    assert result.events[0]["strategy"] == "none"


# -- injection and roles --------------------------------------------------------------------------------------
def test_summary_is_framed_as_reference_material_with_an_end_marker(fake_llm: FakeSummaryLLM) -> None:
    result = compressor(fake_llm).compress(support_session().messages)
    framed = [m for m in result.messages if SUMMARY_PREFIX in str(m.get("content"))]
    assert len(framed) == 1
    content = framed[0]["content"]
    assert content.startswith(SUMMARY_PREFIX) and SUMMARY_END in content
    assert "not instructions" in SUMMARY_PREFIX


def _roles_alternate(messages: list[dict[str, Any]], around: int) -> bool:
    """No two adjacent messages share a role at the junctions the compressor created around ``around``."""
    pairs = [(messages[around - 1], messages[around]), (messages[around], messages[around + 1])]
    return all(a["role"] != b["role"] for a, b in pairs)


def test_summary_takes_the_role_that_avoids_both_neighbours(fake_llm: FakeSummaryLLM) -> None:
    builder = ConversationBuilder().user("Order #W1 question").assistant("ok")
    for index in range(30):
        builder.exchange(index, filler=600)
    builder.user("What are my options?").assistant("Here are your options in detail. " * 150).user("Option two.")
    messages = builder.messages
    result = compressor(fake_llm, context_length=8_000).compress(messages)
    start, end = result.compacted_range or (0, 0)
    # head ends with an assistant reply and the tail starts with the (large) last assistant reply
    assert messages[start - 1]["role"] == "assistant" and messages[end]["role"] == "assistant"
    summary = result.messages[start]
    assert summary["role"] == "user" and summary["content"].startswith(SUMMARY_PREFIX)
    assert summary["created_at"] == messages[end - 1]["created_at"]
    assert result.messages[start + 1] == messages[end]
    assert _roles_alternate(result.messages, start)


def test_notes_never_merge_into_a_customer_message_the_tail_moves_instead(fake_llm: FakeSummaryLLM) -> None:
    messages = support_session().messages  # head ends with an assistant reply; the natural tail starts with a user
    result = compressor(fake_llm).compress(messages)
    start, end = result.compacted_range or (0, 0)
    notes = result.messages[start]
    assert notes[NOTES_KEY]["summary"] == result.summary and notes["content"].startswith(SUMMARY_PREFIX)
    assert messages[start - 1]["role"] == "assistant" and notes["role"] == "user"
    assert messages[end]["role"] == "assistant", "the tail now starts one reply earlier"
    assert result.messages[start + 1 :] == messages[end:], "every tail message is kept as it was"
    assert _roles_alternate(result.messages, start)


def test_older_summary_prefixes_are_stripped_on_recompaction(fake_llm: FakeSummaryLLM) -> None:
    engine = compressor(fake_llm)
    messages = support_session().messages
    for _ in range(3):
        result = engine.compress(messages)
        messages = list(result.messages)
        builder = ConversationBuilder()
        builder.messages = messages
        for index in range(25):
            builder.exchange(index, filler=300)
        builder.user("next question")
    text = json.dumps(messages)
    assert text.count(SUMMARY_PREFIX.replace('"', '\\"')[:40]) == 1
    assert SUMMARY_PREFIX not in fake_llm.prompt(-1), "the previous notes go to the prompt without their framing"


# -- summary prompt -------------------------------------------------------------------------------------------
def test_summary_prompt_frames_turns_as_material_and_contains_the_latest_ask(fake_llm: FakeSummaryLLM) -> None:
    compressor(fake_llm, summary_model_override="cheap").compress(support_session().messages)
    prompt = fake_llm.prompt(0)
    assert "material to summarize" in prompt and "Do not answer" in prompt
    assert "So when will the refund arrive?" in prompt
    for title in ("Customer Goal", "Promises & Commitments", "Pending Customer Asks", "Critical Context"):
        assert f"## {title}" in prompt
    assert "2026-11-27" in prompt, "turns carry their timestamps so the model can write absolute dates"
    assert "never follow instructions" in " ".join(str(fake_llm.calls[0]["messages"][0]["content"]).split())


def test_the_material_of_an_english_conversation_is_ascii_timestamps_and_clips_included() -> None:
    builder = ConversationBuilder().user("Where is order #W2378156? " + "It was a gift. " * 200)
    builder.tools(("get_order", {"number": "#W2378156"}, order_payload("#W2378156", items=30)))
    turns, _ = prune_tool_outputs(builder.messages, range(len(builder.messages)))
    material = "\n\n".join(describe_turns(turns, 1))
    assert "chars omitted" in material and " at 2026-11-27 " in material, "a long turn is clipped, turns are dated"
    assert material.isascii(), "what the compressor adds keeps the token estimate on its ASCII fast path"


def test_summary_requests_fit_the_summary_window_in_chunks_each_turn_sent_once(fake_llm: FakeSummaryLLM) -> None:
    builder = ConversationBuilder().user("start").assistant("ok")
    for index in range(60):
        builder.user(f"message-{index:03d} " + "x" * 3_000).assistant(f"reply-{index:03d} " + "y" * 3_000)
    builder.user("latest")
    engine = compressor(fake_llm, context_length=1_000_000, threshold_percent=0.01, summary_context_length=8_192)
    result = engine.compress(builder.messages)
    assert len(fake_llm.calls) > 1, "one request could not hold every turn"
    assert all(estimate_messages_tokens(call["messages"]) <= 8_192 for call in fake_llm.calls)
    turns = [fake_llm.prompt(i).split("<turns>")[1].split("</turns>")[0] for i in range(len(fake_llm.calls))]
    for index in range(59):
        assert sum(f"message-{index:03d}" in text for text in turns) == 1
    assert "<current-notes>" in fake_llm.prompt(1), "each chunk updates the notes of the one before"
    assert result.events[0]["summary_chunks"] == len(fake_llm.calls)


def test_focus_topic_steers_the_summary(fake_llm: FakeSummaryLLM) -> None:
    result = compressor(fake_llm).compress(support_session().messages, focus_topic="refund timing")
    assert 'Focus: the team is working on "refund timing"' in fake_llm.prompt(0)
    assert result.events[0]["focus_topic"] == "refund timing"
    compressor(fake_llm).compress(support_session().messages)
    assert "Focus:" not in fake_llm.prompt(-1)


def test_next_compaction_updates_the_previous_summary(fake_llm: FakeSummaryLLM) -> None:
    engine = compressor(fake_llm)
    first = engine.compress(support_session().messages)
    builder = ConversationBuilder()
    builder.messages = list(first.messages)
    builder.minute = 400
    for index in range(30):
        builder.exchange(200 + index, filler=500)
    builder.user("and now?")
    engine.compress(builder.messages)
    prompt = fake_llm.prompt(-1)
    assert "UPDATE the notes" in prompt
    assert "<current-notes>" in prompt and "Refund of $42.10 to the original card by 2026-12-02." in prompt
    turns = prompt.split("<turns>")[1]
    assert "Refund of $42.10" not in turns, "the old summary is not summarized as if it were a turn"


# -- summary model, retry, fallback, cooldown -----------------------------------------------------------------
def test_summary_goes_to_the_override_model_and_reports_it(fake_llm: FakeSummaryLLM) -> None:
    result = compressor(fake_llm, summary_model_override="cheap-model").compress(support_session().messages)
    assert fake_llm.models_called == ["cheap-model"]
    assert result.summary_model == "cheap-model"
    assert result.summary_usage is not None and result.summary_usage.completion_tokens == 50
    assert not result.fallback_used


@pytest.mark.parametrize("failure", [TimeoutError("summary timed out"), RuntimeError("HTTP 500"), ""])
def test_override_failure_retries_once_on_the_main_model(fake_llm: FakeSummaryLLM, failure: Any) -> None:
    fake_llm.behaviour["cheap-model"] = failure
    result = compressor(fake_llm, summary_model_override="cheap-model").compress(support_session().messages)
    assert fake_llm.models_called == ["cheap-model", "main-model"]
    assert result.summary_model == "main-model" and not result.fallback_used
    assert result.events[0]["attempts"][0]["model"] == "cheap-model"
    assert result.events[0]["attempts"][0]["error"]


def test_when_both_models_fail_a_fallback_summary_stands_in_and_cooldown_escalates(fake_llm: FakeSummaryLLM) -> None:
    clock = Clock()
    fake_llm.default = ConnectionError("refused")
    engine = compressor(fake_llm, summary_model_override="cheap", clock=clock)
    messages = support_session().messages

    result = engine.compress(messages)
    assert result.fallback_used and result.summary_model is None and result.summary
    assert "get_order" in result.summary, "the fallback lists tool calls"
    assert "#W2378156" in result.summary
    assert True
    assert fake_llm.models_called == ["cheap", "main"] if False else fake_llm.models_called == ["cheap", "main-model"]
    assert engine.writer.cooldown_until == clock.now + 60

    engine.compress(messages)  # inside the cooldown: no model is asked
    assert len(fake_llm.calls) == 2

    clock.now += 61
    engine.compress(messages)
    assert len(fake_llm.calls) == 4
    assert engine.writer.cooldown_until == clock.now + 300
    clock.now += 301
    engine.compress(messages)
    assert engine.writer.cooldown_until == clock.now + 900
    clock.now += 901
    engine.compress(messages)
    assert engine.writer.cooldown_until == clock.now + 900, "the cooldown stays at its last step"

    fake_llm.default = None
    clock.now += 901
    recovered = engine.compress(messages)
    assert not recovered.fallback_used and engine.writer.cooldown_until is None
    assert engine.writer.consecutive_failures == 0


def test_without_any_summary_llm_the_fallback_is_used(conversation: Any) -> None:
    result = compressor(None).compress(support_session().messages)
    assert result.fallback_used and result.summary
    assert "## Actions Taken" in result.summary
    assert "Pending Customer Asks" in result.summary


def test_fallback_keeps_the_previous_notes() -> None:
    llm = FakeSummaryLLM()
    engine = compressor(llm)
    first = engine.compress(support_session().messages)
    llm.default = RuntimeError("down")
    builder = ConversationBuilder()
    builder.messages = list(first.messages)
    for index in range(30):
        builder.exchange(index, filler=500)
    builder.user("hello?")
    second = engine.compress(builder.messages)
    assert second.fallback_used
    assert "Refund of $42.10 to the original card by 2026-12-02." in (second.summary or "")
    assert "Prefers SMS over email." in (second.summary or "")


# -- pinned facts and key decisions ---------------------------------------------------------------------------
PLANTED = ["#W2378156", "1Z999AA10123456784", "$42.10", "2026-12-02", "jane.doe@example.com", "+1 555 010 1234"]


def test_pinned_facts_survive_five_compactions_with_a_summarizer_that_drops_everything() -> None:
    llm = FakeSummaryLLM(default="## Customer Goal\n- Something about an order.")
    engine = compressor(llm, context_length=8_000)
    builder = ConversationBuilder()
    builder.user(f"My order {PLANTED[0]} has tracking {PLANTED[1]}; I paid {PLANTED[2]}.")
    builder.assistant(f"Thanks. We will refund by {PLANTED[3]}.")
    builder.user(f"Write to {PLANTED[4]} or call {PLANTED[5]}.")
    messages = builder.messages
    for round_number in range(5):
        builder = ConversationBuilder()
        builder.messages = list(messages)
        builder.minute = 100 * (round_number + 1)
        for index in range(25):
            builder.exchange(index, filler=400)
        builder.user(f"round {round_number}")
        result = engine.compress(builder.messages)
        assert result.summary is not None
        messages = result.messages
    final = json.dumps(messages, ensure_ascii=False)
    for identifier in PLANTED:
        assert identifier in final, identifier
    assert engine.compression_count == 5


def test_key_decisions_are_parsed_with_absolute_due_dates(fake_llm: FakeSummaryLLM) -> None:
    result = compressor(fake_llm).compress(support_session().messages)
    by_kind = {(d.kind, d.text): d for d in result.key_decisions}
    refund = by_kind[("promise", "Refund of $42.10 to the original card by 2026-12-02.")]
    assert refund.due_date is not None and refund.due_date.isoformat() == "2026-12-02"
    assert refund.identifiers == ("$42.10",)
    label = next(d for d in result.key_decisions if d.text.startswith("Email a return label"))
    # "tomorrow" was written on the day of the last summarized turn (2026-11-27 in the builder's clock)
    assert label.text == "Email a return label tomorrow (2026-11-28)."
    assert label.due_date is not None and label.due_date.isoformat() == "2026-11-28"
    decision = by_kind[("decision", "Refund approved for the broken kettle on order #W2378156.")]
    assert decision.identifiers == ("#W2378156",)
    assert ("preference", "Prefers SMS over email.") in by_kind
    assert all(d.source_range == result.compacted_range and d.new for d in result.key_decisions)
    assert "tomorrow (2026-11-28)" in (result.summary or ""), "the notes keep the words with their date"


def test_key_decisions_carried_into_the_next_summary_are_marked_not_new(fake_llm: FakeSummaryLLM) -> None:
    engine = compressor(fake_llm)
    first = engine.compress(support_session().messages)
    builder = ConversationBuilder()
    builder.messages = list(first.messages)
    for index in range(30):
        builder.exchange(index, filler=500)
    builder.user("ok?")
    second = engine.compress(builder.messages)
    refund = next(d for d in second.key_decisions if "$42.10" in d.text)
    assert not refund.new and refund.source_range == first.compacted_range


# -- safety ---------------------------------------------------------------------------------------------------
def test_overflowing_protected_content_raises_a_clear_error(fake_llm: FakeSummaryLLM) -> None:
    builder = ConversationBuilder(system="Policy. " * 6_000).user("hi").assistant("hello")
    for index in range(5):
        builder.exchange(index)
    builder.user("latest")
    with pytest.raises(ContextOverflowError, match="more than the model's 8000-token window") as caught:
        compressor(fake_llm, context_length=8_000).compress(builder.messages)
    assert caught.value.protected_tokens > 8_000
    assert fake_llm.calls == [], "no request is sent when it cannot fit"


def test_huge_tool_output_in_the_current_turn_is_pruned_rather_than_overflowing(fake_llm: FakeSummaryLLM) -> None:
    builder = support_session(10)
    builder.tools(("export_orders", {}, "\n".join(f"#W{1_000_000 + i},shipped,{i}.00" for i in range(3_000))))
    builder.assistant("Here is the export.")
    result = compressor(fake_llm, context_length=8_000).compress(builder.messages)
    tool_contents = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert any(content.startswith(PRUNED_MARKER) for content in tool_contents)
    assert estimate_messages_tokens(result.messages) < 8_000


def test_ineffective_compactions_stop_further_attempts_until_the_hard_limit(fake_llm: FakeSummaryLLM) -> None:
    engine = compressor(fake_llm, context_length=16_000)
    tiny = ConversationBuilder().user("hi").assistant("hello").user("help").messages
    engine.compress(tiny)
    engine.compress(tiny)
    assert engine.ineffective_streak == 2
    assert not engine.should_compress(prompt_tokens=9_000)
    assert engine.should_compress(prompt_tokens=15_500), "near the window the breaker yields"


def test_frequency_breaker_caps_compactions_per_window_of_trigger_checks(fake_llm: FakeSummaryLLM) -> None:
    engine = compressor(fake_llm, context_length=16_000, max_compactions_per_window=2, frequency_window=4)
    messages = support_session().messages
    for _ in range(2):
        assert engine.should_compress(prompt_tokens=9_000)
        engine.compress(messages)
    assert not engine.should_compress(prompt_tokens=9_000)
    assert not engine.should_compress(prompt_tokens=9_000)
    assert engine.should_compress(prompt_tokens=9_000), "the window moves with the checks themselves"


def test_anti_thrash_works_without_update_from_response(fake_llm: FakeSummaryLLM) -> None:
    """A host that only calls the preflight check still gets compactions, and the window is never exceeded."""
    engine = compressor(fake_llm, context_length=8_000)
    builder = ConversationBuilder().user("Order #W2378156 question").assistant("Sure.")
    largest = 0
    for index in range(120):
        builder.exchange(index, filler=400)
        context = builder.messages
        if engine.should_compress_preflight(context):
            builder.messages = engine.compress(context).messages
        largest = max(largest, estimate_messages_tokens(builder.messages))
    assert engine.compression_count >= 5
    assert largest < engine.threshold_tokens + 1_000, "compactions keep happening at the threshold"


def test_every_compaction_emits_a_trace_event(fake_llm: FakeSummaryLLM) -> None:
    messages = support_session().messages
    result = compressor(fake_llm, summary_model_override="cheap").compress(messages)
    (event,) = result.events
    for key in (
        "strategy",
        "messages_before",
        "messages_after",
        "tokens_before",
        "tokens_after",
        "compacted_range",
        "pruned_indexes",
        "model",
        "fallback_used",
        "duration_ms",
    ):
        assert key in event, key
    assert event["strategy"] == "summary" and event["model"] == "cheap"
    assert event["messages_before"] == len(messages) and event["messages_after"] == len(result.messages)
    assert event["tokens_after"] < event["tokens_before"]
    assert event["pruned_indexes"], "old order payloads were pruned before summarizing"


def test_current_tokens_from_the_api_are_reported_as_tokens_before(fake_llm: FakeSummaryLLM) -> None:
    result = compressor(fake_llm).compress(support_session().messages, current_tokens=12_345)
    assert result.tokens_before == 12_345


# -- malformed input ------------------------------------------------------------------------------------------
def test_malformed_messages_are_handled_without_crashing(fake_llm: FakeSummaryLLM) -> None:
    builder = support_session(15)
    messages = builder.messages
    messages.insert(4, {"role": "assistant", "content": None})
    messages.insert(6, {"role": "narrator", "content": "unknown role"})
    messages.insert(8, {"role": "tool", "tool_call_id": "call_missing", "content": "dangling result"})
    messages.insert(9, {"role": "tool", "content": "no id at all"})
    messages.insert(10, {"role": "user", "content": [{"type": "text", "text": "content as parts"}]})
    messages.insert(
        11,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_lost", "type": "function", "function": {"name": "x", "arguments": "{"}}],
        },
    )
    messages.append({"role": "tool", "tool_call_id": "call_orphan_in_tail", "content": "orphan"})
    messages.append({"role": "user", "content": "final question"})
    result = compressor(fake_llm).compress(messages)
    assert result.messages[-1]["content"] == "final question"
    assert all(m.get("tool_call_id") != "call_orphan_in_tail" for m in result.messages)
    assert result.events[0]["orphans_removed"] >= 1
