"""Key decisions: the conclusions in the notes, as structured items with stable keys, for long-term memory.

One item per bullet in the Key Decisions, Promises & Commitments and Customer Preferences sections::

    - [P3] Refund of $42.10 to the original card {due: 2026-12-02 | ids: #W2378156, $42.10}

The summary model writes new items without a tag, with ``due:`` (a date, or the words the turn used) and ``from: #N``
(the turn it came from). ``DecisionLedger`` turns that into ``KeyDecision`` values:

- a new item gets the next key of its kind (P promise, D decision, C customer preference); its relative dates are
  resolved once, against the ``created_at`` of the turn it came from, and its due date is the ``due:`` field, or
  the single date its text names (never the first of several);
- an item that matches a known one (same tag; else same kind and identifiers; else same kind and nearly the same
  words) is that item: it keeps its key, text and resolved date, and is not delivered again, unless it now names a
  different due date or new identifiers, which makes it a change (delivered, superseding the earlier version);
- a promise or decision whose only source is a customer message is rejected: customers cannot promise themselves
  anything.

The ledger is rebuilt from the previous notes whenever it is empty (a restarted host), so keys survive restarts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, tzinfo

from compression.dates import absolute_dates, absolutize_dates, local_date, parse_timestamp, resolve_due
from compression.facts import FactExtractor, normalize_identifier
from compression.messages import ChatMessage, content_text
from compression.sections import CUSTOMER_PREFERENCES, KEY_DECISIONS, PROMISES, parse_sections, replace_section_items
from compression.types import KeyDecision, KeyDecisionKind

DECISION_SECTIONS: dict[str, KeyDecisionKind] = {
    KEY_DECISIONS: "decision",
    PROMISES: "promise",
    CUSTOMER_PREFERENCES: "preference",
}
KEY_PREFIX: dict[KeyDecisionKind, str] = {"promise": "P", "decision": "D", "preference": "C"}
# Dates are carried by ``due_date``; the identifiers of a decision are the other pinned kinds.
IDENTIFIER_KINDS = frozenset({"order", "tracking", "money", "email", "phone"})
# Share of distinctive words two wordings must have in common to be read as the same item.
SAME_WORDING_MIN_OVERLAP = 0.6
MIN_DISTINCTIVE_WORDS = 2
DECISION_TEXT_MAX_CHARS = 400
NONE_WORDS = frozenset({"", "none", "n/a", "-", "unknown", "no", "null"})

_TAG = re.compile(r"^\[(?P<tag>[A-Z]\d{1,5})\]\s*")
_FIELDS = re.compile(r"\s*\{(?P<body>[^{}]*)\}[\s.]*$")
_SOURCE = re.compile(r"#?(\d{1,6})")
_FIELD_SEPARATOR = re.compile(r"[|;]")
_WORD = re.compile(r"[a-z]{3,}")
_STOP_WORDS = frozenset(
    {
        *("the", "and", "for", "with", "that", "this", "from", "will", "was", "are", "has", "have", "been"),
        *("our", "your", "their", "customer", "support", "agent", "via", "over", "than", "rather", "into"),
        *("onto", "about", "after", "before", "until", "would", "should", "could", "also", "only"),
    }
)


@dataclass(frozen=True)
class ParsedItem:
    kind: KeyDecisionKind
    text: str
    tag: str | None
    due_field: str | None
    ids_field: str | None
    source: int | None


def parse_item(kind: KeyDecisionKind, raw: str) -> ParsedItem:
    """One bullet: optional ``[TAG]``, the text, optional trailing ``{due: … | ids: … | from: #N}``."""
    text = raw.strip()
    tag_match = _TAG.match(text)
    tag = tag_match.group("tag") if tag_match else None
    text = text[tag_match.end() :] if tag_match else text
    fields: dict[str, str] = {}
    fields_match = _FIELDS.search(text)
    if fields_match:
        for part in _FIELD_SEPARATOR.split(fields_match.group("body")):
            name, _, value = part.partition(":")
            fields[name.strip().lower()] = value.strip()
        text = text[: fields_match.start()].rstrip()
    source_match = _SOURCE.search(fields.get("from", ""))
    return ParsedItem(
        kind=kind,
        text=text,
        tag=tag,
        due_field=fields.get("due"),
        ids_field=fields.get("ids"),
        source=int(source_match.group(1)) if source_match else None,
    )


def parse_items(summary: str) -> list[ParsedItem]:
    sections = parse_sections(summary)
    return [parse_item(kind, raw) for title, kind in DECISION_SECTIONS.items() for raw in sections.get(title, [])]


def render_item(decision: KeyDecision) -> str:
    ids = ", ".join(decision.identifiers) or "none"
    if decision.kind == "preference":
        return f"[{decision.key}] {decision.text} {{ids: {ids}}}"
    due = decision.due_date.isoformat() if decision.due_date else "none"
    return f"[{decision.key}] {decision.text} {{due: {due} | ids: {ids}}}"


def distinctive_words(text: str) -> frozenset[str]:
    return frozenset(word for word in _WORD.findall(text.lower()) if word not in _STOP_WORDS)


def same_wording(first: str, second: str) -> bool:
    a, b = distinctive_words(first), distinctive_words(second)
    if len(a) < MIN_DISTINCTIVE_WORDS or len(b) < MIN_DISTINCTIVE_WORDS:
        return False
    return len(a & b) / len(a | b) >= SAME_WORDING_MIN_OVERLAP


def _identifier_set(identifiers: Sequence[str]) -> frozenset[str]:
    return frozenset(normalize_identifier(value) for value in identifiers)


def _shorten(text: str) -> str:
    """Shorten what is stored (a memory is shown whole later), never inside a word."""
    flat = " ".join(text.split())
    if len(flat) <= DECISION_TEXT_MAX_CHARS:
        return flat
    return flat[: DECISION_TEXT_MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"


@dataclass
class ReconcileContext:
    """What the ledger needs to know about the compaction it reconciles."""

    turns: Sequence[ChatMessage]
    first_index: int
    source_range: tuple[int, int]
    fallback_time: datetime | None


class DecisionLedger:
    """Every key decision one conversation has produced, by key; see the module docstring."""

    def __init__(self, extractor: FactExtractor, timezone: tzinfo = UTC) -> None:
        self.extractor = extractor
        self.timezone = timezone
        self.known: dict[str, KeyDecision] = {}
        self.rejected = 0

    def identifiers(self, *texts: str | None) -> tuple[str, ...]:
        values: list[str] = []
        for text in texts:
            if text:
                values += [value for kind, value in self.extractor.extract(text) if kind in IDENTIFIER_KINDS]
        return tuple(dict.fromkeys(values))

    def load(self, notes: str | None) -> None:
        """Learn the tagged items of notes written before this ledger existed (a restarted host)."""
        if not notes:
            return
        for item in parse_items(notes):
            if item.tag is None or item.tag in self.known:
                continue
            due = _iso_date(item.due_field)
            self.known[item.tag] = KeyDecision(
                kind=item.kind,
                text=item.text,
                due_date=due if item.kind != "preference" else None,
                identifiers=self.identifiers(item.text, item.ids_field),
                source_range=None,
                new=False,
                key=item.tag,
            )

    def _next_key(self, kind: KeyDecisionKind) -> str:
        prefix = KEY_PREFIX[kind]
        used = [int(key[1:]) for key in self.known if key.startswith(prefix) and key[1:].isdigit()]
        return f"{prefix}{max(used, default=0) + 1}"

    def _match(self, item: ParsedItem, identifiers: tuple[str, ...], used: set[str]) -> KeyDecision | None:
        if item.tag and item.tag not in used:
            known = self.known.get(item.tag)
            if known is not None and known.kind == item.kind:
                return known
        candidates = [d for d in self.known.values() if d.kind == item.kind and d.key not in used]
        wanted = _identifier_set(identifiers)
        if wanted:
            for known in reversed(candidates):
                if _identifier_set(known.identifiers) == wanted:
                    return known
        for known in reversed(candidates):
            shared = _identifier_set(known.identifiers) & wanted
            compatible = shared or not (known.identifiers and identifiers)
            if compatible and same_wording(known.text, item.text):
                return known
        return None

    def reconcile(self, summary: str, context: ReconcileContext) -> tuple[str, list[KeyDecision]]:
        """The notes with canonical decision items, and the decisions (new, changed or carried)."""
        used: set[str] = set()
        by_section: dict[str, list[str]] = {title: [] for title in DECISION_SECTIONS}
        decisions: list[KeyDecision] = []
        sections = parse_sections(summary)
        for title, kind in DECISION_SECTIONS.items():
            for raw in sections.get(title, []):
                decision = self._reconcile_one(parse_item(kind, raw), context, used)
                if decision is None:
                    continue
                used.add(decision.key)
                self.known[decision.key] = replace(decision, new=False, changed=False)
                by_section[title].append(render_item(decision))
                decisions.append(decision)
        for title, items in by_section.items():
            summary = replace_section_items(summary, title, items)
        return summary, decisions

    def _reconcile_one(self, item: ParsedItem, context: ReconcileContext, used: set[str]) -> KeyDecision | None:
        if not item.text:
            return None
        identifiers = self.identifiers(item.text, item.ids_field)
        known = self._match(item, identifiers, used)
        if known is not None:
            new_due = _iso_date(item.due_field)
            due_changed = item.kind != "preference" and new_due is not None and new_due != known.due_date
            ids_changed = bool(_identifier_set(identifiers) - _identifier_set(known.identifiers))
            if not (due_changed or ids_changed):
                return known
        source = self._source(item, context)
        if item.kind != "preference" and source is not None and source.get("role") == "user":
            self.rejected += 1  # a customer's own words never establish a commitment or change one
            return known
        fresh = self._fresh(item, identifiers, source, context)
        if known is None:
            return replace(fresh, key=self._next_key(item.kind))
        return replace(fresh, key=known.key, changed=True)

    def _fresh(
        self, item: ParsedItem, identifiers: tuple[str, ...], source: ChatMessage | None, context: ReconcileContext
    ) -> KeyDecision:
        """A decision as first extracted: relative dates resolved once, against the time of its source turn."""
        moment = self._reference_time(item, source, context)
        reference = local_date(moment, self.timezone) if moment else None
        text = _shorten(absolutize_dates(item.text, reference) if reference else item.text)
        due: date | None = None
        if item.kind != "preference":
            if item.due_field and item.due_field.strip().lower() not in NONE_WORDS:
                due = resolve_due(item.due_field, reference)
            else:
                found = absolute_dates(text)
                due = found[0] if len(found) == 1 else None
        return KeyDecision(
            kind=item.kind,
            text=text,
            due_date=due,
            identifiers=identifiers,
            source_range=context.source_range,
            new=True,
            said_by=_speaker(source),
        )

    @staticmethod
    def _source(item: ParsedItem, context: ReconcileContext) -> ChatMessage | None:
        if item.source is None:
            return None
        position = item.source - context.first_index
        return context.turns[position] if 0 <= position < len(context.turns) else None

    @staticmethod
    def _reference_time(item: ParsedItem, source: ChatMessage | None, context: ReconcileContext) -> datetime | None:
        """The time of the turn that said it: the cited turn, else the latest support or tool turn whose text holds
        the item's date words, else the latest summarized turn."""
        if source is not None:
            moment = parse_timestamp(source.get("created_at"))
            if moment is not None:
                return moment
        phrase = (item.due_field or "").strip().lower()
        if phrase and phrase not in NONE_WORDS and _iso_date(phrase) is None:
            for message in reversed(context.turns):
                if (
                    message.get("role") in ("assistant", "tool")
                    and phrase in content_text(message.get("content")).lower()
                ):
                    moment = parse_timestamp(message.get("created_at"))
                    if moment is not None:
                        return moment
        return context.fallback_time


def _speaker(source: ChatMessage | None) -> str | None:
    """Who made a commitment: the cited turn's ``author`` (a staff member), else the bot for its own turns."""
    if source is None:
        return None
    author = source.get("author")
    if isinstance(author, str):
        return author
    return "bot" if source.get("role") in ("assistant", "tool") else None


def _iso_date(value: str | None) -> date | None:
    """The date ``value`` writes as YYYY-MM-DD, or None."""
    if not value or len(value.strip()) != 10:
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        return None
