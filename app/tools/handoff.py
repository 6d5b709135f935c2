"""Handing the conversation over to a staff member.

``transfer_to_human`` sets the conversation to ``needs_human`` (the bot stops replying: the result has
``handed_off=True``), and records an audit event that carries the model's summary for the staff member who picks it
up (``hand_over``, which a turn past its deadline uses too). It needs no confirmation: asking for a person must
always work.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from sqlmodel import Session

from app.console.audit import record_audit_event
from app.knowledge.gaps import record_handoff_gap
from app.models import Conversation, ConversationStatus, utc_now
from app.models.outcomes import HandoffReason
from app.outcomes.recording import record_handoff
from app.routing.assign import route
from app.tools.registry import ErrorCode, ToolContext, ToolError
from app.tools.typed import ToolArguments, TypedTool

MAX_SUMMARY_LENGTH = 2_000
HANDOFF_ACTION = "conversation.handoff"
# A conversation a human already owns (or is waiting for) keeps its status.
STATUSES_KEPT = (ConversationStatus.NEEDS_HUMAN, ConversationStatus.HUMAN)


# Handoffs that say nothing about the knowledge: the customer wanted a person, or the model was unreachable.
NOT_KNOWLEDGE_GAPS = frozenset({HandoffReason.CUSTOMER_REQUEST, HandoffReason.MODEL_FAILURE})


def hand_over(
    session: Session,
    conversation: Conversation,
    *,
    actor: str,
    summary: str,
    reason: str | None,
    customer_id: int,
    category: HandoffReason = HandoffReason.OTHER,
    knowledge_gap: bool = True,
) -> None:
    """Put ``conversation`` in the people's queue (unless one has it already) with the note they read first, the
    audit event the console shows, and the handoff in its outcome under ``category``; the caller commits. The tool
    and a failed turn both hand over here. ``knowledge_gap`` False keeps the handoff out of the knowledge gaps
    whatever its category."""
    assert conversation.id is not None
    previous = conversation.status
    if previous not in STATUSES_KEPT:
        conversation.status = ConversationStatus.NEEDS_HUMAN
        record_handoff(session, conversation.id, category)
        if knowledge_gap and category not in NOT_KNOWLEDGE_GAPS:
            record_handoff_gap(session, conversation.id)
        if conversation.assigned_staff_id is None:
            conversation.assigned_staff_id = route(session, conversation.id)
    conversation.updated_at = utc_now()
    session.add(conversation)
    record_audit_event(
        session,
        actor=actor,
        action=HANDOFF_ACTION,
        target_type="conversation",
        target_id=conversation.id,
        detail={"summary": summary, "reason": reason, "previous_status": str(previous), "customer_id": customer_id},
    )


class TransferArguments(ToolArguments):
    summary: str = Field(
        min_length=10,
        max_length=MAX_SUMMARY_LENGTH,
        description="For the human agent: who the customer is, what they want, what was already tried or "
        "promised, with order numbers and amounts.",
    )
    reason: str | None = Field(
        default=None, max_length=200, description="Why a human is needed, e.g. 'customer asked for a person'."
    )
    # Strings rather than the enum: the tools' arguments are validated strictly, and the model sends strings.
    category: Literal[
        "customer_request", "missing_knowledge", "policy", "tool_failure", "model_failure", "loop_guard", "other"
    ] = Field(
        default="other",
        description="The kind of reason: customer_request (they asked for a person), missing_knowledge (no tool "
        "or article answers it), policy (beyond what the shop's policy lets you do), tool_failure (a tool kept "
        "failing), other.",
    )


class TransferToHumanTool(TypedTool[TransferArguments]):
    name = "transfer_to_human"
    description = (
        "Hand the conversation over to a human support agent, with a summary for them. Use it when the customer "
        "asks for a person, when the request is outside what the tools allow, or when the customer is upset. "
        "After it, tell the customer a person will reply here, and stop."
    )
    arguments_model = TransferArguments
    hands_off_to_human = True

    def run(self, arguments: TransferArguments, context: ToolContext) -> dict[str, Any]:
        session = context.session
        conversation = session.get(Conversation, context.conversation_id) if context.conversation_id else None
        if conversation is None or conversation.customer_id != context.customer_id:
            raise ToolError(
                ErrorCode.NO_CONVERSATION,
                "This chat has no conversation record to hand over. Tell the customer to contact support directly.",
            )
        hand_over(
            session,
            conversation,
            actor=context.actor,
            summary=arguments.summary,
            reason=arguments.reason,
            customer_id=context.customer_id,
            category=HandoffReason(arguments.category),
        )
        session.commit()
        return {
            "status": str(conversation.status),
            "message": "The conversation is now with the human support team. Tell the customer that a person "
            "will reply in this chat (Monday-Friday 8 am-8 pm, Saturday 10 am-4 pm US Eastern), then stop.",
        }
