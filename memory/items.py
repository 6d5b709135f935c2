"""Reading Mem0's raw records as ``MemoryItem``: the one customer-id rule, dates and the human-edit mark."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from memory.conclusions import MemoryItem, MemoryStatus
from memory.errors import InvalidCustomerIdError

CUSTOMER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def check_customer_id(customer_id: str) -> str:
    if not isinstance(customer_id, str) or not CUSTOMER_ID_PATTERN.fullmatch(customer_id):
        raise InvalidCustomerIdError(
            f"Invalid customer id {customer_id!r}: use 1-64 letters, digits, '-' or '_', starting with a letter "
            "or digit (no wildcards)."
        )
    return customer_id


def as_date(value: Any) -> date | None:
    if isinstance(value, str) and value:
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def human_mark(editor: str) -> dict[str, Any]:
    """The metadata that locks a memory a human wrote or confirmed."""
    return {"locked": True, "edited_by": editor, "edited_at": datetime.now(UTC).isoformat()}


def as_item(raw: dict[str, Any], customer_id: str, history: Sequence[dict[str, Any]] = ()) -> MemoryItem:
    metadata = dict(raw.get("metadata") or {})
    return MemoryItem(
        id=str(raw["id"]),
        customer_id=customer_id,
        text=str(raw.get("memory") or ""),
        kind=metadata.get("kind"),
        status=str(metadata.get("status") or MemoryStatus.ACTIVE.value),
        locked=bool(metadata.get("locked")),
        due_date=as_date(metadata.get("due_date")),
        identifiers=tuple(metadata.get("identifiers") or ()),
        source=metadata.get("source"),
        conversation_id=metadata.get("conversation_id"),
        content_hash=metadata.get("content_hash"),
        superseded_by=metadata.get("superseded_by"),
        said_by=metadata.get("said_by"),
        change_reason=metadata.get("change_reason"),
        created_at=raw.get("created_at"),
        updated_at=raw.get("updated_at"),
        score=raw.get("score"),
        metadata=metadata,
        history=tuple(history),
    )
