"""The notes can tell the model that the earlier turns are kept in full and can be searched: one sentence of the
host's, in the frame only, so the notes themselves, their lookup and the summary prompt stay as they were."""

from __future__ import annotations

import json

from compression import ContextCompressor
from compression.assembly import NOTES_KEY, SUMMARY_PREFIX, find_notes, frame_summary, insert_notes
from compression.messages import ChatMessage
from tests.compression.conftest import ConversationBuilder, FakeSummaryLLM, order_payload

HINT = "Every earlier turn is kept in full: call look_back to find an exact detail."


def long_session() -> list[ChatMessage]:
    builder = ConversationBuilder().user("Hi, my kettle from order #W2378156 arrived broken.").assistant("Sorry!")
    for index in range(30):
        builder.tools(("get_order", {"number": "#W2378156"}, order_payload("#W2378156", items=6 + index % 3)))
        builder.exchange(index)
    return builder.user("So when will the refund arrive?").messages


def notes_message(messages: list[ChatMessage]) -> ChatMessage:
    found = find_notes(messages)
    assert found is not None, "the notes are found by their key"
    return messages[found[0]]


def test_the_notes_frame_carries_the_hosts_recall_hint_once(fake_llm: FakeSummaryLLM) -> None:
    engine = ContextCompressor(model="main-model", context_length=16_000, summary_llm=fake_llm, recall_hint=HINT)
    messages = long_session()
    for _ in range(3):
        messages = list(engine.compress(messages).messages)
        builder = ConversationBuilder()
        builder.messages = messages
        for index in range(25):
            builder.exchange(index, filler=300)
        builder.user("next question")
    notes = notes_message(messages)
    assert notes["content"].startswith(f"{SUMMARY_PREFIX} {HINT}\n\n")
    assert json.dumps(messages).count("look_back") == 1, "one hint, however often the notes were rewritten"
    assert HINT not in notes[NOTES_KEY]["summary"], "the notes themselves do not hold it"
    assert all(HINT not in fake_llm.prompt(index) for index in range(len(fake_llm.calls)))


def test_without_a_hint_the_frame_is_unchanged(fake_llm: FakeSummaryLLM) -> None:
    engine = ContextCompressor(model="main-model", context_length=16_000, summary_llm=fake_llm)
    result = engine.compress(long_session())
    assert result.summary is not None
    assert notes_message(result.messages)["content"] == frame_summary(result.summary)


def test_notes_rebuilt_with_the_same_hint_equal_the_engines(fake_llm: FakeSummaryLLM) -> None:
    engine = ContextCompressor(model="main-model", context_length=16_000, summary_llm=fake_llm, recall_hint=HINT)
    result = engine.compress(long_session())
    assert result.summary is not None
    written = notes_message(result.messages)
    [rebuilt] = insert_notes([], result.summary, [], written.get("created_at"), recall_hint=HINT)
    assert rebuilt["content"] == written["content"] and rebuilt["role"] == written["role"]
