"""Pinned facts: identifiers that must survive every compaction verbatim.

Order numbers, tracking numbers, money amounts with their currency, dates, emails and phone numbers are found with
a configurable set of regular expressions, without any LLM. After the summary model has written its summary, every
identifier from the compacted turns that the summary does not mention is appended under its Critical Context
heading. Because the next compaction extracts facts from the previous summary too, a pinned fact outlives any
number of compactions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"


@dataclass(frozen=True)
class FactPattern:
    """One kind of identifier: ``kind`` is a stable key, ``label`` the heading shown in summaries.

    Three optional hints let the scanner skip text; each must hold for every match of ``regex``, or identifiers are
    missed (``tests/compression`` checks the defaults against a scan without hints):

    - ``first_chars``: the body of a character class that every match starts with, e.g. ``r"\\dA-Z#"``. When every
      pattern has one, the scan only stops at those characters instead of trying each pattern at every position.
      Escape ``-``, ``^``, ``]`` and ``\\`` in it.
    - ``required``: a character that every match contains (``@`` for emails); text without it skips the pattern.
    - ``starts_at_word_edge``: no match begins between two word characters (true of a regex whose every alternative
      starts with ``\\b`` or with a non-word character); with ``first_chars``, the scan then skips the inside of words.
    """

    kind: str
    label: str
    regex: str
    first_chars: str | None = None
    required: str | None = None
    starts_at_word_edge: bool = False

    def __post_init__(self) -> None:
        chars = self.first_chars
        if chars is not None and (not chars or chars.startswith("^") or (chars.endswith("-") and chars[-2:] != "\\-")):
            raise ValueError(f"first_chars of {self.kind!r} must be a non-empty class body with '-' and '^' escaped.")


_WORD_START = r"\dA-Z"
# Order matters: earlier patterns claim their text first, so a tracking number is never also read as a phone.
DEFAULT_FACT_PATTERNS: tuple[FactPattern, ...] = (
    FactPattern(
        "email",
        "Emails",
        r"\b[A-Za-z0-9._%+-]++@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
        first_chars=r"A-Za-z0-9._%+\-",
        required="@",
        starts_at_word_edge=True,
    ),
    FactPattern(
        "tracking",
        "Tracking numbers",
        r"\b1Z[0-9A-Z]{16}\b|\b[A-Z]{2}\d{9}[A-Z]{2}\b|\b\d{20,22}\b|\b\d{12}\b",
        first_chars=_WORD_START,
        starts_at_word_edge=True,
    ),
    FactPattern(
        "order",
        "Order numbers",
        r"#[A-Z]{0,3}-?\d{4,10}\b|\b[A-Z]{1,4}-\d{4,10}\b|\b[A-Z]{1,2}\d{6,10}\b",
        first_chars="#A-Z",
        starts_at_word_edge=True,
    ),
    FactPattern(
        "money",
        "Amounts",
        r"[$€£¥]\s?\d[\d,]*(?:\.\d{1,2})?|\b\d[\d,]*(?:\.\d{1,2})?\s?(?:USD|EUR|GBP|JPY|CAD|AUD|CHF)\b",
        first_chars=r"$€£¥\d",
        starts_at_word_edge=True,
    ),
    FactPattern(
        "date",
        "Dates",
        rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b|\b\d{{1,2}} {_MONTH} \d{{4}}\b",
        first_chars=_WORD_START,
        starts_at_word_edge=True,
    ),
    FactPattern(
        "phone",
        "Phone numbers",
        r"\+\d[\d ().-]{6,16}\d|\(\d{3}\) ?\d{3}-\d{4}\b|\b\d{3}[-.]\d{3}[-.]\d{4}\b",
        first_chars=r"+(\d",
        starts_at_word_edge=True,
    ),
)

# What normalization drops: whitespace (the characters ``\s`` matches, which are those ``str.isspace`` accepts; a
# test checks the list against the running interpreter) and the separators that people type differently. A
# translation table is several times faster than ``re.sub`` on the short values it is used for.
UNICODE_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_NORMALIZE_DROPS = {ord(char): None for char in UNICODE_WHITESPACE + "#,()-."}
_EXTRACT_CACHE_SIZE = 16_384


@lru_cache(maxsize=_EXTRACT_CACHE_SIZE)
def normalize_identifier(value: str) -> str:
    """The form used to decide whether a text already mentions an identifier (cached: identifiers recur)."""
    return value.translate(_NORMALIZE_DROPS).lower()


class PinnedFacts:
    """Identifiers grouped by kind, in first-seen order, without duplicates."""

    def __init__(self, patterns: Sequence[FactPattern]) -> None:
        self._labels = {pattern.kind: pattern.label for pattern in patterns}
        self._values: dict[str, dict[str, str]] = {pattern.kind: {} for pattern in patterns}

    def add(self, kind: str, value: str) -> None:
        bucket = self._values.get(kind)
        if bucket is not None:
            bucket.setdefault(normalize_identifier(value), value)

    def update(self, pairs: Iterable[tuple[str, str]]) -> None:
        for kind, value in pairs:
            self.add(kind, value)

    def values(self) -> list[str]:
        return [value for bucket in self._values.values() for value in bucket.values()]

    def by_kind(self) -> dict[str, list[str]]:
        return {kind: list(bucket.values()) for kind, bucket in self._values.items() if bucket}

    def __len__(self) -> int:
        return sum(len(bucket) for bucket in self._values.values())

    def missing_from(self, text: str) -> PinnedFacts:
        """The facts that ``text`` does not mention (compared in normalized form)."""
        haystack = normalize_identifier(text)
        missing = PinnedFacts([FactPattern(kind, label, "") for kind, label in self._labels.items()])
        for kind, bucket in self._values.items():
            for key, value in bucket.items():
                if key not in haystack:
                    missing.add(kind, value)
        return missing

    def render(self) -> str:
        """One bullet per kind, values verbatim."""
        return "\n".join(f"- {self._labels[kind]}: {', '.join(values)}" for kind, values in self.by_kind().items())


class _Scanner:
    """The compiled forms of one pattern set, shared by every extractor of the process.

    Every pattern is an alternative followed by an empty marker group that names its kind (read back as
    ``lastgroup``; with no group opening an alternative, the engine rejects most alternatives on their first
    character). There is one expression per combination of ``required`` characters present in a text: none and
    all are compiled with the scanner, others on first use. When every pattern of an expression has
    ``first_chars``, it starts with their union and tries the patterns in a lookahead, so the engine skips the
    other characters in its inner loop instead of trying each pattern at each position (three to four times faster
    on tool output). Such an expression reports every position where a pattern matches; matches that start inside
    the previous identifier are dropped, exactly as a plain scan, which resumes after each match, never sees them.
    """

    def __init__(self, patterns: tuple[FactPattern, ...]) -> None:
        self.patterns = patterns
        self.fingerprint = hashlib.blake2b(repr(patterns).encode(), digest_size=8).hexdigest()
        self.kinds = {f"k{index}": pattern.kind for index, pattern in enumerate(patterns)}
        self.required = tuple(dict.fromkeys(p.required for p in patterns if p.required))
        self._variants: dict[frozenset[str], re.Pattern[str]] = {}
        self._without_required = self.variant(frozenset())
        self._with_required = self.variant(frozenset(self.required))

    def variant(self, present: frozenset[str]) -> re.Pattern[str]:
        """The expression for text that contains exactly the ``present`` required characters."""
        regex = self._variants.get(present)
        if regex is None:
            active = [(i, p) for i, p in enumerate(self.patterns) if p.required is None or p.required in present]
            alternation = "|".join(f"(?:{p.regex})(?P<k{i}>)" for i, p in active)
            if active and all(p.first_chars for _, p in active):
                starts = "[" + "".join(str(p.first_chars) for _, p in active) + "]"
                edge = r"(?<!\w\w)" if all(p.starts_at_word_edge for _, p in active) else ""
                alternation = f"{starts}{edge}(?<=(?={alternation}){starts})"
            regex = self._variants[present] = re.compile(alternation or "(?!)")
        return regex

    def regex_for(self, text: str) -> re.Pattern[str]:
        if not self.required:
            return self._without_required
        if len(self.required) == 1:  # the default set: only emails need a character, so skip building a set
            return self._with_required if self.required[0] in text else self._without_required
        return self.variant(frozenset(char for char in self.required if char in text))


@lru_cache(maxsize=16)
def _compiled(patterns: tuple[FactPattern, ...]) -> _Scanner:
    """One scanner per pattern set, compiled once per process."""
    return _Scanner(patterns)


@lru_cache(maxsize=_EXTRACT_CACHE_SIZE)
def _extract(scanner: _Scanner, text: str) -> tuple[tuple[str, str], ...]:
    # Keyed by the scanner, whose hash is cheap, rather than by the pattern dataclasses.
    kinds = scanner.kinds
    found: list[tuple[str, str]] = []
    end = 0
    for match in scanner.regex_for(text).finditer(text):
        start, group = match.start(), match.lastgroup
        if group is None or start < end:
            continue
        end = match.start(group)  # the marker group sits where the identifier ends
        found.append((kinds[group], text[start:end].strip()))
    return tuple(found)


Found = tuple[tuple[str, str], ...]

# Identifiers a host stored with its messages (``compression.message_index``), by scanner and text: read before the
# scan, so a new process does not scan again what an earlier one already did. An entry is kept as stored (a flat
# list) until the text is first extracted: loading a long history then costs one entry per message, and the texts a
# compaction never reads are never parsed. Bounded like the scan cache; the oldest entries go first.
_remembered: dict[tuple[_Scanner, str], Found | list[Any]] = {}


def found_from_flat(value: Any) -> Found | None:
    """(kind, value) pairs stored flat, kind and value after each other, or None when ``value`` is not a list of
    strings of even length."""
    if not isinstance(value, list) or len(value) % 2:
        return None
    if not value:
        return ()
    try:
        "".join(value)  # the cheapest check that every item is a string: join refuses anything else
    except TypeError:
        return None
    return tuple(zip(value[::2], value[1::2], strict=True))


def clear_extraction_cache() -> None:
    """Forget every text seen (the cache holds customer text; call it when a customer's data is erased)."""
    _extract.cache_clear()
    _remembered.clear()
    normalize_identifier.cache_clear()


class FactExtractor:
    """Finds identifiers in text with one combined regular expression.

    The expression is compiled once per process and results are cached per text in one process-wide cache, so a new
    extractor (a new conversation, a restarted engine) starts warm.
    """

    def __init__(self, patterns: Sequence[FactPattern] = DEFAULT_FACT_PATTERNS) -> None:
        if not patterns:
            raise ValueError("FactExtractor needs at least one FactPattern.")
        self.patterns = tuple(patterns)
        self._scanner = _compiled(self.patterns)

    def extract(self, text: str) -> tuple[tuple[str, str], ...]:
        """(kind, value) pairs in order of appearance."""
        if not text:
            return ()
        key = (self._scanner, text)
        remembered = _remembered.get(key)
        if remembered is None:
            return _extract(self._scanner, text)
        if isinstance(remembered, tuple):
            return remembered
        found = found_from_flat(remembered)
        if found is None:  # stored in another shape: not believed
            _remembered.pop(key, None)
            return _extract(self._scanner, text)
        _remembered[key] = found
        return found

    def remember(self, text: str, found: Found | list[Any]) -> None:
        """Take ``found`` as what ``extract(text)`` returns: it was extracted before, by a scanner with this
        ``fingerprint``, and stored with the text (as pairs, or flat as ``found_from_flat`` reads them)."""
        if len(_remembered) >= _EXTRACT_CACHE_SIZE:
            del _remembered[next(iter(_remembered))]
        _remembered[(self._scanner, text)] = found

    @property
    def fingerprint(self) -> str:
        """Identifies what this extractor finds: equal fingerprints, equal results for every text."""
        return self._scanner.fingerprint

    def collect(self, texts: Iterable[str]) -> PinnedFacts:
        facts = self.empty()
        for text in texts:
            facts.update(self.extract(text))
        return facts

    def empty(self) -> PinnedFacts:
        return PinnedFacts(self.patterns)
