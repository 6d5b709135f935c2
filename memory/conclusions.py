"""Conclusions: what memdesk wants Mem0 to remember about a customer, and what it recalls.

A ``Conclusion`` is a promise, decision, preference or fact, already written with absolute dates. Its
``content_hash`` (customer, kind and normalized text) makes storing it idempotent: delivering the same conclusion
twice, for example after a crash between the write to Mem0 and the acknowledgement in the outbox, finds the memory
that is already there instead of adding a second one.
"""

from __future__ import annotations

import hashlib
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


# An overdue promise stays visible this long after its due date, so the bot can still own up to it.
PROMISE_GRACE_DAYS = 30


def content_hash(customer_id: str, kind: str, text: str) -> str:
    normalized = " ".join(text.lower().split())
    return hashlib.sha256(f"{customer_id}\x1f{kind}\x1f{normalized}".encode()).hexdigest()


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
