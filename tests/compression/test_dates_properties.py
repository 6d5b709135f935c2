"""Every date form resolves to the day a person in the shop means, around midnight and daylight-saving changes.

The expected day comes from an oracle written here: the shop's offset from the European and US daylight-saving
rules (not from zoneinfo), then a plain walk over calendar days to the first one the words describe.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from compression.dates import absolute_dates, absolutize_dates, local_date
from compression.decisions import DecisionLedger, ReconcileContext
from compression.facts import FactExtractor

ZONES = ("Europe/Paris", "America/New_York", "UTC")
# Changes of the clocks in both zones, and ordinary days, as anchors of the moments tried.
ANCHORS = (
    datetime(2026, 3, 29, 1, 0),  # Paris: 02:00 CET becomes 03:00 CEST
    datetime(2026, 10, 25, 1, 0),  # Paris: 03:00 CEST becomes 02:00 CET
    datetime(2026, 3, 8, 7, 0),  # New York: 02:00 EST becomes 03:00 EDT
    datetime(2026, 11, 1, 6, 0),  # New York: 02:00 EDT becomes 01:00 EST
    datetime(2026, 12, 1, 0, 0),
    datetime(2027, 12, 31, 23, 0),
    datetime(2028, 2, 28, 23, 0),
)
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
WEEKDAY_ABBREVIATIONS = (("Mon",), ("Tue", "Tues"), ("Wed",), ("Thu", "Thurs"), ("Fri",), ("Sat",), ("Sun",))
MONTH_NAMES = (
    *("January", "February", "March", "April", "May", "June", "July"),
    *("August", "September", "October", "November", "December"),
)
ADDED_DATE = re.compile(r" \(\d{4}-\d{2}-\d{2}\)")
LONGEST_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def days_from(start: date, step: int = 1) -> Iterator[date]:
    day = start
    while True:
        day += timedelta(days=step)
        yield day


def sundays(year: int, month: int) -> list[date]:
    first = date(year, month, 1)
    return [day for day in (first + timedelta(days=n) for n in range(31)) if day.month == month and day.weekday() == 6]


def oracle_offset(zone: str, utc: datetime) -> timedelta:
    """The zone's offset from UTC at ``utc`` (naive, in UTC), by the daylight-saving rules in force since 2007."""
    if zone == "Europe/Paris":  # summer time from the last Sunday of March to the last Sunday of October, 01:00 UTC
        start = datetime.combine(sundays(utc.year, 3)[-1], datetime.min.time()) + timedelta(hours=1)
        end = datetime.combine(sundays(utc.year, 10)[-1], datetime.min.time()) + timedelta(hours=1)
        return timedelta(hours=2 if start <= utc < end else 1)
    if zone == "America/New_York":  # from the second Sunday of March, 07:00 UTC, to the first of November, 06:00 UTC
        start = datetime.combine(sundays(utc.year, 3)[1], datetime.min.time()) + timedelta(hours=7)
        end = datetime.combine(sundays(utc.year, 11)[0], datetime.min.time()) + timedelta(hours=6)
        return timedelta(hours=-4 if start <= utc < end else -5)
    return timedelta(0)


def oracle_today(zone: str, moment: datetime) -> date:
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return (utc + oracle_offset(zone, utc)).date()


@dataclass(frozen=True)
class Form:
    """A date in words: as a ``due:`` field, as running text, and the day it means, given the day it was said."""

    due: str
    text: str
    meaning: Callable[[date], date]


def nth(days: Iterator[date], count: int) -> date:
    for _ in range(count - 1):
        next(days)
    return next(days)


def first(days: Iterator[date], wanted: Callable[[date], bool]) -> date:
    return next(day for day in days if wanted(day))


def business_day(days: Iterator[date], count: int) -> date:
    return nth((day for day in days if day.weekday() < 5), count)


def ordinal(day: int) -> str:
    suffix = "th" if 10 < day % 100 < 14 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def relative_words() -> st.SearchStrategy[Form]:
    meanings: dict[str, Callable[[date], date]] = {
        "today": lambda today: today,
        "tonight": lambda today: today,
        "tomorrow": lambda today: nth(days_from(today), 1),
        "the day after tomorrow": lambda today: nth(days_from(today), 2),
        "yesterday": lambda today: nth(days_from(today, -1), 1),
    }
    return st.sampled_from(sorted(meanings)).map(lambda words: Form(words, f"by {words}", meanings[words]))


def counted_days() -> st.SearchStrategy[Form]:
    def form(count: int, unit: str) -> Form:
        words = f"in {count} {unit[:-1] if count == 1 else unit}"
        if unit == "business days":
            return Form(words, words, lambda today: business_day(days_from(today), count))
        days = count * 7 if unit == "weeks" else count
        return Form(words, words, lambda today: nth(days_from(today), days))

    return st.builds(form, st.integers(1, 40), st.sampled_from(["days", "business days", "weeks"]))


def weekdays() -> st.SearchStrategy[Form]:
    def form(weekday: int, spelling: str, due_case: Callable[[str], str], dot: str) -> Form:
        def meaning(today: date) -> date:
            return first(days_from(today), lambda day: day.weekday() == weekday)

        return Form(f"{due_case(spelling)}{dot}", f"by {spelling}{dot}", meaning)

    def spellings(weekday: int) -> st.SearchStrategy[Form]:
        names = (WEEKDAY_NAMES[weekday], *WEEKDAY_ABBREVIATIONS[weekday])
        cases = st.sampled_from([str, str.lower, str.upper])
        return st.builds(form, st.just(weekday), st.sampled_from(names), cases, st.sampled_from(["", "."]))

    return st.integers(0, 6).flatmap(spellings)


def month_days() -> st.SearchStrategy[Form]:
    def form(month: int, day: int, layout: str) -> Form:
        name = MONTH_NAMES[month - 1]
        words = layout.format(month=name, mon=name[:3], day=day, nth=ordinal(day))

        def meaning(today: date) -> date:
            return first(days_from(today - timedelta(days=1)), lambda found: (found.month, found.day) == (month, day))

        return Form(words.lower(), words, meaning)

    layouts = st.sampled_from(["{mon} {day}", "{mon}. {day}", "{day} {mon}", "{month} {nth}", "{nth} of {month}"])
    return st.integers(1, 12).flatmap(
        lambda month: st.builds(form, st.just(month), st.integers(1, LONGEST_MONTH[month - 1]), layouts)
    )


def iso_dates() -> st.SearchStrategy[Form]:
    return st.dates(date(2026, 1, 1), date(2029, 12, 31)).map(
        lambda day: Form(day.isoformat(), f"on {day.isoformat()}", lambda _: day)
    )


FORMS = st.one_of(relative_words(), counted_days(), weekdays(), month_days(), iso_dates())
MOMENTS = st.builds(
    lambda anchor, minutes: (anchor + timedelta(minutes=minutes)).replace(tzinfo=UTC),
    st.sampled_from(ANCHORS),
    st.integers(-36 * 60, 36 * 60),
)


def promised_due_date(form: Form, zone: str, moment: datetime) -> date | None:
    """The due date the ledger gives a promise with ``{due: <form>}``, said by support at ``moment``."""
    ledger = DecisionLedger(FactExtractor(), ZoneInfo(zone))
    notes = f"## Promises & Commitments\n- Send the update on RMA-1 {{due: {form.due} | from: #1}}\n"
    turn = {"role": "assistant", "content": f"I'll send the update {form.text}.", "created_at": moment.isoformat()}
    _, decisions = ledger.reconcile(notes, ReconcileContext([turn], 1, (1, 1), None))
    (promise,) = decisions
    return promise.due_date


@settings(max_examples=600, deadline=None)
@given(FORMS, st.sampled_from(ZONES), MOMENTS)
def test_a_due_field_in_any_form_is_the_day_the_shop_means(form: Form, zone: str, moment: datetime) -> None:
    said_on = oracle_today(zone, moment)
    assert local_date(moment, ZoneInfo(zone)) == said_on
    assert promised_due_date(form, zone, moment) == form.meaning(said_on)


@settings(max_examples=600, deadline=None)
@given(FORMS, st.sampled_from(ZONES), MOMENTS, st.dates(date(2026, 1, 1), date(2030, 1, 1)))
def test_running_text_keeps_its_words_and_gains_the_one_date_they_mean(
    form: Form, zone: str, moment: datetime, later: date
) -> None:
    said_on = oracle_today(zone, moment)
    text = f"Support will send the update {form.text}."
    dated = absolutize_dates(text, local_date(moment, ZoneInfo(zone)))
    assert ADDED_DATE.sub("", dated) == text, "the words stay as written; only their date is added"
    assert absolute_dates(dated) == [form.meaning(said_on)]
    assert absolutize_dates(dated, later) == dated, "dating its own output again changes nothing"
