"""Relative dates ("tomorrow", "in 3 business days", "by Friday") turned into absolute ISO dates.

Summaries are read days later, so a promise must say *when* in absolute terms. The reference date is the time of
the latest summarized message.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

_TIMESTAMP_CACHE_SIZE = 8_192
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
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
_MONTHS = {
    name: index
    for index, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1
    )
}

_COUNT = r"(\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")"
_RELATIVE = re.compile(
    r"\b(?P<within>(?:with)?in|after) " + _COUNT + r" (?P<business>business |working )?(?P<unit>days?|weeks?)\b"
    r"|\b(?P<simple>the day after tomorrow|tomorrow|today|tonight|yesterday|next week)\b"
    r"|\b(?P<prep>next|this|on|by|until|coming) (?P<weekday>" + "|".join(_WEEKDAYS) + r")\b(?! \d{4}-\d{2}-\d{2})",
    re.IGNORECASE,
)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_TEXT_DATE = re.compile(
    r"\b(?:(?P<m1>[A-Za-z]{3,9})\.? (?P<d1>\d{1,2})(?:st|nd|rd|th)?,? (?P<y1>\d{4})"
    r"|(?P<d2>\d{1,2}) (?P<m2>[A-Za-z]{3,9})\.? (?P<y2>\d{4}))\b"
)


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


def _add_business_days(start: date, days: int) -> date:
    current = start
    while days > 0:
        current += timedelta(days=1)
        if current.weekday() < 5:
            days -= 1
    return current


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def _resolve(match: re.Match[str], today: date) -> str:
    simple = match.group("simple")
    if simple:
        offsets = {
            "today": 0,
            "tonight": 0,
            "tomorrow": 1,
            "yesterday": -1,
            "the day after tomorrow": 2,
            "next week": 7,
        }
        resolved = today + timedelta(days=offsets[simple.lower()])
        return f"the week of {resolved.isoformat()}" if simple.lower() == "next week" else resolved.isoformat()
    weekday = match.group("weekday")
    if weekday:
        prep = match.group("prep")
        target = _WEEKDAYS.index(weekday.lower())
        ahead = (target - today.weekday()) % 7 or 7  # a weekday named on that same weekday means next week's
        resolved = today + timedelta(days=ahead)
        keep = "" if prep.lower() in ("next", "this", "coming") else f"{prep} "
        return f"{keep}{weekday} {resolved.isoformat()}"
    count = _count(match.group(2))
    unit = match.group("unit").lower()
    if match.group("business"):
        resolved = _add_business_days(today, count)
    else:
        resolved = today + timedelta(days=count * (7 if unit.startswith("week") else 1))
    word = "by" if match.group("within").lower() in ("within", "in") else "after"
    return f"{word} {resolved.isoformat()}"


def absolutize_dates(text: str, today: date) -> str:
    """``text`` with every relative date expression replaced by an absolute ISO date."""
    return _RELATIVE.sub(lambda match: _resolve(match, today), text)


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
    several (a due date is never guessed from a list of dates)."""
    text = absolutize_dates(phrase, reference) if reference is not None else phrase
    found = absolute_dates(text)
    return found[0] if len(found) == 1 else None
