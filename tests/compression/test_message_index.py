"""The index a host stores with each message: a compressor in a new process uses it instead of redoing the work,
and gets the same notes; an index that does not match its message is ignored."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.support_sessions import generate_session, turn_messages
from compression import CompressionResult, ContextCompressor, FactExtractor, clear_caches
from compression.facts import _extract
from compression.message_index import INDEX_KEY, default_extractor, index_message, prime_caches
from compression.messages import ChatMessage
from compression.pruning import _shrink
from tests.compression.conftest import REFUND_REPLY, ConversationBuilder, FakeSummaryLLM, order_payload


def long_session(turns: int = 24) -> list[ChatMessage]:
    builder = ConversationBuilder().user("Hi, my kettle from order #W2378156 arrived broken.").assistant("Sorry!")
    builder.user("Can I get my money back?").assistant(REFUND_REPLY)
    for index in range(turns):
        number = f"#W{2_000_000 + index}"
        builder.tools(("get_order", {"number": number}, order_payload(number, items=6 + index % 3)))
        builder.user(f"And the parcel 1Z999AA1012345678{index % 10} for {number}?").assistant(f"Checking {number}.")
    return builder.user("So when will the refund arrive?").messages


def stored(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages as a host keeps them: each with the index made when it was stored, through JSON."""
    indexed = []
    for message in messages:
        index = index_message(message, default_extractor())
        indexed.append({**message, INDEX_KEY: index} if index is not None else message)
    return json.loads(json.dumps(indexed))  # type: ignore[no-any-return]


def compaction(messages: list[ChatMessage]) -> tuple[str, list[Any]]:
    engine = ContextCompressor(model="main-model", context_length=16_000, summary_llm=FakeSummaryLLM())
    result = engine.compress(messages)
    return result.summary or "", [(d.kind, d.text) for d in result.key_decisions]


def scans_during(messages: list[ChatMessage]) -> tuple[int, int, tuple[str, list[Any]]]:
    """Identifier scans and tool-output reductions a first compaction in a fresh process does, and its notes."""
    clear_caches()
    scans, reductions = _extract.cache_info().misses, _shrink.cache_info().misses
    notes = compaction(messages)
    return _extract.cache_info().misses - scans, _shrink.cache_info().misses - reductions, notes


def test_a_compressor_in_a_new_process_reads_the_stored_index_instead_of_scanning_again() -> None:
    messages = long_session()
    plain_scans, plain_reductions, plain_notes = scans_during(copy.deepcopy(messages))
    with_index = stored(messages)
    scans, reductions, notes = scans_during(with_index)
    assert plain_reductions >= 20 and plain_scans >= 60, "without an index the whole history is worked through"
    assert reductions == 0, "every large tool output was reduced when it was stored"
    decisions = notes[1]
    assert scans <= len(decisions), "only the decisions the summary model wrote are new text to scan"
    assert notes == plain_notes, "the same notes, pinned identifiers and decisions as without the index"


def test_an_index_that_does_not_match_its_message_is_ignored() -> None:
    messages = long_session(6)
    with_index = stored(messages)
    customer = next(i for i, m in enumerate(with_index) if m["role"] == "user" and "1Z999" in str(m["content"]))
    tool = next(i for i, m in enumerate(with_index) if m["role"] == "tool")
    # Edited after indexing: the stored identifiers no longer describe the text.
    with_index[customer]["content"] = "Please refund order #W9999999 to me."
    with_index[tool][INDEX_KEY]["v"] = "0:older-patterns"
    clear_caches()
    extractor = FactExtractor()
    assert prime_caches(with_index, extractor) == len([m for m in with_index if INDEX_KEY in m]) - 2
    assert extractor.extract("Please refund order #W9999999 to me.") == (("order", "#W9999999"),)
    assert _shrink.cache_info().currsize == 0, "the stale index's reduction was not believed"
    summary, _ = compaction(with_index)
    assert "#W9999999" in summary


index_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["v", "sum", "shrunk", "facts", "calls"]), index_values))
def test_a_malformed_index_never_breaks_a_compaction(garbage: dict[str, Any]) -> None:
    messages = stored(long_session())
    for message in messages:
        if INDEX_KEY in message:
            message[INDEX_KEY] = {**message[INDEX_KEY], **garbage}
    prime_caches(messages, FactExtractor())
    summary, _ = compaction(messages)
    assert "#W2378156" in summary, "the compaction ran and pinned the customer's order"


def test_content_in_parts_gets_no_index() -> None:
    parts = [{"type": "text", "text": "order #W2378156"}]
    assert index_message({"role": "user", "content": parts}, default_extractor()) is None


def realistic_session(turns: int = 120) -> list[ChatMessage]:
    """The benchmark's support session (orders, shipment logs, order tables), as chat messages."""
    messages: list[ChatMessage] = [{"role": "system", "content": "You are the support assistant of Acme Kitchen."}]
    call_id = 0
    for turn in generate_session().turns[:turns]:
        user, rounds, reply = turn_messages(turn, call_id)
        call_id += len(turn.tool_calls)
        messages += [*user, *(m for r in rounds for m in r), reply]  # type: ignore[list-item]
    return messages


def first_turn(messages: list[ChatMessage]) -> tuple[list[ChatMessage], CompressionResult, int, int]:
    """What a new process runs on a loaded context before the first LLM call: aging, the preflight estimate and
    the compaction; with the identifier scans and tool-output reductions it did."""
    clear_caches()
    scans, reductions = _extract.cache_info().misses, _shrink.cache_info().misses
    engine = ContextCompressor(model="main-model", context_length=16_000, summary_llm=FakeSummaryLLM())
    aged = engine.age_tool_results(messages).messages
    assert engine.should_compress_preflight(aged)
    result = engine.compress(list(aged))
    return aged, result, _extract.cache_info().misses - scans, _shrink.cache_info().misses - reductions


def without_index(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    return [{key: value for key, value in message.items() if key != INDEX_KEY} for message in messages]


def test_a_first_turn_ages_and_compacts_from_the_stored_index_exactly_as_without_it() -> None:
    messages = realistic_session()
    plain_aged, plain, plain_scans, plain_reductions = first_turn(json.loads(json.dumps(messages)))
    aged, result, scans, reductions = first_turn(stored(messages))
    stubs = sum(1 for m in aged if m["role"] == "tool" and "aged result of" in str(m["content"]))
    assert stubs >= 20 and plain_reductions >= 20, "old tool output aged, each reduced without an index"
    assert without_index(aged) == plain_aged, "the same stubs"
    assert without_index(result.messages) == without_index(plain.messages)
    assert (result.summary, result.key_decisions) == (plain.summary, plain.key_decisions)
    assert reductions == 0, "aging took every reduced output from the stored index"
    items = len(result.key_decisions) + result.events[0]["decisions"]["rejected"]
    assert scans <= stubs + items < plain_scans, "only the stubs' heads and the notes' items scanned"


def test_a_history_stored_partly_before_indexing_ages_and_compacts_the_same() -> None:
    messages = realistic_session(80)
    rows = stored(messages)
    older = rows[: len(rows) // 2]  # stored before the index existed, or by an extractor with other patterns
    for row in older[::2]:
        row.pop(INDEX_KEY, None)
    for row in older[1::2]:
        if INDEX_KEY in row:
            row[INDEX_KEY]["v"] = "1:older-patterns"
    plain_aged, plain, _, _ = first_turn(json.loads(json.dumps(messages)))
    aged, result, _, reductions = first_turn(rows)
    assert without_index(aged) == plain_aged
    assert (result.summary, result.key_decisions) == (plain.summary, plain.key_decisions)
    assert reductions > 0, "the older rows' tool output was reduced again"
