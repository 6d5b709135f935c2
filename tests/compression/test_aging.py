"""Micro-compaction: old tool results age into stubs in batches, without an LLM, and nothing is lost."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compression import DEFAULT_FACT_PATTERNS, ContextCompressor, FactExtractor, FactPattern, clear_caches
from compression.aging import Stub, age_tool_results, aged_stub, remember_stub_identifiers, stub_head, stub_text
from compression.messages import ChatMessage
from compression.pruning import PRUNED_MARKER, shrink_tool_output
from compression.tokens import estimate_messages_tokens
from tests.compression.conftest import ConversationBuilder, FakeSummaryLLM, order_payload

ERROR_OUTPUT = json.dumps(
    {
        "error": {"code": "carrier_timeout", "message": "The carrier did not answer."},
        "order": {"number": "#W7000001", "status": "shipped", "total": "$42.10", "placed_at": "2026-11-20"},
        "noise": ["x" * 200] * 10,
    }
)


def tool_turns(count: int, start: int = 0) -> ConversationBuilder:
    builder = ConversationBuilder().user("Hello").assistant("Hi!")
    for index in range(start, start + count):
        number = f"#W{7_000_000 + index}"
        builder.user(f"What about {number}?")
        builder.tools(("get_order", {"order_number": number}, order_payload(number)))
        builder.assistant(f"{number} is delivered.")
    return builder


def stubs(messages: list[ChatMessage]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "tool" and m["content"].startswith(PRUNED_MARKER)]


def test_aging_is_deterministic_and_idempotent() -> None:
    messages = tool_turns(12).messages
    once = age_tool_results(messages, min_batch_tokens=500)
    assert once.aged_call_ids, "old results aged"
    twice = age_tool_results(once.messages, min_batch_tokens=500)
    assert twice.messages == once.messages, "a stub is never aged again"
    assert age_tool_results(messages, min_batch_tokens=500).messages == once.messages


def test_aging_keeps_calls_arguments_and_their_pairing() -> None:
    messages = tool_turns(12).messages
    aged = age_tool_results(messages, min_batch_tokens=500).messages
    assert len(aged) == len(messages)
    for before, after in zip(messages, aged, strict=True):
        assert {k: v for k, v in before.items() if k != "content"} == {k: v for k, v in after.items() if k != "content"}
        if before.get("role") != "tool":
            assert before == after, "only tool results change"
        for call in after.get("tool_calls") or ():
            json.loads(call["function"]["arguments"])


def test_a_stub_keeps_identifiers_and_the_error_and_names_the_call() -> None:
    builder = ConversationBuilder().user("Where is #W7000001?")
    builder.tools(("track_order", {"order_number": "#W7000001"}, ERROR_OUTPUT))
    builder.assistant("The carrier is slow.")
    for index in range(3):
        builder.user(f"And now {index}?").assistant("Still checking.")
    aged = age_tool_results(builder.messages, min_batch_tokens=1)
    (stub,) = stubs(aged.messages)
    for kept in ("#W7000001", "shipped", "$42.10", "2026-11-20", "carrier_timeout", "The carrier did not answer."):
        assert kept in stub, kept
    assert 'track_order({"order_number": "#W7000001"})' in stub and "call track_order again" in stub
    assert "call_1" in stub


def test_results_age_only_in_batches_above_the_threshold() -> None:
    """The prompt prefix changes only when a batch closes: growing the conversation by one turn at a time, the
    aged set stays the same until enough savings accumulated, then grows by several results at once."""
    batch_tokens = 3_000
    builder = tool_turns(2)
    history: list[int] = []
    for index in range(14):
        number = f"#W{7_100_000 + index}"
        builder.user(f"And {number}?").tools(("get_order", {"n": number}, order_payload(number))).assistant("ok")
        history.append(len(age_tool_results(builder.messages, min_batch_tokens=batch_tokens).aged_call_ids))
    changes = [after - before for before, after in itertools.pairwise(history) if after != before]
    assert history[0] == 0 and history[-1] > 0
    assert changes and all(step >= 2 for step in changes), f"aged counts per turn: {history}"
    quiet = sum(1 for before, after in itertools.pairwise(history) if after == before)
    assert quiet >= len(history) // 2, "most turns leave the prompt prefix alone"


def test_recent_tool_turns_are_never_aged() -> None:
    messages = tool_turns(3).messages
    assert age_tool_results(messages, keep_recent_user_turns=3, min_batch_tokens=1).aged_call_ids == []


def test_a_conversation_below_the_compaction_threshold_still_gets_its_old_tool_output_aged() -> None:
    engine = ContextCompressor(model="main", context_length=128_000, summary_llm=FakeSummaryLLM())
    builder = tool_turns(2)
    events: list[dict[str, Any]] = []
    sizes = []
    for index in range(20):
        number = f"#W{7_200_000 + index}"
        builder.user(f"And {number}?").tools(("get_order", {"n": number}, order_payload(number))).assistant("ok")
        aged = engine.age_tool_results(builder.messages)
        events += aged.events
        assert not engine.should_compress_preflight(aged.messages)
        sizes.append((estimate_messages_tokens(builder.messages), estimate_messages_tokens(aged.messages)))
    assert engine.compression_count == 0
    assert events and all(e["strategy"] == "micro_compaction" for e in events)
    assert all(e["tokens_after"] < e["tokens_before"] for e in events)
    assert sum(e["results_aged"] for e in events) == events[-1]["results_aged_total"]
    full, sent = sizes[-1]
    assert sent < full * 0.6, sizes[-1]


def test_pinned_identifiers_of_aged_results_survive_the_summarizing_compaction() -> None:
    engine = ContextCompressor(
        model="main", context_length=8_000, summary_llm=FakeSummaryLLM(default="## Customer Goal\n- Orders.")
    )
    builder = tool_turns(16)
    aged = engine.age_tool_results(builder.messages).messages
    result = engine.compress(aged)
    assert "#W7000003" in json.dumps(result.messages), "an identifier from an aged result is pinned"


def test_micro_compaction_can_be_switched_off() -> None:
    engine = ContextCompressor(model="main", context_length=128_000, micro_compaction=False)
    messages = tool_turns(12).messages
    assert engine.age_tool_results(messages).messages is messages


# Pieces that put identifiers, near-identifiers and line breaks at the edges of a stub's parts.
EDGE_PIECES = st.sampled_from(
    [
        *'0123456789ABWZaz#$€+()-., \n\t"{}:@',
        "1Z",
        "123456",
        "4567",
        "USD",
        " EUR",
        "2026-11-",
        "Dec 3, ",
        "#W",
        "jane@example.com",
        "(555) ",
        "555-",
        "+1 ",
        "$12.50",
        "INFO ",
        "ERROR ",
        "…",
    ]
)
EDGE_TEXT = st.lists(EDGE_PIECES, max_size=30).map("".join)
TOOL_OUTPUT = st.one_of(
    EDGE_TEXT,
    st.dictionaries(st.sampled_from(["id", "status", "total", "note", "placed_at"]), EDGE_TEXT).map(json.dumps),
    st.lists(st.tuples(st.sampled_from(["INFO", "ERROR", "WARN"]), EDGE_TEXT), min_size=3, max_size=8).map(
        lambda lines: "\n".join(f"{level} {text}" for level, text in lines)
    ),
    st.lists(EDGE_TEXT.map(lambda text: text.replace(",", ";") + ",x,y"), min_size=7, max_size=9).map("\n".join),
)


def stub_of(output: str, call_id: str, name: str, arguments: str) -> Stub:
    head, reduced = stub_head(call_id, name, arguments), shrink_tool_output(output)
    return Stub(call_id, stub_text(head, reduced), head, reduced)


@settings(max_examples=1_500, deadline=None)
@given(output=TOOL_OUTPUT, call_id=EDGE_TEXT, name=EDGE_TEXT, arguments=EDGE_TEXT)
def test_a_stub_yields_the_identifiers_a_scan_of_it_finds(output: str, call_id: str, name: str, arguments: str) -> None:
    stub = stub_of(output, call_id, name, arguments)
    assert stub.text == aged_stub(output, call_id, name, arguments)
    clear_caches()
    scanned = FactExtractor().extract(stub.text)
    clear_caches()
    remember_stub_identifiers(stub, FactExtractor())
    assert FactExtractor().extract(stub.text) == scanned


def test_patterns_that_can_match_across_lines_scan_the_whole_stub() -> None:
    across = FactPattern("handoff", "Handoffs", r"result\.\nJSON")
    extractor = FactExtractor((*DEFAULT_FACT_PATTERNS, across))
    stub = stub_of(ERROR_OUTPUT, "call_9", "track_order", '{"order_number": "#W7000001"}')
    clear_caches()
    remember_stub_identifiers(stub, extractor)
    assert ("handoff", "result.\nJSON") in extractor.extract(stub.text)
