"""Key decisions: the conclusions in the notes, as structured items with stable keys, for long-term memory.

One item per bullet in the Key Decisions, Promises & Commitments and Customer Preferences sections::

    - [P3] Refund of $42.10 to the original card {due: 2026-12-02 | ids: #W2378156, $42.10 | by: staff:3}

The summary model writes new items without a tag, with ``due:`` (a date, or the words the turn used) and ``from: #N``
(the turn it came from). ``DecisionLedger`` turns that into ``KeyDecision`` values:

- a new promise or decision is accepted only when the turn it cites is a support, staff or tool turn of the
  summarized range that supports it (``compression.provenance``); anything else is rejected and counted, so a
  customer's claim never becomes a commitment, however the summary model carries or copies it. A preference needs
  no citation; a customer's turn may establish one;
- a new item gets the next key of its kind (P promise, D decision, C customer preference), and ``said_by`` from the
  turn it cites; its relative dates are resolved once, against the ``created_at`` of that turn, and its due date is
  the ``due:`` field, or the single date its text names (never the first of several);
- an item is a known one when it has that item's tag, or else when it shares a subject with it (an order, RMA or
  tracking number, ``compression.subjects``), or else, when neither has a subject, when it has nearly the same
  words; an item with an unknown tag is new, and two items with different subjects are never the same. A known item
  keeps its key, text, resolved date and ``said_by`` and is not delivered again, unless it now names a different
  due date (an ISO date, or words resolved against the turn that said them) or new subjects or amounts: that is a
  change, delivered with a ``change_reason`` and superseding the earlier version, if its citation holds.

Tagged items are matched before untagged ones, so a reworded copy never takes the key of a bullet that is still
there. A summary written in chunks is reconciled chunk by chunk (``DecisionBatch``), so the next chunk sees only
canonical, accepted items. The ledger is rebuilt from the previous notes whenever it is empty (a restarted host),
``by:`` included, so keys and authors survive restarts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, tzinfo

from compression.dates import absolute_dates, absolutize_dates, local_date, parse_timestamp, resolve_due
from compression.facts import FactExtractor
from compression.messages import ChatMessage, content_text
from compression.provenance import cited_turn, distinctive_words, may_establish, said_by, supports
from compression.sections import CUSTOMER_PREFERENCES, KEY_DECISIONS, PROMISES, parse_sections, replace_section_items
from compression.subjects import ItemIdentifiers, different_subjects, item_identifiers, stored_identifiers
from compression.types import KeyDecision, KeyDecisionKind

DECISION_SECTIONS: dict[str, KeyDecisionKind] = {
    KEY_DECISIONS: "decision",
    PROMISES: "promise",
    CUSTOMER_PREFERENCES: "preference",
}
KEY_PREFIX: dict[KeyDecisionKind, str] = {"promise": "P", "decision": "D", "preference": "C"}
# Share of distinctive words two wordings must have in common to be read as the same item.
SAME_WORDING_MIN_OVERLAP = 0.6
MIN_DISTINCTIVE_WORDS = 2
DECISION_TEXT_MAX_CHARS = 400
NONE_WORDS = frozenset({"", "none", "n/a", "-", "unknown", "no", "null"})

_TAG = re.compile(r"^\[(?P<tag>[A-Z]\d{1,5})\]\s*")
_FIELDS = re.compile(r"\s*\{(?P<body>[^{}]*)\}[\s.]*$")
_SOURCE = re.compile(r"#?(\d{1,6})")
_FIELD_SEPARATOR = re.compile(r"[|;]")


@dataclass(frozen=True)
class ParsedItem:
    kind: KeyDecisionKind
    text: str
    tag: str | None
    due_field: str | None
    ids_field: str | None
    source: int | None
    by_field: str | None = None


def parse_item(kind: KeyDecisionKind, raw: str) -> ParsedItem:
    """One bullet: optional ``[TAG]``, the text, optional trailing ``{due: … | ids: … | by: … | from: #N}``."""
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
    by = fields.get("by", "")
    return ParsedItem(
        kind=kind,
        text=text,
        tag=tag,
        due_field=fields.get("due"),
        ids_field=fields.get("ids"),
        source=int(source_match.group(1)) if source_match else None,
        by_field=by if by.lower() not in NONE_WORDS else None,
    )


def parse_items(summary: str) -> list[ParsedItem]:
    sections = parse_sections(summary)
    return [parse_item(kind, raw) for title, kind in DECISION_SECTIONS.items() for raw in sections.get(title, [])]


def render_item(decision: KeyDecision) -> str:
    fields = [] if decision.kind == "preference" else [f"due: {_iso_or_none(decision.due_date)}"]
    fields.append(f"ids: {', '.join(decision.identifiers) or 'none'}")
    if decision.said_by:
        fields.append(f"by: {decision.said_by}")
    return f"[{decision.key}] {decision.text} {{{' | '.join(fields)}}}"


def same_wording(first: str, second: str) -> bool:
    a, b = distinctive_words(first), distinctive_words(second)
    if len(a) < MIN_DISTINCTIVE_WORDS or len(b) < MIN_DISTINCTIVE_WORDS:
        return False
    return len(a & b) / len(a | b) >= SAME_WORDING_MIN_OVERLAP


def _wording_overlap(first: str, second: str) -> float:
    a, b = distinctive_words(first), distinctive_words(second)
    return len(a & b) / len(a | b) if a | b else 0.0


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


@dataclass(frozen=True)
class Candidate:
    """One bullet being reconciled: what it says, what it is about, and the turn it cites."""

    item: ParsedItem
    ids: ItemIdentifiers
    source: ChatMessage | None
    context: ReconcileContext


class DecisionLedger:
    """Every key decision one conversation has produced, by key; see the module docstring."""

    def __init__(self, extractor: FactExtractor, timezone: tzinfo = UTC) -> None:
        self.extractor = extractor
        self.timezone = timezone
        self.known: dict[str, KeyDecision] = {}
        self.rejected = 0

    def identifiers(self, *texts: str | None) -> tuple[str, ...]:
        return item_identifiers(self.extractor, *texts).values

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
                said_by=item.by_field,
            )

    def batch(self, context: ReconcileContext) -> DecisionBatch:
        """A reconciliation of one compaction, chunk by chunk of its summary."""
        return DecisionBatch(self, context)

    def reconcile(self, summary: str, context: ReconcileContext) -> tuple[str, list[KeyDecision]]:
        """The notes with canonical decision items, and the decisions (new, changed or carried)."""
        sections = parse_sections(summary)
        bullets = [
            (title, self._candidate(parse_item(kind, raw), context))
            for title, kind in DECISION_SECTIONS.items()
            for raw in sections.get(title, [])
        ]
        used: set[str] = set()
        reconciled: dict[int, KeyDecision] = {}
        for position in sorted(range(len(bullets)), key=lambda index: bullets[index][1].item.tag is None):
            decision = self._reconcile_one(bullets[position][1], used)
            if decision is not None:
                used.add(decision.key)
                self.known[decision.key] = replace(decision, new=False, changed=False, change_reason=None)
                reconciled[position] = decision
        by_section: dict[str, list[str]] = {title: [] for title in DECISION_SECTIONS}
        for position, (title, _) in enumerate(bullets):
            if position in reconciled:
                by_section[title].append(render_item(reconciled[position]))
        for title, items in by_section.items():
            summary = replace_section_items(summary, title, items)
        return summary, [reconciled[position] for position in sorted(reconciled)]

    def _candidate(self, item: ParsedItem, context: ReconcileContext) -> Candidate:
        ids = item_identifiers(self.extractor, item.text, item.ids_field)
        return Candidate(item, ids, cited_turn(item.source, context.turns, context.first_index), context)

    def _next_key(self, kind: KeyDecisionKind) -> str:
        prefix = KEY_PREFIX[kind]
        used = [int(key[1:]) for key in self.known if key.startswith(prefix) and key[1:].isdigit()]
        return f"{prefix}{max(used, default=0) + 1}"

    def _ids(self, decision: KeyDecision) -> ItemIdentifiers:
        return stored_identifiers(self.extractor, decision.identifiers)

    def _match(self, candidate: Candidate, used: set[str]) -> KeyDecision | None:
        item, ids = candidate.item, candidate.ids
        if item.tag is not None:
            known = self.known.get(item.tag)
            if known is None or known.kind != item.kind or item.tag in used:
                return None
            return None if different_subjects(ids, self._ids(known)) else known
        others = [(d, self._ids(d)) for d in self.known.values() if d.kind == item.kind and d.key not in used]
        if ids.subjects:
            sharing = [(known, known_ids) for known, known_ids in others if ids.subjects & known_ids.subjects]
            if not sharing:
                return None
            return max(
                reversed(sharing),
                key=lambda pair: (pair[1].subjects == ids.subjects, _wording_overlap(pair[0].text, item.text)),
            )[0]
        for known, known_ids in reversed(others):
            if not known_ids.subjects and same_wording(known.text, item.text):
                return known
        return None

    def _reconcile_one(self, candidate: Candidate, used: set[str]) -> KeyDecision | None:
        item = candidate.item
        if not item.text:
            return None
        known = self._match(candidate, used)
        if known is None:
            if not self._established(candidate):
                self.rejected += 1
                return None
            return replace(self._fresh(candidate), key=self._next_key(item.kind))
        reason = self._change_reason(candidate, known)
        if reason is None:
            return known
        if not self._established(candidate):
            self.rejected += 1  # an uncited or unsupported change leaves the promise as it was
            return known
        return replace(self._fresh(candidate), key=known.key, changed=True, change_reason=reason)

    @staticmethod
    def _established(candidate: Candidate) -> bool:
        """Whether the bullet may create or change an item: its cited turn may say so, and does."""
        item, source, context = candidate.item, candidate.source, candidate.context
        if item.kind == "preference":
            return True
        if source is None or item.source is None or not may_establish(source, item.kind):
            return False
        return supports(context.turns, item.source - context.first_index, item.text, candidate.ids)

    def _change_reason(self, candidate: Candidate, known: KeyDecision) -> str | None:
        reasons: list[str] = []
        due = self._stated_due(candidate) if candidate.item.kind != "preference" else None
        if due is not None and due != known.due_date:
            before = known.due_date.isoformat() if known.due_date else None
            reasons.append(f"due date moved from {before} to {due}" if before else f"due date set to {due}")
        added = candidate.ids.checked - self._ids(known).checked
        if added:
            reasons.append("new identifiers: " + ", ".join(candidate.ids.verbatim(added)))
        return "; ".join(reasons) or None

    def _stated_due(self, candidate: Candidate) -> date | None:
        """The due date the bullet states: an ISO date, or its words resolved against the turn of this range that
        said them. Words no turn here said are the ones the item already had, carried along."""
        phrase = (candidate.item.due_field or "").strip()
        if phrase.lower() in NONE_WORDS:
            return None
        written = _iso_date(phrase)
        if written is not None:
            return written
        moment = self._said_at(candidate)
        return resolve_due(phrase, self._reference_date(moment)) if moment is not None else None

    def _fresh(self, candidate: Candidate) -> KeyDecision:
        """A decision as first extracted: relative dates resolved once, against the time of its source turn."""
        item = candidate.item
        reference = self._reference_date(self._reference_time(candidate))
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
            identifiers=candidate.ids.values,
            source_range=candidate.context.source_range,
            new=True,
            said_by=said_by(candidate.source),
        )

    def _reference_date(self, moment: datetime | None) -> date | None:
        """The calendar day relative dates count from: the moment's date on the shop's calendar."""
        return local_date(moment, self.timezone) if moment is not None else None

    def _reference_time(self, candidate: Candidate) -> datetime | None:
        """The time of the turn that said it, else the latest summarized turn."""
        return self._said_at(candidate) or candidate.context.fallback_time

    @staticmethod
    def _said_at(candidate: Candidate) -> datetime | None:
        """The time of the cited turn, else of the latest support or tool turn whose text holds the item's date
        words; None when no turn of the range said them."""
        if candidate.source is not None:
            moment = parse_timestamp(candidate.source.get("created_at"))
            if moment is not None:
                return moment
        phrase = (candidate.item.due_field or "").strip().lower()
        if phrase and phrase not in NONE_WORDS and _iso_date(phrase) is None:
            for message in reversed(candidate.context.turns):
                if (
                    message.get("role") in ("assistant", "tool")
                    and phrase in content_text(message.get("content")).lower()
                ):
                    moment = parse_timestamp(message.get("created_at"))
                    if moment is not None:
                        return moment
        return None


@dataclass
class DecisionBatch:
    """The decisions of one compaction. Each chunk of a chunked summary is reconciled (``check``) before the next
    chunk sees its notes; what a chunk established stays delivered, once, even when a later chunk drops it."""

    ledger: DecisionLedger
    context: ReconcileContext
    latest: list[KeyDecision] = field(default_factory=list)
    delivered: dict[str, KeyDecision] = field(default_factory=dict)

    def check(self, notes: str, seen: int) -> str:
        """``notes`` with canonical items, after a chunk that summarized the first ``seen`` turns."""
        context = replace(self.context, turns=self.context.turns[:seen])
        canonical, decisions = self.ledger.reconcile(notes, context)
        self.latest = [self._merge(decision) for decision in decisions]
        return canonical

    def _merge(self, decision: KeyDecision) -> KeyDecision:
        earlier = self.delivered.get(decision.key)
        if not decision.new:
            return earlier or decision
        if earlier is not None and not earlier.changed:  # new in this compaction: delivered as new, not a change
            decision = replace(decision, changed=False, change_reason=None)
        self.delivered[decision.key] = decision
        return decision

    def decisions(self) -> list[KeyDecision]:
        """The decisions of the final notes, then those an earlier chunk delivered that the final notes lack."""
        keys = {decision.key for decision in self.latest}
        return [*self.latest, *(d for key, d in self.delivered.items() if key not in keys)]


def _iso_or_none(value: date | None) -> str:
    return value.isoformat() if value else "none"


def _iso_date(value: str | None) -> date | None:
    """The date ``value`` writes as YYYY-MM-DD, or None."""
    if not value or len(value.strip()) != 10:
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        return None
