"""Conversation labels: short names staff put on conversations ("vip", "damaged-item") and filter the inbox by.

A label is lowercase letters, digits, ``-`` and ``_`` (a typed "Damaged item" becomes ``damaged-item``), so the same
label is never two spellings; a conversation holds at most ``MAX_PER_CONVERSATION``.
"""

from __future__ import annotations

import re
from collections import defaultdict

from sqlalchemy import delete, func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from app.models import ConversationLabel
from app.models.console import LABEL_LENGTH

MAX_PER_CONVERSATION = 12
KNOWN_SHOWN = 200
_LABEL = re.compile(r"[a-z0-9][a-z0-9_-]*")


class LabelError(ValueError):
    """A label that cannot be added; the message says why, for the staff member."""


def normalized(text: str) -> str:
    """``text`` as a label ("Damaged item" is ``damaged-item``), or ``LabelError``."""
    label = re.sub(r"\s+", "-", text.strip().lower())
    if not _LABEL.fullmatch(label) or len(label) > LABEL_LENGTH:
        raise LabelError(
            f"A label is up to {LABEL_LENGTH} lowercase letters, digits, - or _ (spaces become -), such as “vip”."
        )
    return label


def add_label(session: Session, conversation_id: int, text: str, staff_id: int) -> str:
    """Put the label on the conversation (the caller commits); adding one it has is no change."""
    label = normalized(text)
    held = labels_of(session, [conversation_id]).get(conversation_id, [])
    if label in held:
        return label
    if len(held) >= MAX_PER_CONVERSATION:
        raise LabelError(f"A conversation holds at most {MAX_PER_CONVERSATION} labels; remove one first.")
    session.add(ConversationLabel(conversation_id=conversation_id, label=label, added_by=staff_id))
    return label


def remove_label(session: Session, conversation_id: int, text: str) -> bool:
    """Take the label off (the caller commits); False when it was not there."""
    gone = session.execute(
        delete(ConversationLabel).where(
            col(ConversationLabel.conversation_id) == conversation_id, col(ConversationLabel.label) == text
        )
    )
    return bool(getattr(gone, "rowcount", 0))


def labels_of(session: Session, conversation_ids: list[int]) -> dict[int, list[str]]:
    """Each conversation's labels, by name: one query for a whole inbox page."""
    found: dict[int, list[str]] = defaultdict(list)
    if not conversation_ids:
        return found
    rows = session.execute(
        sa_select(col(ConversationLabel.conversation_id), col(ConversationLabel.label))
        .where(col(ConversationLabel.conversation_id).in_(conversation_ids))
        .order_by(col(ConversationLabel.label))
    ).all()
    for conversation_id, label in rows:
        found[int(conversation_id)].append(str(label))
    return found


def known_labels(session: Session) -> list[str]:
    """The labels in use, the most used first: the inbox's filter and the add field's suggestions."""
    rows = session.execute(
        sa_select(col(ConversationLabel.label))
        .group_by(col(ConversationLabel.label))
        .order_by(func.count().desc(), col(ConversationLabel.label))
        .limit(KNOWN_SHOWN)
    ).all()
    return [str(row[0]) for row in rows]
