"""Key decisions: the conclusions in a summary, as structured items the host writes to long-term memory."""

from __future__ import annotations

from collections.abc import Mapping

from compression.dates import find_date
from compression.facts import FactExtractor
from compression.sections import CUSTOMER_PREFERENCES, KEY_DECISIONS, PROMISES, parse_sections
from compression.types import KeyDecision, KeyDecisionKind

DECISION_SECTIONS: dict[str, KeyDecisionKind] = {
    KEY_DECISIONS: "decision",
    PROMISES: "promise",
    CUSTOMER_PREFERENCES: "preference",
}
# Dates are carried by ``due_date``; the identifiers of a decision are the other pinned kinds.
_IDENTIFIER_KINDS = frozenset({"order", "tracking", "money", "email", "phone"})


def decision_key(kind: str, text: str) -> str:
    return f"{kind}:{' '.join(text.lower().split())}"


def parse_key_decisions(
    summary: str,
    extractor: FactExtractor,
    *,
    source_range: tuple[int, int] | None,
    known: Mapping[str, tuple[int, int] | None] | None = None,
) -> list[KeyDecision]:
    """Items of the Key Decisions, Promises & Commitments and Customer Preferences sections.

    ``known`` maps ``decision_key`` of items from earlier summaries to their original source range; such items
    come back with ``new=False`` and that range.
    """
    known = known or {}
    sections = parse_sections(summary)
    decisions: list[KeyDecision] = []
    seen: set[str] = set()
    for title, kind in DECISION_SECTIONS.items():
        for text in sections.get(title, []):
            key = decision_key(kind, text)
            if key in seen:
                continue
            seen.add(key)
            identifiers = tuple(
                dict.fromkeys(value for fact_kind, value in extractor.extract(text) if fact_kind in _IDENTIFIER_KINDS)
            )
            carried = key in known
            decisions.append(
                KeyDecision(
                    kind=kind,
                    text=text,
                    due_date=find_date(text) if kind != "preference" else None,
                    identifiers=identifiers,
                    source_range=known[key] if carried else source_range,
                    new=not carried,
                )
            )
    return decisions
