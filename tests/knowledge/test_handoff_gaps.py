"""A conversation handed to a person before the knowledge answered anything leaves a content gap with the
customer's question; one the customer asked to hand over, or that already has an open gap, does not."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.models import (
    Conversation,
    ConversationStatus,
    GapReason,
    KnowledgeGap,
    Message,
    MessageAuthor,
    MessageRole,
    MessageSource,
)
from app.models.outcomes import HandoffReason
from app.tools.handoff import hand_over
from tests.support.rows import add_customer_conversation


def _conversation_with_question(session: Session, question: str) -> tuple[int, Conversation]:
    customer_id, conversation_id = add_customer_conversation(session)
    session.add(
        Message(conversation_id=conversation_id, role=MessageRole.USER, author=MessageAuthor.CUSTOMER, content=question)
    )
    session.commit()
    conversation = session.get(Conversation, conversation_id)
    assert conversation is not None
    return customer_id, conversation


def _hand_over(session: Session, customer_id: int, conversation: Conversation, category: HandoffReason) -> None:
    hand_over(
        session,
        conversation,
        actor="bot",
        summary="Needs a person.",
        reason=None,
        customer_id=customer_id,
        category=category,
    )
    session.commit()


def test_a_handoff_without_any_cited_source_records_the_question(sqlite_engine: Engine) -> None:
    with Session(sqlite_engine) as session:
        customer_id, conversation = _conversation_with_question(session, "Do you ship live plants to Iceland?")
        _hand_over(session, customer_id, conversation, HandoffReason.MISSING_KNOWLEDGE)
        gap = session.exec(select(KnowledgeGap)).one()
        assert (gap.question, gap.reason) == ("Do you ship live plants to Iceland?", GapReason.HANDOFF_WITHOUT_SOURCE)


@pytest.mark.parametrize("category", [HandoffReason.CUSTOMER_REQUEST, HandoffReason.MODEL_FAILURE])
def test_a_handoff_that_says_nothing_about_the_knowledge_records_no_gap(
    sqlite_engine: Engine, category: HandoffReason
) -> None:
    with Session(sqlite_engine) as session:
        customer_id, conversation = _conversation_with_question(session, "Can I talk to someone?")
        _hand_over(session, customer_id, conversation, category)
        assert session.exec(select(KnowledgeGap)).all() == []


def test_a_conversation_whose_reply_cited_a_source_records_no_gap(sqlite_engine: Engine) -> None:
    with Session(sqlite_engine) as session:
        customer_id, conversation = _conversation_with_question(session, "How long do refunds take?")
        reply = Message(
            conversation_id=conversation.id or 0,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.BOT,
            content="Five days [1].",
        )
        session.add(reply)
        session.flush()
        session.add(MessageSource(message_id=reply.id or 0, marker=1, title="Refunds"))
        session.commit()
        _hand_over(session, customer_id, conversation, HandoffReason.POLICY)
        assert session.exec(select(KnowledgeGap)).all() == []


def test_an_open_gap_of_the_conversation_is_not_recorded_twice(sqlite_engine: Engine) -> None:
    with Session(sqlite_engine) as session:
        customer_id, conversation = _conversation_with_question(session, "Is there a warranty on used phones?")
        _hand_over(session, customer_id, conversation, HandoffReason.OTHER)
        conversation.status = ConversationStatus.BOT  # the person handed it back
        session.add(conversation)
        session.commit()
        _hand_over(session, customer_id, conversation, HandoffReason.OTHER)
        assert len(session.exec(select(KnowledgeGap)).all()) == 1
