"""A turn's steps share what the engine already read of its context, and never trust what they did not read."""

from __future__ import annotations

from compression import ContextCompressor
from compression.known_context import KnownContext
from compression.messages import ChatMessage
from compression.tokens import estimate_messages_tokens
from tests.compression.test_aging import tool_turns


def test_a_context_that_goes_on_from_the_known_one_is_estimated_like_a_fresh_one() -> None:
    messages = tool_turns(8).messages
    known = KnownContext()
    assert known.estimate(messages[:20]) == estimate_messages_tokens(messages[:20])
    assert known.estimate(messages) == estimate_messages_tokens(messages)


def test_a_message_replaced_by_another_object_is_read_again() -> None:
    messages = tool_turns(8).messages
    known = KnownContext()
    known.estimate(messages, clean=True)
    changed = [*messages[:5], {**messages[5], "content": "x" * 4_000}, *messages[6:]]
    assert known.clean_prefix(changed) == 0
    assert known.estimate(changed) == estimate_messages_tokens(changed)


def test_only_a_context_read_as_sanitized_counts_as_sanitized() -> None:
    messages = tool_turns(3).messages
    known = KnownContext()
    known.estimate(messages)
    assert known.clean_prefix(messages) == 0
    known.estimate(messages, clean=True)
    assert known.clean_prefix([*messages, {"role": "user", "content": "more"}]) == len(messages)


def test_what_follows_the_aged_context_is_still_sanitized_by_the_compaction() -> None:
    engine = ContextCompressor(model="main", context_length=8_000, max_working_tokens=None)
    aged = engine.age_tool_results(tool_turns(30).messages).messages
    engine.should_compress_preflight(aged)
    broken: ChatMessage = {"role": "user", "content": "order \ud800 please"}
    result = engine.compress([*aged, broken, {"role": "assistant", "content": "On it."}])
    assert all("\ud800" not in str(message.get("content")) for message in result.messages)
    assert result.events[0]["input_repairs"]["repaired"] == 1
