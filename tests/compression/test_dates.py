"""Dates in words: which words are dates, which stay words, and the calendar day of a moment in the shop's zone."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from compression.dates import absolutize_dates, canonical_zone, local_date, resolve_due

TUESDAY = date(2026, 12, 1)
PARIS = ZoneInfo("Europe/Paris")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Refund by tomorrow.", "Refund by tomorrow (2026-12-02)."),
        ("The courier comes Wednesday.", "The courier comes Wednesday (2026-12-02)."),
        ("The courier comes on Wed.", "The courier comes on Wed (2026-12-02)."),
        ("Call back Thurs. morning", "Call back Thurs (2026-12-03). morning"),
        ("Call back Tues or later", "Call back Tues (2026-12-08) or later"),
        ("Pick-up by Sat.", "Pick-up by Sat (2026-12-05)."),
        ("Store reopens next week.", "Store reopens next week (week of 2026-12-08)."),
        ("Ships Nov 5.", "Ships Nov 5 (2027-11-05)."),
        ("Ships 5 Nov.", "Ships 5 Nov (2027-11-05)."),
        ("Ships November 5th.", "Ships November 5th (2027-11-05)."),
        ("Ships Dec 24.", "Ships Dec 24 (2026-12-24)."),
        ("Ships December 1st.", "Ships December 1st (2026-12-01)."),
    ],
)
def test_a_date_in_words_keeps_its_words_and_gains_its_iso_date(text: str, expected: str) -> None:
    assert absolutize_dates(text, TUESDAY) == expected


@pytest.mark.parametrize(
    "text",
    [
        "They wed in June and the wedding gift broke.",
        "The sun faded the box; she sat on it.",
        "Sun damage on the lid. Sat down with the courier.",
        "You may 5 times ask; the mar on the lid is from March.",
        "Our mon-itor says c'mon, thu is Greek.",
        "Open Mon-Fri, Monday to Friday, Tuesday through Thursday.",
        "He called last Friday, and every Monday since Wednesday.",
        "The Black Friday and Cyber Monday prices.",
        "Shipped November 5, 2026 and 5 Nov 2026.",
        "Mondays and Fridays are busy.",
        "Refund of $5 Nov and order #5 Dec were fine.",
        "Nothing happens on Feb 30.",
    ],
)
def test_ordinary_words_weekday_ranges_and_absolute_dates_stay_as_written(text: str) -> None:
    assert absolutize_dates(text, TUESDAY) == text


@pytest.mark.parametrize(
    ("said_on", "expected"),
    [
        (date(2026, 12, 1), date(2027, 11, 5)),  # the day has passed this year: next year's
        (date(2026, 11, 5), date(2026, 11, 5)),  # said that very day: that day
        (date(2026, 1, 10), date(2026, 11, 5)),
    ],
)
def test_a_month_day_without_a_year_is_the_next_one_on_or_after_the_day_it_was_said(
    said_on: date, expected: date
) -> None:
    assert resolve_due("Nov 5", said_on) == expected


def test_february_29_is_the_next_leap_day() -> None:
    assert resolve_due("Feb 29", date(2026, 3, 1)) == date(2028, 2, 29)
    assert resolve_due("Feb 30", date(2026, 3, 1)) is None


def test_a_weekday_named_on_that_weekday_is_a_week_later() -> None:
    assert resolve_due("Tuesday", TUESDAY) == date(2026, 12, 8)


@pytest.mark.parametrize(
    ("due", "expected"),
    [
        ("Wednesday", date(2026, 12, 2)),
        ("wed", date(2026, 12, 2)),
        ("wed.", date(2026, 12, 2)),
        ("by thurs", date(2026, 12, 3)),
        ("sat", date(2026, 12, 5)),
        ("Sun.", date(2026, 12, 6)),
        ("mon", date(2026, 12, 7)),
        ("Nov 5", date(2027, 11, 5)),
        ("nov. 5", date(2027, 11, 5)),
        ("5th of november", date(2027, 11, 5)),
        ("2026-12-09", date(2026, 12, 9)),
    ],
)
def test_a_due_field_that_is_only_a_date_resolves_in_any_case(due: str, expected: date) -> None:
    assert resolve_due(due, TUESDAY) == expected


def test_a_long_phrase_is_read_as_running_text() -> None:
    assert resolve_due("the sun faded the box, replace it by Friday", TUESDAY) == date(2026, 12, 4)
    assert resolve_due("wed or thu", TUESDAY) is None, "two dates are no due date"


def test_dating_is_idempotent_for_the_current_and_the_older_form() -> None:
    once = absolutize_dates("Refund by tomorrow, call Wed, ship Nov 5, return in 3 business days.", TUESDAY)
    assert once == (
        "Refund by tomorrow (2026-12-02), call Wed (2026-12-02), ship Nov 5 (2027-11-05), "
        "return in 3 business days (2026-12-04)."
    )
    assert absolutize_dates(once, date(2027, 6, 1)) == once
    older = "Call back by Friday 2026-12-04, ship on Wednesday 2026-12-02."
    assert absolutize_dates(older, date(2027, 6, 1)) == older


@pytest.mark.parametrize(
    ("moment", "zone", "expected"),
    [
        (datetime(2026, 11, 30, 23, 30, tzinfo=UTC), PARIS, date(2026, 12, 1)),
        (datetime(2026, 12, 1, 4, 30, tzinfo=UTC), ZoneInfo("America/New_York"), date(2026, 11, 30)),
        (datetime(2026, 3, 29, 22, 30, tzinfo=UTC), PARIS, date(2026, 3, 30)),  # summer time: UTC+2
        (datetime(2026, 10, 25, 22, 30, tzinfo=UTC), PARIS, date(2026, 10, 25)),  # winter time again: UTC+1
        (datetime(2026, 11, 30, 23, 30), PARIS, date(2026, 12, 1)),  # a naive moment is UTC
        (datetime(2026, 12, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))), UTC, date(2026, 11, 30)),
    ],
)
def test_the_reference_date_is_the_calendar_date_of_the_moment_in_the_shop_zone(
    moment: datetime, zone: ZoneInfo, expected: date
) -> None:
    assert local_date(moment, zone) == expected


def test_utc_by_any_name_is_utc_itself() -> None:
    assert canonical_zone(ZoneInfo("UTC")) is UTC
    assert canonical_zone(ZoneInfo("Etc/UTC")) is UTC
    assert canonical_zone(timezone(timedelta(0))) is UTC
    assert canonical_zone(PARIS) is PARIS
