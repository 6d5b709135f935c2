"""The shortcuts that make identifier extraction and token estimates fast change no result."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compression.facts import (
    DEFAULT_FACT_PATTERNS,
    UNICODE_WHITESPACE,
    FactExtractor,
    FactPattern,
    _compiled,
    normalize_identifier,
)
from compression.pruning import _LOG_LEVEL, LOG_LEVELS
from compression.summarizer import chunk_turns
from compression.tokens import count_text_tokens, estimate_text_tokens, texts_fit

# Pieces that make identifiers, near-identifiers and their edges likely in random text.
PIECES = st.sampled_from(
    [
        *'0123456789ABCDWXZabcxyz#$€£¥+()-.,:@_%/ \n\t"{}',
        "1Z",
        "123456",
        "4567",
        "99",
        "LX",
        "Sept",
        "Dec ",
        "Jan",
        "USD",
        " EUR",
        "2026-",
        "#W",
        "@example.com",
        ".co",
        "(555) ",
        "555",
        "010-",
        "1234",
        "+1 ",
        "4 ",
        "١٢",
        "２０",
        "订单",
        "é",
        "…",
    ]
)
HINTLESS_PATTERNS = tuple(
    dataclasses.replace(pattern, first_chars=None, required=None, starts_at_word_edge=False)
    for pattern in DEFAULT_FACT_PATTERNS
)


@settings(max_examples=3_000, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join))
def test_scan_hints_find_exactly_what_a_plain_scan_finds(text: str) -> None:
    assert FactExtractor().extract(text) == FactExtractor(HINTLESS_PATTERNS).extract(text)


# One sample of every alternative of every default pattern.
SAMPLES = [
    "jane.doe@example.com",
    "1Z999AA10123456784",
    "LX123456789DE",
    "12345678901234567890",
    "123456789012",
    "#W2378156",
    "ORD-123456",
    "W1234567",
    "$42.10",
    "19.99 EUR",
    "2026-12-02",
    "December 4th, 2026",
    "4 Dec 2026",
    "+1 (555) 010-1234",
    "(555) 010-1234",
    "555.010.1234",
]


@pytest.mark.parametrize("sample", SAMPLES)
@pytest.mark.parametrize("before", ["", " ", "x", "7", "#", "(", "订单", "\n"])
def test_every_kind_of_identifier_is_found_with_and_without_hints(sample: str, before: str) -> None:
    text = f"{before}{sample}, then {sample}."
    assert FactExtractor().extract(text) == FactExtractor(HINTLESS_PATTERNS).extract(text)


def test_every_sample_is_an_identifier() -> None:
    assert all(FactExtractor().extract(f"see {sample} ") for sample in SAMPLES)


def test_hinted_scan_keeps_first_pattern_priority_and_skips_overlaps() -> None:
    text = "Track 1Z999AA10123456784, order #W2378156/W1234567, mail a.b@shop.example.com, $1,250.00 by 2026-12-02."
    hinted, plain = FactExtractor().extract(text), FactExtractor(HINTLESS_PATTERNS).extract(text)
    assert hinted == plain
    assert [kind for kind, _ in hinted] == ["tracking", "order", "order", "email", "money", "date"]


def test_text_without_the_required_character_uses_the_expression_without_that_pattern() -> None:
    scanner = _compiled(DEFAULT_FACT_PATTERNS)
    assert "@" not in scanner.regex_for("order #W2378156").pattern.split("(?P<k1>)")[0][:80]
    assert scanner.regex_for("order #W2378156") is not scanner.regex_for("jane@example.com")
    assert FactExtractor().extract("jane@example.com") == (("email", "jane@example.com"),)


@pytest.mark.parametrize("chars", ["", "^0-9", "A-"])
def test_first_chars_that_would_change_their_meaning_when_joined_are_refused(chars: str) -> None:
    with pytest.raises(ValueError, match="first_chars"):
        FactPattern("x", "X", r"\d+", first_chars=chars)


def test_patterns_without_hints_still_scan_everything() -> None:
    extractor = FactExtractor([FactPattern("ticket", "Tickets", r"(?<=ticket )\w+")])
    assert extractor.extract("ticket abc and ticket XYZ") == (("ticket", "abc"), ("ticket", "XYZ"))


PLAIN_LOG_LEVEL = re.compile(rf"\b({'|'.join(LOG_LEVELS)})\b")
LOG_PIECES = st.sampled_from([*LOG_LEVELS, "ARNING", "NFO", "x", "_", " ", "-", ":", "1", "é", "Z"])


@settings(max_examples=2_000, deadline=None)
@given(st.lists(LOG_PIECES, max_size=12).map("".join))
def test_log_level_search_finds_the_first_whole_word_level(line: str) -> None:
    fast, plain = _LOG_LEVEL.search(line), PLAIN_LOG_LEVEL.search(line)
    assert (fast and (fast.start(1), fast.group(1))) == (plain and (plain.start(1), plain.group(1)))


_CJK = re.compile(
    "[\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"
)


def _estimate_char_by_char(text: str) -> int:
    ascii_chars = sum(1 for char in text if ord(char) < 128)
    cjk_chars = sum(1 for char in text if ord(char) >= 128 and _CJK.match(char))
    other = len(text) - ascii_chars - cjk_chars
    return -(-ascii_chars // 4) + cjk_chars + -(-other // 2)


@settings(max_examples=2_000, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x30000, exclude_categories=()), max_size=60))
def test_token_estimate_counts_every_character_class_including_lone_surrogates(text: str) -> None:
    assert estimate_text_tokens(text) == _estimate_char_by_char(text)


TEXTS = st.lists(st.text(alphabet=st.characters(max_codepoint=0x30000, exclude_categories=()), max_size=30), max_size=8)


@settings(max_examples=1_000, deadline=None)
@given(TEXTS, st.integers(0, 120), st.integers(0, 2))
def test_texts_fit_never_says_yes_when_the_estimates_exceed_the_budget(
    texts: list[str], budget: int, each: int
) -> None:
    if texts_fit(texts, budget, per_text_tokens=each):
        assert sum(count_text_tokens(text) + each for text in texts) <= budget


@settings(max_examples=500, deadline=None)
@given(TEXTS, st.integers(1, 60))
def test_turns_that_fit_in_one_request_are_chunked_as_one_by_one_counting_would(
    texts: list[str], capacity: int
) -> None:
    chunks = chunk_turns(texts, capacity)
    spent, expected = 0, [[]]  # the per-turn rule, written out
    for text in texts:
        cost = count_text_tokens(text) + 1
        if cost > capacity or (spent + cost > capacity and expected[-1]):
            return  # cut or split: the one-by-one path runs, covered by the chunking tests
        expected[-1].append(text)
        spent += cost
    assert chunks == expected


def test_identifier_normalization_drops_exactly_the_whitespace_a_regular_expression_would() -> None:
    whitespace = "".join(char for char in map(chr, range(0x110000)) if re.fullmatch(r"\s", char))
    assert sorted(UNICODE_WHITESPACE) == sorted(whitespace)
    value = "#W 2378\u3000156-(A).b,C\u2028"
    assert normalize_identifier(value) == re.sub(r"[\s#,()\-.]", "", value).lower() == "w2378156abc"
