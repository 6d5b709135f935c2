"""What a memory is about: the subject of its identifiers, and the topic of a preference.

Identifiers fall in three classes. Customer-level ones (an email address, a phone number, a customer id) name who the
memory is about, which every memory of the customer shares, so they never make two memories the same. Values (an
amount) are what a decision says, not what it is about. Everything else (an order, ticket, RMA or tracking number) is
an object subject: two promises or decisions are one only when they share one.

A preference has no object: its subject is its topic (contact channel, language, delivery days, ...). ``TopicIndex``
embeds the phrases that describe each topic in ``PREFERENCE_TOPICS`` once per embedder and process, and gives a
preference the topic with the phrase it is most similar to, when that similarity reaches ``TOPIC_MIN_SIMILARITY``.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from typing import Any


class IdentifierClass(StrEnum):
    CUSTOMER = "customer"
    VALUE = "value"
    OBJECT = "object"


# Cosine similarity (local MiniLM) at which a preference belongs to a topic, measured on 54 labelled preference pairs
# by `python -m benchmarks.preference_topics --json`: same topic found with precision 1.0 / recall 0.83 (F1 0.91) at
# 0.35; 0.30 has F1 0.91 too but merges a different-topic pair (German text drifts towards "language"), and 0.40
# drops recall to 0.77. Comparing two preferences directly does no better than F1 0.75 at any threshold.
TOPIC_MIN_SIMILARITY = 0.35

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_PHONE_CHARACTERS = re.compile(r"^[+\d\-(). ]+$")
_PHONE_MIN_DIGITS, _PHONE_MAX_DIGITS = 7, 15
_CUSTOMER_ID = re.compile(r"^(?:cus|cust|customer)(?:[_\- ]?id)?[_\-: #]*(?=[a-z_\-]*\d)[a-z0-9_\-]+$", re.IGNORECASE)
_CURRENCY = r"(?:USD|EUR|GBP|JPY|CAD|AUD|CHF)"
_AMOUNT = re.compile(
    rf"^(?:[$€£¥]\s?\d[\d,.]*|\d[\d,.]*\s?(?:[$€£¥]|{_CURRENCY})|{_CURRENCY}\s?\d[\d,.]*)$", re.IGNORECASE
)

# Each topic described by a few phrases, worded as preferences are.
PREFERENCE_TOPICS: dict[str, tuple[str, ...]] = {
    "contact channel": (
        "how to contact the customer: by email, phone call or text message (SMS)",
        "prefers to be reached by email rather than phone",
        "text me, do not call me",
    ),
    "language": (
        "the language to speak or write to the customer in",
        "prefers English, French, German or Spanish",
    ),
    "delivery days": (
        "which days or times parcels should be delivered",
        "prefers weekday or weekend deliveries, mornings or evenings",
    ),
    "delivery place": (
        "where to leave the parcel when nobody is home",
        "leave parcels with a neighbour, at the door or a pickup point",
    ),
    "shipping": (
        "shipping speed, carrier and packaging",
        "prefers express shipping, a particular courier, or plastic-free packaging",
    ),
    "invoices": (
        "how invoices, receipts and bills are sent",
        "send invoices by email, never put the invoice in the box",
    ),
    "payment": (
        "how the customer wants to pay or be refunded",
        "refunds as store credit or to the original card, pay by PayPal",
    ),
    "contact times": (
        "when it is convenient to contact the customer",
        "only call after 6 pm, never on Sundays, mornings are best",
    ),
    "marketing": (
        "newsletters, promotions and marketing messages",
        "no marketing emails, unsubscribe from newsletters, do not share my data",
    ),
}


def classify(identifier: str) -> IdentifierClass:
    value = identifier.strip()
    if _EMAIL.fullmatch(value):
        return IdentifierClass.CUSTOMER
    if _AMOUNT.fullmatch(value):
        return IdentifierClass.VALUE
    if _is_phone(value) or _CUSTOMER_ID.fullmatch(value):
        return IdentifierClass.CUSTOMER
    return IdentifierClass.OBJECT


def _is_phone(value: str) -> bool:
    if value.startswith("#") or not _PHONE_CHARACTERS.fullmatch(value):
        return False
    digits = sum(character.isdigit() for character in value)
    return _PHONE_MIN_DIGITS <= digits <= _PHONE_MAX_DIGITS


def describe(identifier: str) -> str:
    """An identifier as a reason sentence names it: ``order #W1234567``, else as written."""
    return f"order {identifier}" if identifier.startswith("#") else identifier


def normalized(identifier: str) -> str:
    return "".join(identifier.split()).lower()


def object_subjects(identifiers: Iterable[str]) -> frozenset[str]:
    """The orders, tickets, RMAs and parcels the identifiers name."""
    return frozenset(normalized(value) for value in identifiers if classify(value) is IdentifierClass.OBJECT)


def matching_identifiers(identifiers: Iterable[str]) -> frozenset[str]:
    """The identifiers that tell two memories apart: subjects and values, without the customer-level ones."""
    return frozenset(normalized(value) for value in identifiers if classify(value) is not IdentifierClass.CUSTOMER)


def cosine(first: Sequence[float], second: Sequence[float]) -> float:
    dot = sum(a * b for a, b in zip(first, second, strict=False))
    norms = math.sqrt(sum(a * a for a in first)) * math.sqrt(sum(b * b for b in second))
    return dot / norms if norms else 0.0


Embed = Callable[[str], Sequence[float]]


class TopicIndex:
    """The topic descriptions embedded by one embedder; ``topic_of`` gives a preference's topic, or None."""

    def __init__(self, embed: Embed, *, min_similarity: float = TOPIC_MIN_SIMILARITY) -> None:
        self.min_similarity = min_similarity
        self._vectors = {
            topic: [list(embed(phrase)) for phrase in phrases] for topic, phrases in PREFERENCE_TOPICS.items()
        }

    def scores(self, vector: Sequence[float]) -> dict[str, float]:
        """Per topic, the similarity of ``vector`` to the closest of its phrases."""
        return {topic: max(cosine(vector, phrase) for phrase in phrases) for topic, phrases in self._vectors.items()}

    def topic_of(self, vector: Sequence[float]) -> str | None:
        scores = self.scores(vector)
        best = max(scores, key=scores.__getitem__)
        return best if scores[best] >= self.min_similarity else None


_indexes: dict[Any, TopicIndex] = {}
_indexes_lock = threading.Lock()


def topic_index(embedder_key: Any, embed: Embed) -> TopicIndex:
    """The process's ``TopicIndex`` for the embedder that ``embedder_key`` names, built on first use."""
    with _indexes_lock:
        index = _indexes.get(embedder_key)
    if index is None:
        index = TopicIndex(embed)  # outside the lock: embedding may take a while, and a duplicate is harmless
        with _indexes_lock:
            index = _indexes.setdefault(embedder_key, index)
    return index
