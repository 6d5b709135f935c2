"""Promises are told apart by what they are about, and a promise moved in words is a change with its new date."""

from __future__ import annotations

from datetime import date

import pytest

from benchmarks.promise_subjects import measure_promise_subjects
from compression.messages import ChatMessage
from tests.compression.conftest import ConversationBuilder, FakeSummaryLLM
from tests.compression.test_decisions_and_notes import engine, grow, notes_with, turn_number

PHONE = "+1 555 010 1234"


def promise_reply(order: str, due: str) -> str:
    return f"I will ship the replacement for {order} by {due} and text you at {PHONE}."


def promise_item(order: str, due: str, source: int) -> str:
    return f"Ship the replacement for {order}, texting {PHONE} {{due: {due} | ids: {order}, {PHONE} | from: #{source}}}"


@pytest.mark.parametrize("first_dropped", [False, True], ids=["first-carried", "first-dropped"])
def test_two_orders_sharing_a_phone_number_keep_their_own_promises(first_dropped: bool) -> None:
    def summarize(messages: list[ChatMessage]) -> str:
        prompt = str(messages[-1]["content"])
        if "#W1111111 by" in prompt.split("<turns>", 1)[1]:
            return notes_with([promise_item("#W1111111", "2026-12-04", turn_number(prompt, "#W1111111 by"))])
        second = promise_item("#W2222222", "2026-12-05", turn_number(prompt, "#W2222222 by"))
        carried = [] if first_dropped else ["[P1] Ship the replacement for #W1111111 {due: 2026-12-04}"]
        return notes_with([*carried, second])

    compressor = engine(FakeSummaryLLM(default=summarize))
    builder = ConversationBuilder().user(f"Two broken kettles, my phone is {PHONE}.").assistant("Sorry!")
    builder.user("First, #W1111111.").assistant(promise_reply("#W1111111", "2026-12-04"))
    first = compressor.compress(grow(builder.messages, 4).user("?").messages)
    later = grow(first.messages, 500, turns=2).user("And #W2222222?")
    later.assistant(promise_reply("#W2222222", "2026-12-05"))
    second = compressor.compress(grow(later.messages, 600).user("later?").messages)
    (original,) = first.key_decisions
    new = next(d for d in second.key_decisions if "#W2222222" in d.identifiers)
    assert new.key != original.key and new.new and not new.changed and new.change_reason is None
    assert all(d.key != original.key or not d.new for d in second.key_decisions), "the first is not superseded"
    kept = compressor.ledger.known[original.key]
    assert "#W1111111" in kept.identifiers and kept.due_date == date(2026, 12, 4)


def move(
    due_words: str, move_reply: str, *, cite: bool = True, days_later: int = 4
) -> tuple[date | None, date | None, str | None, bool]:
    """A promise made on Friday 2026-11-27 for "by Wednesday" (2026-12-02), then ``move_reply`` ``days_later``:
    the due dates delivered before and after, the change's reason, and whether it was delivered as a change."""

    def summarize(messages: list[ChatMessage]) -> str:
        prompt = str(messages[-1]["content"])
        if "by Wednesday." in prompt.split("<turns>", 1)[1]:
            source = turn_number(prompt, "by Wednesday.")
            return notes_with([f"Deliver #W1111111 {{due: by Wednesday | ids: #W1111111 | from: #{source}}}"])
        cited = f" | from: #{turn_number(prompt, move_reply)}" if cite else ""
        return notes_with([f"[P1] Deliver #W1111111 {{due: {due_words} | ids: #W1111111{cited}}}"])

    compressor = engine(FakeSummaryLLM(default=summarize))
    builder = ConversationBuilder().user("Where is #W1111111?").assistant("Checking.")
    builder.user("When?").assistant("We will deliver #W1111111 by Wednesday.")
    first = compressor.compress(grow(builder.messages, 4).user("?").messages)
    minute = days_later * 24 * 60
    later = grow(first.messages, minute, turns=2).user("Can it come later?").assistant(move_reply)
    (after,) = compressor.compress(grow(later.messages, minute + 10).user("ok").messages).key_decisions
    return first.key_decisions[0].due_date, after.due_date, after.change_reason, after.changed and after.new


def test_a_promise_moved_in_words_is_a_change_with_the_new_date() -> None:
    before, after, reason, changed = move("by monday", "We moved the delivery of #W1111111 to Monday.")
    assert before == date(2026, 12, 2)
    assert changed and after == date(2026, 12, 7), "the Monday after the Tuesday the move was said"
    assert reason == "due date moved from 2026-12-02 to 2026-12-07"


def test_a_promise_moved_to_a_bare_weekday_is_a_change_with_the_new_date() -> None:
    before, after, reason, changed = move("Thursday", "We moved the delivery of #W1111111 to Thursday.")
    assert before == date(2026, 12, 2)
    assert changed and after == date(2026, 12, 3)
    assert reason == "due date moved from 2026-12-02 to 2026-12-03"


def test_due_words_no_turn_of_the_range_said_are_the_promise_as_it_was() -> None:
    """A model that keeps writing the original "by Wednesday" on the next Thursday moves nothing."""
    before, after, reason, changed = move("by Wednesday", "Sure, noted.", cite=False, days_later=6)
    assert before == after == date(2026, 12, 2) and reason is None and not changed


def test_a_long_session_of_orders_sharing_contact_details_has_no_takeover_and_no_lost_move() -> None:
    result = measure_promise_subjects()
    assert result["compactions"] >= 3 and result["moves"] >= 5
    assert result["cross_subject_takeovers"] == 0
    assert result["dropped_moves"] == 0
    assert result["promises_delivered"] == result["promises"]
