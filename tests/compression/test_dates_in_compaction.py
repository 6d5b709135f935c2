"""A compaction dates promises on the shop's calendar and shows the summary model the shop's clock."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import pytest

from compression import ContextCompressor
from compression.messages import ChatMessage
from compression.summarizer import SummaryRequest
from compression.types import CompressionResult, KeyDecision
from tests.compression.conftest import BASE_TIME, ConversationBuilder, FakeSummaryLLM

PARIS = ZoneInfo("Europe/Paris")
PROMISE_WORDS = "I'll email the return label"


def notes_with_promise(item: str) -> str:
    return (
        "## Customer Goal\n- Return a kettle.\n## Key Decisions\n- None\n"
        f"## Promises & Commitments\n- {item}\n## Customer Preferences\n- None\n## Critical Context\n- None\n"
    )


def source_turn(prompt: str) -> int:
    """The #N of the turn in the summary prompt that holds the promise."""
    turns = prompt.split("<turns>")[1]
    return int(re.findall(r"^\[#(\d+) ", turns[: turns.index(PROMISE_WORDS)], re.MULTILINE)[-1])


def conversation_with_promise_at(said_at: datetime, when: str) -> list[ChatMessage]:
    """A support conversation whose promise turn is stamped ``said_at``, long enough to be compacted."""
    builder = ConversationBuilder().user("Kettle #W2378156 is broken").assistant("Sorry to hear that.")
    builder.minute = int((said_at - BASE_TIME).total_seconds() // 60) - 2
    builder.user("Can I send it back?").assistant(f"{PROMISE_WORDS} {when}.")
    for index in range(25):
        builder.exchange(index, filler=400)
    return builder.user("thanks").messages


def compact(said_at: datetime, zone: tzinfo, when: str, item: str) -> tuple[CompressionResult, FakeSummaryLLM]:
    """Compact the conversation with a summary model that writes ``item`` (``{source}``: the promise's turn)."""

    def summarize(messages: list[ChatMessage]) -> str:
        return notes_with_promise(item.format(source=source_turn(str(messages[-1]["content"]))))

    llm = FakeSummaryLLM(default=summarize)
    engine = ContextCompressor(model="main-model", context_length=16_000, summary_llm=llm, timezone=zone)
    return engine.compress(conversation_with_promise_at(said_at, when)), llm


def the_promise(result: CompressionResult) -> KeyDecision:
    (promise,) = [decision for decision in result.key_decisions if decision.kind == "promise"]
    return promise


LABEL_TOMORROW = "Email the return label by tomorrow {{due: tomorrow | ids: #W2378156 | from: #{source}}}"


def test_tomorrow_said_half_past_midnight_in_paris_is_the_paris_calendar_tomorrow() -> None:
    said_at = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)  # 00:30 on Tuesday 1 December in Paris
    paris, _ = compact(said_at, PARIS, "by tomorrow", LABEL_TOMORROW)
    utc, _ = compact(said_at, UTC, "by tomorrow", LABEL_TOMORROW)
    assert the_promise(paris).due_date == date(2026, 12, 2)
    assert the_promise(paris).text == "Email the return label by tomorrow (2026-12-02)"
    assert "Email the return label by tomorrow (2026-12-02)" in (paris.summary or "")
    assert the_promise(utc).due_date == date(2026, 12, 1), "a UTC shop was still on Monday 30 November"


@pytest.mark.parametrize(
    ("said_at", "expected"),
    [
        # 00:30 on 30 March in Paris, the first night of summer time (UTC+2): one hour of UTC+1 would say 29 March.
        (datetime(2026, 3, 29, 22, 30, tzinfo=UTC), date(2026, 3, 31)),
        # 00:30 on 25 October in Paris, hours before summer time ends; one hour later it is still 24 October in UTC.
        (datetime(2026, 10, 24, 22, 30, tzinfo=UTC), date(2026, 10, 26)),
        # 00:30 on 26 October in Paris, the first night of winter time again (UTC+1).
        (datetime(2026, 10, 25, 23, 30, tzinfo=UTC), date(2026, 10, 27)),
    ],
)
def test_tomorrow_across_a_daylight_saving_change_is_the_paris_calendar_tomorrow(
    said_at: datetime, expected: date
) -> None:
    result, _ = compact(said_at, PARIS, "by tomorrow", LABEL_TOMORROW)
    assert the_promise(result).due_date == expected


@pytest.mark.parametrize(
    ("due", "expected"),
    [
        ("Wednesday", date(2026, 12, 2)),
        ("wed", date(2026, 12, 2)),
        ("Wed.", date(2026, 12, 2)),
        ("Nov 5", date(2027, 11, 5)),
        ("5 Nov", date(2027, 11, 5)),
        ("sat", date(2026, 12, 5)),
    ],
)
def test_a_due_field_with_a_bare_weekday_or_month_day_gives_the_promise_its_date(due: str, expected: date) -> None:
    said_at = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # a Tuesday
    item = f"Email the return label {{{{due: {due} | ids: #W2378156 | from: #{{source}}}}}}"
    result, _ = compact(said_at, PARIS, f"by {due}", item)
    assert the_promise(result).due_date == expected


def test_the_summary_prompt_shows_the_shop_clock_and_utc_for_a_utc_shop() -> None:
    said_at = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)
    _, paris = compact(said_at, PARIS, "by tomorrow", LABEL_TOMORROW)
    _, utc = compact(said_at, ZoneInfo("UTC"), "by tomorrow", LABEL_TOMORROW)
    assert re.search(r"support at 2026-12-01 00:30 Europe/Paris\]\n" + PROMISE_WORDS, paris.prompt(0))
    assert re.search(r"written as of 2026-12-01 \d\d:\d\d Europe/Paris\.", paris.prompt(0))
    assert re.search(r"support at 2026-11-30 23:30 UTC\]\n" + PROMISE_WORDS, utc.prompt(0))
    assert "Europe/Paris" not in utc.prompt(0)


def test_the_time_the_notes_are_written_as_of_is_converted_to_the_shop_zone() -> None:
    as_of = datetime(2026, 12, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))
    for zone, shown in ((UTC, "2026-11-30 23:30 UTC"), (PARIS, "2026-12-01 00:30 Europe/Paris")):
        request = SummaryRequest(None, "", "(none)", None, as_of, max_tokens=500, timezone=zone)
        assert f"written as of {shown}." in str(request.build("", None)[-1]["content"])
