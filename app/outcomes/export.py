"""The outcomes of a window's conversations as CSV, for a spreadsheet or a BI tool.

Conversations are named by their public ids, as everywhere outside the server. A comment that a spreadsheet would
read as a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) is prefixed with ``'``, so
opening the file never runs what a customer typed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Session, col

from app.models import Conversation
from app.models.outcomes import ConversationOutcome

HEADER = (
    "conversation", "started_at", "resolution", "handoff_reason", "handed_off_at", "first_bot_reply_at",
    "first_human_reply_at", "closed_at", "reopen_count", "csat_score", "csat_comment",
)  # fmt: skip
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PIECE_CHARS = 64_000


def spreadsheet_safe(text: str | None) -> str:
    if not text:
        return ""
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    return getattr(value, "value", value)


def outcome_csv(session: Session, since: datetime) -> Iterator[str]:
    """The header, then one line per conversation started since ``since``, oldest first, in pieces of about
    ``PIECE_CHARS``."""
    outcome = ConversationOutcome
    columns = [col(Conversation.public_id), col(Conversation.created_at)] + [
        col(getattr(outcome, name)) for name in HEADER[2:]
    ]
    statement = (
        sa.select(*columns)
        .select_from(Conversation)
        .outerjoin(outcome, col(outcome.conversation_id) == col(Conversation.id))
        .where(col(Conversation.created_at) >= since)
        .order_by(col(Conversation.created_at), col(Conversation.id))
    )
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(HEADER)
    for row in session.execute(statement):
        cells = [_cell(value) for value in row[:-1]]
        cells[2] = cells[2] or "open"  # a conversation without an outcome row yet
        cells[8] = cells[8] or 0
        writer.writerow([*cells, spreadsheet_safe(row[-1])])
        if buffer.tell() > PIECE_CHARS:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
