"""No input crashes the compressor: deep nesting, odd types, broken tool calls, items that are not messages, lone
surrogates; neither in aging, nor in the preflight estimate, nor in a compaction."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compression import ContextCompressor
from compression.pruning import prune_tool_outputs, shrink_tool_output
from tests.compression.conftest import ConversationBuilder, FakeSummaryLLM, order_payload

DEEP_LIST = "[" * 1000 + "]" * 1000
DEEP_DICT = '{"a":' * 1000 + "1" + "}" * 1000


def engine(llm: FakeSummaryLLM | None = None) -> ContextCompressor:
    return ContextCompressor(
        model="main", context_length=200_000, summary_llm=llm, threshold_floor_tokens=1_000, threshold_percent=0.01
    )


def long_history(builder: ConversationBuilder, turns: int = 12) -> ConversationBuilder:
    for index in range(turns):
        builder.exchange(index, filler=300)
    return builder


def test_deeply_nested_json_tool_result_is_pruned_without_recursion_error() -> None:
    for payload in (DEEP_LIST, DEEP_DICT, "[" * 600 + "1" + "]" * 600):
        reduced = shrink_tool_output(payload)
        assert reduced.startswith("[memdesk:pruned]")
    builder = ConversationBuilder().user("hi").assistant("hello")
    builder.tools(("dump", {}, DEEP_LIST), ("dump", {}, DEEP_DICT))
    result = engine(FakeSummaryLLM()).compress(long_history(builder).user("and now?").messages)
    assert result.summary is not None


def test_deeply_nested_tool_call_arguments_are_shortened_to_valid_json() -> None:
    arguments = '{"filter": ' + "[" * 1000 + "]" * 1000 + "}"
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": arguments}}],
    }
    pruned, changed = prune_tool_outputs([message], [0])
    assert changed == [0]
    json.loads(pruned[0]["tool_calls"][0]["function"]["arguments"])


def test_items_that_are_not_messages_are_dropped_with_a_trace_note() -> None:
    builder = long_history(ConversationBuilder().user("Order #W2378156 is late").assistant("Looking."))
    messages: list[Any] = list(builder.user("latest").messages)
    messages.insert(3, None)
    messages.insert(6, "just a string")
    messages.insert(9, {"role": 42, "content": None})
    llm = FakeSummaryLLM()
    result = engine(llm).compress(messages)
    assert result.messages[-1]["content"] == "latest"
    assert all(isinstance(message, dict) for message in result.messages)
    repairs = result.events[0]["input_repairs"]
    assert repairs["dropped"] == 3 and any("NoneType" in note for note in repairs["notes"])
    start, end = result.compacted_range or (0, 0)
    assert messages[end - 1] is not None and 0 < start < end <= len(messages)


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30))
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=40,
)
ODD_CONTENT = st.one_of(
    st.none(),
    st.text(max_size=200),
    st.integers(),
    JSON_VALUE.map(lambda value: json.dumps(value)),
    st.integers(1, 400).map(lambda depth: "[" * depth + "]" * depth),
    st.lists(st.one_of(st.text(max_size=20), st.dictionaries(st.sampled_from(["text", "type"]), st.text(max_size=20)))),
    st.builds(lambda text: f"[memdesk: notes on earlier turns] {text}", st.text(max_size=50)),
)
ODD_CALL = st.one_of(
    st.none(),
    st.text(max_size=10),
    st.fixed_dictionaries(
        {"id": st.one_of(st.none(), st.text(max_size=8)), "function": st.one_of(st.none(), st.text(max_size=5))}
    ),
    st.fixed_dictionaries(
        {
            "id": st.text(min_size=1, max_size=8),
            "function": st.fixed_dictionaries(
                {"name": st.one_of(st.none(), st.text(max_size=10)), "arguments": st.one_of(JSON_VALUE, ODD_CONTENT)}
            ),
        }
    ),
)
ODD_MESSAGE = st.one_of(
    st.none(),
    st.integers(),
    st.fixed_dictionaries(
        {
            "role": st.one_of(st.sampled_from(["user", "assistant", "tool", "system", "narrator"]), st.none()),
            "content": ODD_CONTENT,
        },
        optional={
            "tool_calls": st.one_of(st.none(), st.text(max_size=5), st.lists(ODD_CALL, max_size=3)),
            "tool_call_id": st.one_of(st.none(), st.integers(), st.text(max_size=8)),
            "created_at": st.one_of(st.none(), st.text(max_size=25), st.integers()),
        },
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd=st.lists(ODD_MESSAGE, max_size=25), working=st.booleans())
def test_no_odd_input_crashes_the_compressor(odd: list[Any], working: bool) -> None:
    builder = long_history(ConversationBuilder().user("hello").assistant("hi"), turns=8)
    messages: list[Any] = [*builder.messages, *odd, {"role": "user", "content": "latest"}]
    llm = FakeSummaryLLM() if working else FakeSummaryLLM(default=RuntimeError("down"))
    compressor = engine(llm)
    compressor.should_compress_preflight(messages)
    result = compressor.compress(messages)
    assert all(isinstance(message, dict) for message in result.messages)
    assert result.messages[-1]["content"] == "latest"
    json.dumps(result.messages, default=str)


def utf8(messages: list[Any]) -> bytes:
    return json.dumps(messages, ensure_ascii=False, default=str).encode("utf-8")


def tool_history(builder: ConversationBuilder, turns: int = 10) -> ConversationBuilder:
    for index in range(turns):
        number = f"#W{7_300_000 + index}"
        builder.user(f"What about {number}?").tools(("get_order", {"n": number}, order_payload(number)))
        builder.assistant(f"{number} is delivered.")
    return builder


def test_aging_and_preflight_skip_items_that_are_not_messages_as_a_compaction_does() -> None:
    messages: list[Any] = list(tool_history(ConversationBuilder().user("Hi").assistant("Hello")).messages)
    messages.insert(2, None)
    messages.insert(5, "just a string")
    messages.insert(8, {"role": 42, "content": None})
    compressor = engine(FakeSummaryLLM())
    aged = compressor.age_tool_results(messages)
    assert aged.aged_call_ids, "old results still age"
    assert len(aged.messages) == len(messages) - 3 and all(isinstance(m, dict) for m in aged.messages)
    assert compressor.should_compress_preflight(messages) == compressor.should_compress_preflight(aged.messages)
    assert compressor.compress(messages).messages[-1] == messages[-1]


def test_lone_surrogates_reach_no_output_as_anything_but_replacement_characters() -> None:
    builder = tool_history(ConversationBuilder().user("My name is J\ud800ne").assistant("Hello \udfff"))
    messages: list[Any] = list(builder.messages)
    messages[4] = {
        **messages[4],
        "tool_calls": [
            {
                "id": "call_\udc80",
                "type": "function",
                "function": {"name": "get_\ud800order", "arguments": '{"n": "\ud83d"}'},
            }
        ],
    }
    messages[5] = {**messages[5], "tool_call_id": "call_\udc80", "content": order_payload("#W7\udfff")}
    messages.append({"role": "user", "content": [{"type": "text", "text": "parts \ud800 too"}, "and \udc00 strings"]})
    compressor = engine(FakeSummaryLLM())
    aged = compressor.age_tool_results(messages)
    sent = utf8(aged.messages).decode("utf-8")
    assert "J\ufffdne" in sent and "#W7\ufffd" in sent, "in a message's text and in an aged result's reduced JSON"
    assert any("get_\ufffdorder" in str(m.get("content")) for m in aged.messages), "the stub names the call"
    result = compressor.compress(list(aged.messages))
    text = utf8(result.messages).decode("utf-8")
    assert "parts \ufffd too" in text and "and \ufffd strings" in text
    utf8([result.summary])


SURROGATE_TEXT = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(["\ud800", "\udfff", "\udc80x", "#W7000001"])))
ODD_TEXT = SURROGATE_TEXT.map("".join)
ODD_PART = st.one_of(ODD_TEXT, st.fixed_dictionaries({"type": st.just("text"), "text": ODD_TEXT}), st.integers())
SURROGATE_CALL = st.fixed_dictionaries(
    {
        "id": ODD_TEXT,
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": ODD_TEXT, "arguments": st.one_of(ODD_TEXT, JSON_VALUE)}),
    }
)
ODD_ITEM = st.one_of(
    ODD_MESSAGE,
    # Large JSON output whose escapes decode to lone surrogates when pruning or the fallback notes read it.
    st.builds(lambda number: {"role": "tool", "tool_call_id": "call_1", "content": order_payload(number)}, ODD_TEXT),
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "tool", "system"]),
            "content": st.one_of(ODD_TEXT, st.lists(ODD_PART, max_size=4), st.none()),
        },
        optional={"tool_calls": st.lists(SURROGATE_CALL, max_size=2), "tool_call_id": ODD_TEXT, "name": ODD_TEXT},
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd=st.lists(ODD_ITEM, max_size=20), working=st.booleans())
def test_no_odd_items_crash_aging_preflight_or_compaction_and_their_output_encodes(
    odd: list[Any], working: bool
) -> None:
    builder = tool_history(ConversationBuilder().user("hello").assistant("hi"), turns=4)
    messages: list[Any] = [*builder.messages, *odd, *tool_history(ConversationBuilder(), turns=3).messages[1:]]
    compressor = engine(FakeSummaryLLM() if working else FakeSummaryLLM(default=RuntimeError("down")))
    aged = compressor.age_tool_results(messages)
    utf8(aged.messages)
    compressor.should_compress_preflight(messages)
    compressor.should_compress_preflight(aged.messages)
    result = compressor.compress(list(aged.messages))
    utf8(result.messages)
    utf8([result.summary, [decision.text for decision in result.key_decisions]])
