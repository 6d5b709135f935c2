"""Property-based checks over random support conversations with parallel tool calls."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compression import ContextCompressor, TruncationEngine
from compression.assembly import MISSING_RESULT_CONTENT
from tests.compression.conftest import FakeSummaryLLM

TURN = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 900)),
    st.tuples(st.just("assistant"), st.integers(1, 900)),
    st.tuples(st.just("tools"), st.lists(st.integers(10, 3_000), min_size=1, max_size=4)),
)


def build(turns: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Support assistant."}]
    call = 0
    for kind, size in turns:
        if kind == "tools":
            ids = []
            for _ in size:
                call += 1
                ids.append(f"call_{call}")
            calls = [{"id": i, "type": "function", "function": {"name": "get_order", "arguments": "{}"}} for i in ids]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call_id, length in zip(ids, size, strict=True):
                messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps({"d": "x" * length})})
        else:
            messages.append({"role": kind, "content": f"{kind} " + "w" * size})
    messages.append({"role": "user", "content": "latest question"})
    return messages


def assert_valid_tool_sequence(original: list[dict[str, Any]], result: list[dict[str, Any]]) -> None:
    answered_in_input = {m["tool_call_id"] for m in original if m["role"] == "tool"}
    index = 0
    while index < len(result):
        message = result[index]
        assert message["role"] != "tool", f"tool result at {index} does not follow its call"
        calls = [c["id"] for c in message.get("tool_calls") or ()]
        index += 1
        results = []
        while index < len(result) and result[index]["role"] == "tool":
            results.append(result[index])
            index += 1
        assert [r["tool_call_id"] for r in results] == calls
        for call_id, tool_result in zip(calls, results, strict=True):
            if call_id in answered_in_input:
                assert tool_result["content"] != MISSING_RESULT_CONTENT, "a call was separated from its result"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(TURN, min_size=1, max_size=70), protect=st.integers(0, 5), ratio=st.floats(0.05, 0.9))
def test_compress_never_splits_tool_calls_from_results(
    turns: list[tuple[str, Any]], protect: int, ratio: float
) -> None:
    messages = build(turns)
    engine = ContextCompressor(
        model="main",
        context_length=200_000,
        summary_llm=FakeSummaryLLM(),
        protect_first_n=protect,
        summary_target_ratio=ratio,
        threshold_floor_tokens=1_000,
        threshold_percent=0.02,
    )
    result = engine.compress(messages)
    assert_valid_tool_sequence(messages, result.messages)
    assert result.messages[0] == messages[0]
    assert result.messages[-1] == messages[-1]
    if result.compacted_range is not None:
        start, end = result.compacted_range
        assert messages[start]["role"] != "tool" and (end == len(messages) or messages[end]["role"] != "tool")


@settings(max_examples=60, deadline=None)
@given(turns=st.lists(TURN, min_size=1, max_size=60))
def test_truncation_also_keeps_tool_groups_whole(turns: list[tuple[str, Any]]) -> None:
    messages = build(turns)
    result = TruncationEngine(model="main", context_length=200_000, threshold_percent=0.01).compress(messages)
    assert_valid_tool_sequence(messages, result.messages)
    assert result.messages[-1] == messages[-1]
