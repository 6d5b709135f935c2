"""Dates as people write them ("tomorrow", "in 3 business days", "by Friday", "Wed", "Nov 5") given an absolute date.

Summaries are read days later, so a promise must say *when* in absolute terms. ``absolutize_dates`` keeps the words
and adds the ISO date after them ("Refund by tomorrow (2026-12-02)"); a phrase already followed by a date is left
alone, so rewriting its own output changes nothing. The reference is a calendar date, not a moment: the
``DecisionLedger`` takes the time of the turn that used the words (the turn a promise came from, else the latest
support turn holding its date words, else the latest summarized message) and turns it into the shop's calendar date
with ``local_date``, so "tomorrow" said at 00:30 in Paris is the Paris tomorrow, though it was the day before in UTC.

How each form resolves against the reference date ``today``:

- today, tonight, tomorrow, yesterday, the day after tomorrow; next week (the week of ``today`` + 7 days);
- in / within / after N days or weeks, N business days (Monday to Friday, no holidays);
- a weekday, in full ("Wednesday") or abbreviated ("Wed", "Tues", "Thurs.", any case in full, capitalized when
  abbreviated): the next such day after ``today``, a week ahead when named on that very weekday;
- a month and day without a year ("Nov 5", "5 Nov", "November 5th", "5th of November"): the next such date on or
  after ``today``, so "Nov 5" said on December 1 is next year's; a day the month never has stays words.

Running text keeps ordinary words as words: a lowercase abbreviation ("wed", "sun", "mar") is a word; "Sun" and
"Sat" are dates only after a preposition ("by Sat"), because as words they start sentences; a month needs a day and
a capital ("March", "you may 5" stay words); a weekday after last, past, since, every or each, or in a range such as
"Mon-Fri", names no single coming day. A phrase that is nothing but a date, such as a promise's ``due:`` field, is
read in any case: ``resolve_due("sat", ...)`` is the coming Saturday.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import MAXYEAR, UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Any

_TIMESTAMP_CACHE_SIZE = 8_192
_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "fourteen": 14,
    "a couple of": 2,
    "a few": 3,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_WORDS: dict[str, int] = {
    **{name: index for index, name in enumerate(_WEEKDAYS)},
    **{"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4, "sat": 5, "sun": 6},
}
# Abbreviations that are also everyday words ("the sun", "she sat") and start sentences when capitalized.
_WORD_LIKE_WEEKDAYS = frozenset({"sat", "sun"})
_MONTH_NAMES = (
    *("january", "february", "march", "april", "may", "june", "july"),
    *("august", "september", "october", "november", "december"),
)
_MONTHS = {
    **{name[:3]: index for index, name in enumerate(_MONTH_NAMES, start=1)},
    **{name: index for index, name in enumerate(_MONTH_NAMES, start=1)},
    "sept": 9,
}
# A year holds every month-day but February 29, which comes back within eight years.
_YEARS_TO_NEXT_LEAP_DAY = 8
# "zone is UTC" must hold for every name of UTC, so the fast paths that show stamps in UTC are taken.
_UTC_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"})


def _alternatives(words: Iterable[str]) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_WEEKDAY = _alternatives(_WEEKDAY_WORDS)
_MONTH = _alternatives(_MONTHS)
_ORDINAL = r"(?:st|nd|rd|th)?"
_PREPOSITION = r"(?:next|this|coming|on|by|until|till|before|due)"
_RANGE_WORD = r"(?:-|–|—|/|to |through |thru )"
# What follows a phrase this module already dated, in the current form "(2026-12-02)" or the older "Friday 2026-12-04".
_NOT_DATED = r"(?![.,]? \(?(?:the week of |week of )?\d{4}-\d{2}-\d{2})"
_NOT_IN_PAST_OR_SERIES = "".join(
    f"(?<!{word} )" for word in ("last", "past", "previous", "since", "every", "each", "black", "cyber")
)
_MONTH_DAY = (
    rf"(?P<month_a>{_MONTH})\.? (?P<day_a>\d{{1,2}}){_ORDINAL}\b(?![:.,]?\d)(?!,? \d{{4}})"
    rf"|(?<![\d$€£#:/.,-])(?P<day_b>\d{{1,2}}){_ORDINAL} (?:of )?(?P<month_b>{_MONTH})\b(?![.,]? \d{{4}})"
)
_RELATIVE = re.compile(
    r"\b(?P<within>(?:with)?in|after) (?P<count>\d{1,3}|" + _alternatives(_NUMBER_WORDS) + r") "
    r"(?P<business>business |working )?(?P<unit>days?|weeks?)\b" + _NOT_DATED
    + r"|\b(?P<simple>the day after tomorrow|tomorrow|today|tonight|yesterday|next week)\b" + _NOT_DATED
    + "|" + _NOT_IN_PAST_OR_SERIES + rf"\b(?:(?P<prep>{_PREPOSITION}) )?(?P<weekday>{_WEEKDAY})\b"
    + rf"(?!\.?\s*{_RANGE_WORD}\s*(?:{_WEEKDAY})\b)" + _NOT_DATED
    + rf"|\b(?:{_MONTH_DAY})" + _NOT_DATED,
    re.IGNORECASE,
)  # fmt: skip
# The first day of a weekday range ends just before the second: "Mon-", "Monday through ".
_RANGE_START = re.compile(rf"\b(?:{_WEEKDAY})\.?\s*{_RANGE_WORD}\s*$", re.IGNORECASE)
_RANGE_LOOKBACK_CHARS = 24
# A phrase that is only a date: read whatever its case.
_BARE_MONTH_DAY = rf"(?:{_MONTH})\.? \d{{1,2}}{_ORDINAL}|\d{{1,2}}{_ORDINAL} (?:of )?(?:{_MONTH})"
_BARE_DATE = re.compile(rf"\s*(?:{_PREPOSITION} )?(?:(?:{_WEEKDAY})|{_BARE_MONTH_DAY})\.?\s*", re.IGNORECASE)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_TEXT_DATE = re.compile(
    r"\b(?:(?P<m1>[A-Za-z]{3,9})\.? (?P<d1>\d{1,2})(?:st|nd|rd|th)?,? (?P<y1>\d{4})"
    r"|(?P<d2>\d{1,2}) (?P<m2>[A-Za-z]{3,9})\.? (?P<y2>\d{4}))\b"
)
_SIMPLE_OFFSETS = {
    "today": 0,
    "tonight": 0,
    "tomorrow": 1,
    "yesterday": -1,
    "the day after tomorrow": 2,
    "next week": 7,
}


def parse_timestamp(value: Any) -> datetime | None:
    """An aware datetime from a message's ``created_at`` (datetime or ISO 8601 string); None when unusable."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        return _parse_iso(value)
    return None


@lru_cache(maxsize=_TIMESTAMP_CACHE_SIZE)
def _parse_iso(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def local_date(moment: datetime, zone: tzinfo) -> date:
    """The calendar date ``moment`` falls on in ``zone`` (a moment without a zone is read as UTC)."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(zone).date()


def canonical_zone(zone: tzinfo) -> tzinfo:
    """``zone``, or ``datetime.UTC`` itself when ``zone`` is UTC by another name (``ZoneInfo("UTC")``)."""
    return UTC if zone == UTC or str(zone) in _UTC_NAMES else zone


def _add_business_days(start: date, days: int) -> date:
    current = start
    while days > 0:
        current += timedelta(days=1)
        if current.weekday() < 5:
            days -= 1
    return current


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def _next_month_day(month: int, day: int, today: date) -> date | None:
    for year in range(today.year, min(today.year + _YEARS_TO_NEXT_LEAP_DAY, MAXYEAR) + 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate >= today:
            return candidate
    return None


def _in_weekday_range(match: re.Match[str]) -> bool:
    before = match.string[max(0, match.start() - _RANGE_LOOKBACK_CHARS) : match.start()]
    return _RANGE_START.search(before) is not None


def _weekday_date(match: re.Match[str], today: date, strict: bool) -> date | None:
    word = match.group("weekday")
    name = word.lower()
    if strict and name not in _WEEKDAYS and (word[0].islower() or (name in _WORD_LIKE_WEEKDAYS and not match["prep"])):
        return None
    if _in_weekday_range(match):
        return None
    ahead = (_WEEKDAY_WORDS[name] - today.weekday()) % 7 or 7  # a weekday named on that same weekday means next week's
    return today + timedelta(days=ahead)


def _month_day_date(match: re.Match[str], today: date, strict: bool) -> date | None:
    month = match.group("month_a") or match.group("month_b")
    day = match.group("day_a") or match.group("day_b")
    if strict and month[0].islower():
        return None
    return _next_month_day(_MONTHS[month.lower()], int(day), today)


def _count_date(match: re.Match[str], today: date) -> date:
    count = _count(match.group("count"))
    if match.group("business"):
        return _add_business_days(today, count)
    return today + timedelta(days=count * (7 if match.group("unit").lower().startswith("week") else 1))


def _resolve(match: re.Match[str], today: date, strict: bool) -> str:
    words = match.group(0)
    simple = match.group("simple")
    if simple:
        resolved = today + timedelta(days=_SIMPLE_OFFSETS[simple.lower()])
        return f"{words} (week of {resolved.isoformat()})" if simple.lower() == "next week" else f"{words} ({resolved})"
    if match.group("weekday"):
        found = _weekday_date(match, today, strict)
    elif match.group("count"):
        found = _count_date(match, today)
    else:
        found = _month_day_date(match, today, strict)
    return f"{words} ({found.isoformat()})" if found else words


def _absolutize(text: str, today: date, strict: bool) -> str:
    return _RELATIVE.sub(lambda match: _resolve(match, today, strict), text)


def absolutize_dates(text: str, today: date) -> str:
    """``text`` with the ISO date added after every relative date expression, ``today`` being the reference date."""
    return _absolutize(text, today, strict=True)


def find_date(text: str) -> date | None:
    """The first absolute date written in ``text`` (ISO, "December 2, 2026" or "2 Dec 2026")."""
    found = absolute_dates(text)
    return found[0] if found else None


def absolute_dates(text: str) -> list[date]:
    """Every absolute date written in ``text``, in order of appearance, without repeats."""
    candidates: list[tuple[int, date]] = []
    for match in _ISO_DATE.finditer(text):
        try:
            candidates.append((match.start(), date(int(match[1]), int(match[2]), int(match[3]))))
        except ValueError:
            continue
    for match in _TEXT_DATE.finditer(text):
        month_name = (match.group("m1") or match.group("m2") or "")[:3].lower()
        month = _MONTHS.get(month_name)
        day = match.group("d1") or match.group("d2")
        year = match.group("y1") or match.group("y2")
        if month is None or day is None or year is None:
            continue
        try:
            candidates.append((match.start(), date(int(year), month, int(day))))
        except ValueError:
            continue
    return list(dict.fromkeys(found for _, found in sorted(candidates)))


def resolve_due(phrase: str, reference: date | None) -> date | None:
    """The one date ``phrase`` names: written absolutely, or relative to ``reference``; None when it names none or
    several (a due date is never guessed from a list of dates). A phrase that is only a date ("wed", "by sat",
    "nov 5") is read whatever its case."""
    if reference is not None:
        phrase = _absolutize(phrase, reference, strict=_BARE_DATE.fullmatch(phrase) is None)
    found = absolute_dates(phrase)
    return found[0] if len(found) == 1 else None
