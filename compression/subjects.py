"""What a key decision is about: its subjects, as opposed to whom it is for and how much it is worth.

The ``FactExtractor`` gives every identifier a kind. A *subject* is an order, ticket, RMA, tracking or other object
identifier (the ``order`` and ``tracking`` kinds); emails and phone numbers name the customer, whom every item of a
conversation shares, so they never make two items the same; amounts are values an item states and may change, not
what it is about. ``DecisionLedger`` matches items by subject, and ``compression.provenance`` checks subjects and
amounts against the turn an item cites; both are computed per item, on demand, from its text and ``ids`` field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from compression.facts import FactExtractor, normalize_identifier

SUBJECT_KINDS = frozenset({"order", "tracking"})
VALUE_KINDS = frozenset({"money"})
CUSTOMER_KINDS = frozenset({"email", "phone"})
# Dates are carried by ``due_date``; the identifiers stored with a decision are the other pinned kinds.
IDENTIFIER_KINDS = SUBJECT_KINDS | VALUE_KINDS | CUSTOMER_KINDS


@dataclass(frozen=True)
class ItemIdentifiers:
    """The identifiers of one item: every one verbatim in first-seen order, and its subjects and amounts normalized."""

    values: tuple[str, ...] = ()
    subjects: frozenset[str] = frozenset()
    amounts: frozenset[str] = frozenset()

    @property
    def checked(self) -> frozenset[str]:
        """The subjects and amounts: a bullet that names one its item did not have changes that item."""
        return self.subjects | self.amounts

    def verbatim(self, normalized: frozenset[str]) -> list[str]:
        """The values, as written, whose normalized form is in ``normalized``."""
        return [value for value in self.values if normalize_identifier(value) in normalized]


def item_identifiers(extractor: FactExtractor, *texts: str | None) -> ItemIdentifiers:
    values: dict[str, str] = {}
    subjects: set[str] = set()
    amounts: set[str] = set()
    for text in texts:
        for kind, value in extractor.extract(text or ""):
            if kind not in IDENTIFIER_KINDS:
                continue
            values.setdefault(value, kind)
            if kind in SUBJECT_KINDS:
                subjects.add(normalize_identifier(value))
            elif kind in VALUE_KINDS:
                amounts.add(normalize_identifier(value))
    return ItemIdentifiers(tuple(values), frozenset(subjects), frozenset(amounts))


def stored_identifiers(extractor: FactExtractor, identifiers: Sequence[str]) -> ItemIdentifiers:
    """The identifiers of a known decision, read back from the values it stores."""
    return item_identifiers(extractor, ", ".join(identifiers))


def different_subjects(first: ItemIdentifiers, second: ItemIdentifiers) -> bool:
    """Both items are about something, and not about any same thing: they are never one item."""
    return bool(first.subjects and second.subjects and not first.subjects & second.subjects)
