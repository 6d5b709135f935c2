"""Conclusions: what memdesk wants Mem0 to remember about a customer, and what it recalls.

A ``Conclusion`` is a promise, decision, preference or fact, already written with absolute dates. Its
``content_hash`` (customer, kind and normalized text) makes storing it idempotent: delivering the same conclusion
twice, for example after a crash between the write to Mem0 and the acknowledgement in the outbox, finds the memory
that is already there instead of adding a second one.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum
from typing import Any


class ConclusionKind(StrEnum):
    PROMISE = "promise"
    DECISION = "decision"
    PREFERENCE = "preference"
    FACT = "fact"


class ConclusionSource(StrEnum):
    COMPACTION = "compaction"
    NIGHTLY_SYNC = "nightly_sync"
    AGENT = "agent"


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
_AMOUNT = re.compile(r"^[$€£¥]|\b(?:USD|EUR|GBP|JPY|CAD|AUD|CHF)$")


def content_hash(customer_id: str, kind: str, text: str) -> str:
    normalized = " ".join(text.lower().split())
    return hashlib.sha256(f"{customer_id}\x1f{kind}\x1f{normalized}".encode()).hexdigest()


def _normalized(identifiers: Iterable[str]) -> frozenset[str]:
    return frozenset("".join(value.split()).lower() for value in identifiers)


def subject_identifiers(identifiers: Iterable[str]) -> frozenset[str]:
    """What a decision is about (orders, tracking numbers, contacts), without the amounts it names."""
    return _normalized(value for value in identifiers if not _AMOUNT.search(value.strip()))


def cosine(first: Sequence[float], second: Sequence[float]) -> float:
    dot = sum(a * b for a, b in zip(first, second, strict=False))
    norms = math.sqrt(sum(a * a for a in first)) * math.sqrt(sum(b * b for b in second))
    return dot / norms if norms else 0.0


def same_decision(
    kind: str,
    identifiers: Sequence[str],
    text: str,
    metadata: Mapping[str, Any],
    other_text: str,
    similarity: Callable[[str, str], float],
) -> bool:
    """Whether a stored memory (``metadata``, ``other_text``) is the same decision as a new one, reworded or updated.

    Same kind and the same identifiers; or a shared subject with new values (a new amount) and nearly the same
    meaning; or, for items without identifiers (most preferences), the same meaning by embedding similarity.
    """
    if metadata.get("kind") != kind:
        return False
    mine, theirs = _normalized(identifiers), _normalized(metadata.get("identifiers") or ())
    if mine and mine == theirs:
        return True
    if mine and theirs:
        shared = subject_identifiers(identifiers) & subject_identifiers(metadata.get("identifiers") or ())
        return bool(shared) and similarity(text, other_text) >= CHANGED_VALUE_MIN_SIMILARITY
    if mine or theirs:
        return False  # one is about something specific, the other is not
    return similarity(text, other_text) >= SAME_MEANING_MIN_SIMILARITY


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
        return content_hash(self.customer_id, self.kind.value, self.text)

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
            "conversation_id": self.conversation_id,
            "superseded_by": self.superseded_by,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "history": list(self.history),
        }
