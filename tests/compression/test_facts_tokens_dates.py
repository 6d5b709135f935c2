"""Deterministic helpers: identifier extraction, token estimates and absolute dates."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compression.dates import absolutize_dates, find_date, parse_timestamp
from compression.facts import FactExtractor, FactPattern
from compression.sections import parse_sections
from compression.summarizer import _format_stamp, _stamp_text
from compression.tokens import count_text_tokens, estimate_message_tokens, estimate_text_tokens

TEXT = (
    "Order #W2378156 (also W1234567) ships with 1Z999AA10123456784 or LX123456789DE. Refund $42.10, "
    "or 19.99 EUR, by 2026-12-02 / December 4, 2026. Mail jane.doe@example.com, call +1 (555) 010-1234."
)


def test_identifiers_are_extracted_by_kind() -> None:
    facts = FactExtractor().collect([TEXT]).by_kind()
    assert facts["order"] == ["#W2378156", "W1234567"]
    assert facts["tracking"] == ["1Z999AA10123456784", "LX123456789DE"]
    assert facts["money"] == ["$42.10", "19.99 EUR"]
    assert facts["date"] == ["2026-12-02", "December 4, 2026"]
    assert facts["email"] == ["jane.doe@example.com"]
    assert facts["phone"] == ["+1 (555) 010-1234"]


def test_missing_facts_compare_in_normalized_form() -> None:
    facts = FactExtractor().collect([TEXT])
    missing = facts.missing_from("Order W2378156, tracking 1z999aa10123456784, refund $42.10").values()
    assert "#W2378156" not in missing and "1Z999AA10123456784" not in missing and "$42.10" not in missing
    assert "W1234567" in missing and "jane.doe@example.com" in missing


def test_fact_patterns_are_configurable() -> None:
    extractor = FactExtractor([FactPattern("ticket", "Tickets", r"\bTCK-\d{5}\b")])
    assert extractor.collect(["see TCK-12345 and #W2378156"]).by_kind() == {"ticket": ["TCK-12345"]}


def test_extraction_stays_linear_on_long_runs_without_identifiers() -> None:
    assert FactExtractor().extract("x" * 200_000 + " a@b.co") == (("email", "a@b.co"),)


def test_token_estimate_is_cjk_aware() -> None:
    english = "The refund for your order has been approved."
    chinese = "您的订单退款已经批准了，请注意查收。"
    assert estimate_text_tokens(english) == -(-len(english) // 4)
    assert estimate_text_tokens(chinese) >= len(chinese) - 2  # about one token per CJK character
    assert estimate_text_tokens("注文番号 #W2378156 の返金") > estimate_text_tokens("order #W2378156 refund")
    assert estimate_text_tokens("") == 0


def test_message_estimate_counts_tool_calls_and_tolerates_odd_content() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "track", "arguments": '{"n": "1Z999"}'}}
    assert estimate_message_tokens({"role": "assistant", "content": None, "tool_calls": [call]}) > 8
    assert estimate_message_tokens({"role": "user", "content": [{"type": "text", "text": "hello"}]}) == 4 + 2
    assert estimate_message_tokens({"role": "weird"}) == 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Email the label tomorrow.", "Email the label tomorrow (2026-11-28)."),
        ("Refund within 3 business days.", "Refund within 3 business days (2026-12-02)."),
        ("Call back by Friday.", "Call back by Friday (2026-12-04)."),
        ("Replacement ships in two weeks.", "Replacement ships in two weeks (2026-12-11)."),
        ("Decided today.", "Decided today (2026-11-27)."),
        ("Already due 2026-12-01.", "Already due 2026-12-01."),
    ],
)
def test_relative_dates_keep_their_words_and_get_the_absolute_date(text: str, expected: str) -> None:
    assert absolutize_dates(text, date(2026, 11, 27)) == expected  # a Friday


def test_find_date_reads_iso_and_written_dates() -> None:
    assert find_date("by December 2, 2026") == date(2026, 12, 2)
    assert find_date("on 3 Jan 2027, not 2027-02-30") == date(2027, 1, 3)
    assert find_date("no date here") is None


def test_sections_parse_tolerates_heading_styles_and_placeholders() -> None:
    text = "**Key Decisions:**\n1. Refund approved\n   for the kettle\nPROMISES & COMMITMENTS\n- None\n## Other\n- x"
    sections = parse_sections(text)
    assert sections["Key Decisions"] == ["Refund approved for the kettle"]
    assert sections["Promises & Commitments"] == []


def test_patterns_compile_once_per_process_and_a_new_extractor_starts_warm() -> None:
    from compression.facts import _compiled, _extract

    text = "Order #W7654321 shipped with 1Z999AA10123456784."
    FactExtractor().extract(text)
    compiled, hits = _compiled.cache_info().currsize, _extract.cache_info().hits
    assert FactExtractor().extract(text) == (("order", "#W7654321"), ("tracking", "1Z999AA10123456784"))
    assert _compiled.cache_info().currsize == compiled, "no new compilation for a new extractor"
    assert _extract.cache_info().hits == hits + 1, "the second extractor found the first one's result"


def test_relative_date_rewriting_is_idempotent() -> None:
    once = absolutize_dates("Call back by Friday, ship on Wednesday, refund in 3 days.", date(2026, 11, 2))
    assert once == "Call back by Friday (2026-11-06), ship on Wednesday (2026-11-04), refund in 3 days (2026-11-05)."
    assert absolutize_dates(once, date(2026, 11, 20)) == once


def test_clear_caches_forgets_customer_text_held_process_wide() -> None:
    from compression import clear_caches
    from compression.facts import _extract
    from compression.pruning import _keeps_key, _shrink, shrink_tool_output
    from compression.tokens import _estimate_other_text_tokens

    FactExtractor().extract("Call jane.doe@example.com about #W2378156")
    estimate_text_tokens("Zoë Müller, 顧客 #W2378156")
    shrink_tool_output("jane.doe@example.com " * 100)
    shrink_tool_output('{"jane.doe@example.com": {"order_id": "#W2378156"}, "pad": "' + "x" * 1_300 + '"}')
    assert _keeps_key.cache_info().currsize > 0
    clear_caches()
    assert _extract.cache_info().currsize == 0 and _shrink.cache_info().currsize == 0
    assert _keeps_key.cache_info().currsize == 0, "JSON keys can be customer data too"
    assert _estimate_other_text_tokens.cache_info().currsize == 0


@settings(max_examples=400, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=5))]),
    ),
    st.sampled_from(["T", " "]),
    st.sampled_from(["seconds", "minutes", "microseconds", "milliseconds"]),
    st.sampled_from(["+00:00", "Z"]),
)
def test_a_stored_stamp_is_shown_as_its_moment_in_utc(
    moment: datetime, separator: str, timespec: str, utc_suffix: str
) -> None:
    stored = moment.isoformat(separator, timespec).replace("+00:00", utc_suffix)
    assert _stamp_text(stored) == _format_stamp(parse_timestamp(stored))


@pytest.mark.parametrize(
    "stored",
    [
        "2026-11-02T09:08:00+01:00",
        "2026-11-02T23:30:00-05:00",
        "2026-11-02T09:08+00:00",
        "20261102T090800Z",
        "2026-11-02T09:08-0530",
        "2026-11-02T09:08+05",
        "2026-11-02T09:08:00.5+0530",
        "2026-11-02T09:08:00,5Z",
    ],
)
def test_other_stamps_are_shown_in_utc(stored: str) -> None:
    assert _stamp_text(stored) == _format_stamp(parse_timestamp(stored))


def test_an_unreadable_stamp_is_left_out() -> None:
    assert _stamp_text("2026-13-45T99:99:00+00:00") == ""


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_the_estimate_of_a_text_is_its_count_whether_ascii_or_not(text: str) -> None:
    assert estimate_text_tokens(text) == count_text_tokens(text)


@settings(max_examples=400, deadline=None)
@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.sampled_from(["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S,%f"]),
    st.sampled_from(["", "Z", "+00:00", "+0000", "+00", "-05:30", "-0530", "+05", "+01:00", "+0100"]),
)
def test_a_stamp_in_any_iso_layout_is_shown_as_its_moment_in_utc(moment: datetime, layout: str, zone: str) -> None:
    stored = moment.strftime(layout) + zone
    assert _stamp_text(stored) == _format_stamp(parse_timestamp(stored))
