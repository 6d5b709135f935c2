"""What the conversation page shows, loaded in a fixed number of queries: the conversation and its customer, the
transcript, the handoff summary, who can be assigned; and single entries rendered for the live stream."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlmodel import Session, col, select

from app.console.handoff import HandoffView, handoff_view
from app.console.inbox import mark_read
from app.console.labels import known_labels, labels_of
from app.console.transcript import (
    ToolLine,
    TranscriptMessage,
    TranscriptPage,
    load_transcript,
    message_view,
    tool_lines,
)
from app.knowledge.citations import sources_by_message
from app.models import Conversation, ConversationStatus, Customer, Message, MessageRole, StaffMember

# How far back a tool result looks for the assistant message that called it.
CALL_LOOKBACK = 20


@dataclass(frozen=True)
class StaffOption:
    id: int
    name: str


@dataclass(frozen=True)
class ConversationState:
    conversation: Conversation
    customer: Customer
    assignee: str | None
    staff_options: list[StaffOption]
    labels: list[str] = field(default_factory=list)
    known_labels: list[str] = field(default_factory=list)  # suggestions for the add field

    @property
    def status(self) -> ConversationStatus:
        return self.conversation.status


@dataclass(frozen=True)
class ConversationPage:
    state: ConversationState
    transcript: TranscriptPage
    handoff: HandoffView


def load_state(session: Session, conversation: Conversation) -> ConversationState:
    customer = session.get(Customer, conversation.customer_id)
    assert customer is not None
    staff = session.exec(
        select(StaffMember).where(col(StaffMember.active).is_(True)).order_by(col(StaffMember.name))
    ).all()
    options = [StaffOption(member.id, member.name) for member in staff if member.id is not None]
    assignee = next((o.name for o in options if o.id == conversation.assigned_staff_id), None)
    assert conversation.id is not None
    held = labels_of(session, [conversation.id]).get(conversation.id, [])
    return ConversationState(conversation, customer, assignee, options, held, known_labels(session))


def load_page(
    session: Session, conversation: Conversation, *, staff_id: int, before_id: int | None = None
) -> ConversationPage:
    """Everything the page shows, the transcript from the page before ``before_id`` (the latest page without it)
    through the latest message; marks the conversation read by this staff member (commits)."""
    assert conversation.id is not None
    state = load_state(session, conversation)
    transcript = load_transcript(session, conversation.id, before_id=before_id)
    handoff = handoff_view(session, conversation.id)
    if transcript.last_message_id:
        mark_read(
            session, staff_id=staff_id, conversation_id=conversation.id, through_message_id=transcript.last_message_id
        )
    session.commit()
    return ConversationPage(state, transcript, handoff)


@dataclass(frozen=True)
class LiveEntry:
    """A message for the live stream: a new transcript entry, or the updated line of the call a result answers."""

    message: TranscriptMessage | None = None
    tool_line: ToolLine | None = None


def live_entry(session: Session, conversation_id: int, message_public_id: str) -> LiveEntry | None:
    """The entry of a message a live event announced (events name messages by their public id)."""
    found = session.exec(
        select(Message, StaffMember.name)
        .outerjoin(StaffMember, col(StaffMember.id) == col(Message.staff_id))
        .where(col(Message.public_id) == message_public_id, col(Message.conversation_id) == conversation_id)
    ).first()
    if found is None:
        return None
    message, staff_name = found
    if message.role == MessageRole.ASSISTANT and message.id is not None:
        sources = sources_by_message(session, [message.id]).get(message.id, ())
        return LiveEntry(message=message_view(message, staff_name, {}, sources))
    if message.role != MessageRole.TOOL or not message.tool_call_id:
        return LiveEntry(message=message_view(message, staff_name, {}))
    callers = session.exec(
        select(Message)
        .where(
            col(Message.conversation_id) == conversation_id,
            col(Message.id) < (message.id or 0),
            col(Message.role) == MessageRole.ASSISTANT,
        )
        .order_by(col(Message.id).desc())
        .limit(CALL_LOOKBACK)
    ).all()
    for caller in callers:
        for line in tool_lines(caller, {message.tool_call_id: message}):
            if line.call_id == message.tool_call_id:
                return LiveEntry(tool_line=line)
    return LiveEntry(message=message_view(message, staff_name, {}))
