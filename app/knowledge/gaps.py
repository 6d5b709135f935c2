"""Content gaps recorded when a conversation goes to a person without the knowledge having answered anything.

``record_handoff_gap`` runs in the handoff's transaction. It records the customer's latest question when no bot
reply of the conversation cited a source and the conversation holds no open gap yet (a search that found nothing
good enough already recorded one). The caller leaves out handoffs that say nothing about the knowledge (the
customer asked for a person, the model could not be reached: ``app.tools.handoff.NOT_KNOWLEDGE_GAPS``).
"""

from __future__ import annotations

from sqlalchemy import exists
from sqlmodel import Session, col, select

from app.models import GapReason, GapStatus, KnowledgeGap, Message, MessageAuthor, MessageSource

QUESTION_CHARS = 2_000  # the gap page shows questions, not whole messages


def record_handoff_gap(session: Session, conversation_id: int) -> KnowledgeGap | None:
    if _cited_anything(session, conversation_id) or _has_open_gap(session, conversation_id):
        return None
    question = session.exec(
        select(Message)
        .where(
            col(Message.conversation_id) == conversation_id,
            col(Message.author) == MessageAuthor.CUSTOMER,
            col(Message.private).is_(False),
        )
        .order_by(col(Message.id).desc())
        .limit(1)
    ).first()
    if question is None or not (question.content or "").strip():
        return None
    gap = KnowledgeGap(
        conversation_id=conversation_id,
        message_id=question.id,
        question=(question.content or "").strip()[:QUESTION_CHARS],
        reason=GapReason.HANDOFF_WITHOUT_SOURCE,
    )
    session.add(gap)
    return gap


def _cited_anything(session: Session, conversation_id: int) -> bool:
    cited = exists().where(
        col(MessageSource.message_id) == col(Message.id), col(Message.conversation_id) == conversation_id
    )
    return bool(session.exec(select(cited)).one())


def _has_open_gap(session: Session, conversation_id: int) -> bool:
    open_gap = exists().where(
        col(KnowledgeGap.conversation_id) == conversation_id, col(KnowledgeGap.status) == GapStatus.OPEN
    )
    return bool(session.exec(select(open_gap)).one())
