"""The handoff summary: what a person reads first in a conversation that needs them.

Three short lists, read from a summary in the compressor's section layout: what the customer wants (Customer
Goal, Pending Customer Asks), what was tried (Actions Taken), what was promised (Promises & Commitments, Key
Decisions). The summary is the newer of the latest compaction and the latest summary written on demand; the
bot's own handoff note (the ``transfer_to_human`` tool's summary, kept in the audit trail) is shown with it.

On demand (``write_handoff_summary``), the summary model (``summary_model_override``, the main model as its one
retry, the deterministic fallback when neither answers) updates the latest compaction's notes with every turn
since, through the compressor's own summarizer, so a person never has to read the whole conversation. The result
is stored in ``handoff_summaries`` with its usage; it is not a compaction and does not change what the bot sees.
It has a deadline (``MEMDESK_HANDOFF_SUMMARY_DEADLINE_S``) over every model call and retry: past it nothing is
stored and ``HandoffSummaryTimeout`` says so, instead of the staff member waiting out each call's timeout.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.llm import Deadline, LLMGateway, within
from app.models import AuditEvent, HandoffSummary, Message, MessageRole
from app.settings import Settings
from app.tools.handoff import HANDOFF_ACTION
from app.turns.context import latest_compaction, to_chat_message
from compression.decisions import DECISION_SECTIONS, ParsedItem, parse_item
from compression.fallback import fallback_summary
from compression.messages import ChatMessage
from compression.sections import (
    ACTIONS_TAKEN,
    CUSTOMER_GOAL,
    KEY_DECISIONS,
    PENDING_ASKS,
    PROMISES,
    parse_sections,
)
from compression.summarizer import SummaryRequest, SummaryWriter, latest_customer_message, summarize_in_chunks

HANDOFF_MAX_TOKENS = 600
HANDOFF_SUMMARY_DEADLINE_SETTING = "MEMDESK_HANDOFF_SUMMARY_DEADLINE_S"
# What a staff member is told to wait before asking again: a busy model usually frees up within this.
HANDOFF_SUMMARY_RETRY_AFTER_S = 30


class HandoffSummaryTimeout(Exception):
    """No summary model finished within the deadline; nothing was stored, the previous summary still stands."""

    def __init__(self, deadline: Deadline) -> None:
        super().__init__(
            f"The summary model did not finish within {deadline.describe()}, so no new summary was written; the "
            f"summary shown is the previous one. Try again in a minute, or raise {deadline.setting} for a slow "
            f"model."
        )
        self.deadline = deadline


HANDOFF_FOCUS = "handing this conversation to a human agent: what the customer wants, what was tried, what was promised"


@dataclass(frozen=True)
class HandoffView:
    wants: list[str]
    tried: list[str]
    promised: list[str]
    source: str
    written_at: datetime | None
    through_message_id: int
    bot_note: str | None
    bot_reason: str | None

    @property
    def empty(self) -> bool:
        return not (self.wants or self.tried or self.promised or self.bot_note)


def _lists(summary: str) -> tuple[list[str], list[str], list[str]]:
    sections = parse_sections(summary)
    wants = sections.get(CUSTOMER_GOAL, []) + sections.get(PENDING_ASKS, [])
    tried = sections.get(ACTIONS_TAKEN, [])
    promised = [
        _readable(parse_item(DECISION_SECTIONS[title], raw))
        for title in (PROMISES, KEY_DECISIONS)
        for raw in sections.get(title, [])
    ]
    return wants, tried, promised


def _readable(item: ParsedItem) -> str:
    """A promise or decision as a person reads it: the summary's ``{due: … | ids: …}`` annotation becomes a due date."""
    return f"{item.text} (due {item.due_field})" if item.due_field else item.text


def handoff_view(session: Session, conversation_id: int) -> HandoffView:
    """The best summary available now (in the caller's transaction)."""
    compaction = latest_compaction(session, conversation_id)
    written = session.exec(
        select(HandoffSummary)
        .where(HandoffSummary.conversation_id == conversation_id)
        .order_by(col(HandoffSummary.id).desc())
        .limit(1)
    ).first()
    handoff = session.exec(
        select(AuditEvent)
        .where(AuditEvent.action == HANDOFF_ACTION, AuditEvent.target_id == str(conversation_id))
        .order_by(col(AuditEvent.id).desc())
        .limit(1)
    ).first()
    note = handoff.detail.get("summary") if handoff else None
    reason = handoff.detail.get("reason") if handoff else None
    summary, source, at, through = "", "no summary yet", None, 0
    if compaction is not None:
        summary, at, through = compaction.summary, compaction.created_at, compaction.last_message_id
        source = f"latest compaction (messages {compaction.first_message_id}–{compaction.last_message_id})"
    if written is not None and written.through_message_id >= through:
        summary, at, through = written.summary, written.created_at, written.through_message_id
        writer = "the deterministic fallback" if written.fallback_used else (written.model or "the summary model")
        source = f"written on request by {writer}"
    wants, tried, promised = _lists(summary)
    return HandoffView(wants, tried, promised, source, at, through, note, reason)


def _turns_since(session: Session, conversation_id: int, after_id: int) -> list[ChatMessage]:
    rows = session.exec(
        select(Message)
        .where(
            Message.conversation_id == conversation_id,
            col(Message.id) > after_id,
            col(Message.private).is_(False),
            col(Message.role) != MessageRole.SYSTEM,
        )
        .order_by(col(Message.id))
    ).all()
    return [to_chat_message(row) for row in rows]


def write_handoff_summary(
    db: Engine, gateway: LLMGateway, settings: Settings, *, conversation_id: int, requested_by: int
) -> HandoffSummary | None:
    """Summarize the conversation now (blocking: run it off the event loop); None when it has no message yet,
    ``HandoffSummaryTimeout`` past the deadline. No database transaction stays open during the model call."""
    with Session(db, expire_on_commit=False) as session:
        compaction = latest_compaction(session, conversation_id)
        previous = compaction.summary if compaction else None
        turns = _turns_since(session, conversation_id, compaction.last_message_id if compaction else 0)
        session.commit()
    ids = [turn["id"] for turn in turns if isinstance(turn.get("id"), int)]
    if not ids and compaction is None:
        return None
    through = max(ids) if ids else compaction.last_message_id if compaction else 0
    writer = SummaryWriter(gateway, main_model=gateway.chat_model, override_model=settings.summary_model_override)
    material: list[ChatMessage] = list(turns)
    request = SummaryRequest(
        previous_summary=previous,
        pinned="",
        latest_ask=latest_customer_message(material),
        focus_topic=HANDOFF_FOCUS,
        as_of=datetime.now(UTC),
        max_tokens=HANDOFF_MAX_TOKENS,
        timezone=ZoneInfo(settings.timezone),
    )
    deadline = Deadline.after(settings.handoff_summary_deadline_s, setting=HANDOFF_SUMMARY_DEADLINE_SETTING)
    with within(deadline):
        draft = summarize_in_chunks(
            writer, material, 1, request, window_tokens=settings.context_length, fallback=_fallback
        )
    if draft.fallback_used and deadline.expired:  # a model was cut off, not down: it may well answer next time
        raise HandoffSummaryTimeout(deadline)
    usage = draft.usage
    record = HandoffSummary(
        conversation_id=conversation_id,
        through_message_id=through,
        summary=draft.text,
        model=draft.model,
        fallback_used=draft.fallback_used,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        usage_estimated=usage.estimated if usage else False,
        cost_usd=gateway.ledger.cost(draft.model, usage) if draft.model and usage else None,
        requested_by=requested_by,
    )
    with Session(db, expire_on_commit=False) as session:
        session.add(record)
        session.commit()
    return record


def _fallback(turns: Any, first_index: int, previous: str | None) -> str:
    return fallback_summary(turns, first_index=first_index, previous_summary=previous)
