"""Conclusions: what memdesk wants Mem0 to remember about a customer, and what it recalls.

A ``Conclusion`` is a promise, decision, preference or fact, already written with absolute dates. Its
``content_hash`` (customer, kind and normalized text) makes storing it idempotent: delivering the same conclusion
twice, for example after a crash between the write to Mem0 and the acknowledgement in the outbox, finds the memory
that is already there instead of adding a second one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum
from typing import Any

from memory.subjects import describe, matching_identifiers, normalized, object_subjects


class ConclusionKind(StrEnum):
    PROMISE = "promise"
    DECISION = "decision"
    PREFERENCE = "preference"
    FACT = "fact"


class ConclusionSource(StrEnum):
    COMPACTION = "compaction"
    NIGHTLY_SYNC = "nightly_sync"
    AGENT = "agent"
    PLAYBOOK = "playbook"


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"  # a promise whose grace period is over: kept for the record, no longer recalled


# An overdue promise stays visible this long after its due date, so the bot can still own up to it.
PROMISE_GRACE_DAYS = 30
# Embedding cosine similarity at which two wordings are one decision: measured with the local MiniLM embedder on
# support paraphrases (same meaning 0.71-0.95, different decisions 0.21-0.47 without identifiers, up to 0.68 for two
# refunds of different amounts), so identifier-free items need 0.65 and items whose values differ need 0.80.
SAME_MEANING_MIN_SIMILARITY = 0.65
CHANGED_VALUE_MIN_SIMILARITY = 0.80


def content_hash(customer_id: str, kind: str, text: str, due_date: date | None = None) -> str:
    """What makes two conclusions the same one. The due date counts: a promise moved to another day, in words
    unchanged, is a new version that supersedes the old, not a repeat to skip."""
    normalized = " ".join(text.lower().split())
    due = f"\x1fdue {due_date.isoformat()}" if due_date is not None else ""
    return hashlib.sha256(f"{customer_id}\x1f{kind}\x1f{normalized}{due}".encode()).hexdigest()


def same_decision(
    kind: str,
    identifiers: Sequence[str],
    text: str,
    metadata: Mapping[str, Any],
    other_text: str,
    similarity: Callable[[str, str], float],
    topic: Callable[[str], str | None] | None = None,
) -> bool:
    """Whether a stored memory (``metadata``, ``other_text``) is the same decision as a new one, reworded or updated
    (see ``decision_match``)."""
    return decision_match(kind, identifiers, text, metadata, other_text, similarity, topic) is not None


def decision_match(
    kind: str,
    identifiers: Sequence[str],
    text: str,
    metadata: Mapping[str, Any],
    other_text: str,
    similarity: Callable[[str, str], float],
    topic: Callable[[str], str | None] | None = None,
) -> str | None:
    """Why a stored memory is the same decision as a new one of the same kind, or None when it is not.

    Preferences are matched by topic (``topic``, see ``memory.subjects.TopicIndex``) when either of them has one.
    Otherwise what matters is the subject (``memory.subjects``; customer-level identifiers never count): the same
    identifiers; or a shared object subject (order, ticket, parcel) with new values and nearly the same meaning; or,
    for items without an object subject or values, the same meaning by embedding similarity.
    """
    if metadata.get("kind") != kind:
        return None
    if kind == ConclusionKind.PREFERENCE.value and topic is not None:
        mine, theirs = topic(text), topic(other_text)
        if mine is not None or theirs is not None:
            return f"same topic ({mine}): newer preference" if mine == theirs else None
    return _subject_match(identifiers, metadata.get("identifiers") or (), text, other_text, similarity)


def _subject_match(
    identifiers: Sequence[str],
    other_identifiers: Sequence[str],
    text: str,
    other_text: str,
    similarity: Callable[[str, str], float],
) -> str | None:
    mine, theirs = matching_identifiers(identifiers), matching_identifiers(other_identifiers)
    objects, other_objects = object_subjects(identifiers), object_subjects(other_identifiers)
    if mine and mine == theirs:
        return f"same {_subject_label(identifiers, objects or mine)}, newer version"
    if objects and other_objects:
        shared = objects & other_objects
        if shared and similarity(text, other_text) >= CHANGED_VALUE_MIN_SIMILARITY:
            return f"same {_subject_label(identifiers, shared)}, newer version with changed values"
        return None
    if mine or theirs:
        return None  # one is about something specific, or their values differ
    score = similarity(text, other_text)
    if score >= SAME_MEANING_MIN_SIMILARITY:
        return f"same meaning (similarity {score:.2f}), no order or other subject: newer version"
    return None


def _subject_label(identifiers: Sequence[str], wanted: frozenset[str]) -> str:
    named = sorted({value.strip() for value in identifiers if normalized(value) in wanted})
    return " and ".join(describe(value) for value in named)


@dataclass(frozen=True)
class Conclusion:
    customer_id: str
    kind: ConclusionKind
    text: str
    source: ConclusionSource
    due_date: date | None = None
    identifiers: tuple[str, ...] = ()
    conversation_id: int | None = None
    message_range: tuple[int, int] | None = None
    said_by: str | None = None  # "bot", or "staff:<id>" for a staff member's promise
    change_reason: str | None = None

    @property
    def content_hash(self) -> str:
        return content_hash(self.customer_id, self.kind.value, self.text, self.due_date)

    @property
    def expiration_date(self) -> date | None:
        """When Mem0 should stop returning it: only promises expire, a grace period after they fall due."""
        if self.kind is ConclusionKind.PROMISE and self.due_date is not None:
            return self.due_date + timedelta(days=PROMISE_GRACE_DAYS)
        return None

    def metadata(self) -> dict[str, Any]:
        """What memdesk stores next to the text in Mem0 (flat keys, so they can be filtered on)."""
        return {
            "kind": self.kind.value,
            "status": MemoryStatus.ACTIVE.value,
            "locked": False,
            "source": self.source.value,
            "due_date": self.due_date.isoformat() if self.due_date else None,
            "identifiers": list(self.identifiers),
            "conversation_id": self.conversation_id,
            "message_first_id": self.message_range[0] if self.message_range else None,
            "message_last_id": self.message_range[1] if self.message_range else None,
            "content_hash": self.content_hash,
            "said_by": self.said_by,
            "change_reason": self.change_reason,
        }


@dataclass(frozen=True)
class MemoryItem:
    """One memory of one customer, as memdesk sees it."""

    id: str
    customer_id: str
    text: str
    kind: str | None = None
    status: str = MemoryStatus.ACTIVE.value
    locked: bool = False
    due_date: date | None = None
    identifiers: tuple[str, ...] = ()
    source: str | None = None
    conversation_id: int | None = None
    content_hash: str | None = None
    superseded_by: str | None = None
    said_by: str | None = None
    change_reason: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    history: tuple[dict[str, Any], ...] = ()

    @property
    def active(self) -> bool:
        return self.status == MemoryStatus.ACTIVE.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "customer_id": self.customer_id,
            "text": self.text,
            "kind": self.kind,
            "status": self.status,
            "locked": self.locked,
            "due_date": self.due_date.isoformat() if self.due_date else None,
            "identifiers": list(self.identifiers),
            "source": self.source,
            "said_by": self.said_by,
            "conversation_id": self.conversation_id,
            "superseded_by": self.superseded_by,
            "superseded_reason": self.metadata.get("superseded_reason"),
            "change_reason": self.change_reason,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "history": list(self.history),
        }
