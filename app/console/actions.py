"""What staff do to a conversation: take over, reply, private note, hand back, close, reopen, assign.

Each action is one short transaction (the change and its audit event, actor ``staff:<id>``), then live events on
the conversation's channel, which the widget, every console watching it and the inbox receive. Call them on the
event loop (the broker and the agent's scheduling live there).

Status changes are conditional updates (``UPDATE … WHERE status IN …``), so two people acting at once cannot both
win: a second takeover finds the conversation already taken and gets ``ActionConflict`` naming who has it.

Taking over writes a notice the customer sees ("Sam Rivera joined the conversation.") and silences the bot.
Replying to a conversation the bot still has takes it over first. A private note is stored with ``private`` set and
the ``system`` role, each of which alone keeps it from the customer (``MessagePublic.customer_visible``) and from the
LLM (``app.turns.context.load_context``). Handing back gives the conversation to the bot and, when the
customer's latest message has no answer yet, schedules a turn to answer it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select as sa_select
from sqlalchemy import update
from sqlmodel import Session, col, func, select

from app.console.audit import record_audit_event
from app.console.inbox import is_reply
from app.console.labels import LabelError, add_label, remove_label
from app.console.permissions import Staff
from app.live.broker import EventBroker
from app.live.messages import store_message
from app.models import Conversation, ConversationStatus, Message, MessageAuthor, MessageRole, StaffMember, utc_now
from app.outcomes.recording import record_close, record_reopen
from app.routing.assign import serve_queue_now
from app.turns.scheduler import TurnScheduler

JOINED_NOTICE = "{name} joined the conversation."
MAX_REPLY_CHARS = 8_000
TAKEABLE = (ConversationStatus.BOT, ConversationStatus.NEEDS_HUMAN)
HANDABLE_BACK = (ConversationStatus.HUMAN, ConversationStatus.NEEDS_HUMAN)


# Labels changed: the conversation's header and every inbox reload; the customer's stream never carries it.
LABELS_EVENT = "conversation.labels"


class ActionError(Exception):
    """An action that cannot be done; ``status_code`` is the HTTP answer, the message says why."""

    status_code = 400


class ConversationNotFound(ActionError):
    status_code = 404


class InvalidLabel(ActionError):
    status_code = 422


class LabelNotFound(ActionError):
    status_code = 404


class ActionConflict(ActionError):
    status_code = 409


def find_conversation(session: Session, public_id: str) -> Conversation:
    conversation = session.exec(select(Conversation).where(Conversation.public_id == public_id)).first()
    if conversation is None:
        session.rollback()
        raise ConversationNotFound("No such conversation; it may have been erased.")
    return conversation


def _audit(session: Session, staff: Staff, action: str, conversation_id: int, **detail: Any) -> None:
    record_audit_event(
        session,
        actor=staff.actor,
        action=f"console.{action}",
        target_type="conversation",
        target_id=conversation_id,
        detail=detail,
    )


def _set_status(session: Session, conversation_id: int, allowed: tuple[ConversationStatus, ...], **values: Any) -> bool:
    statement = (
        update(Conversation)
        .where(col(Conversation.id) == conversation_id, col(Conversation.status).in_(allowed))
        .values(updated_at=utc_now(), **values)
    )
    return bool(session.execute(statement).rowcount)  # type: ignore[attr-defined]


def _holder(session: Session, conversation_id: int) -> tuple[ConversationStatus, str | None]:
    row = session.execute(
        sa_select(col(Conversation.status), col(StaffMember.name))
        .outerjoin(StaffMember, col(StaffMember.id) == col(Conversation.assigned_staff_id))
        .where(col(Conversation.id) == conversation_id)
    ).one()
    return ConversationStatus(row[0]), row[1]


def _conflict(session: Session, conversation_id: int) -> ActionConflict:
    status, holder = _holder(session, conversation_id)
    session.rollback()
    if status == ConversationStatus.CLOSED:
        return ActionConflict("This conversation is closed; reopen it first.")
    if status == ConversationStatus.HUMAN:
        return ActionConflict(f"{holder or 'Someone else'} has already taken over this conversation.")
    return ActionConflict(f"This conversation is now {status.value.replace('_', ' ')}; reload to see why.")


def take_over(session: Session, broker: EventBroker, staff: Staff, conversation: Conversation) -> None:
    assert conversation.id is not None
    values = {"status": ConversationStatus.HUMAN, "assigned_staff_id": staff.id}
    if not _set_status(session, conversation.id, TAKEABLE, **values):
        raise _conflict(session, conversation.id)
    conversation_id, previous_status = conversation.id, conversation.status.value
    store_message(
        session,
        broker,
        conversation,
        Message(
            conversation_id=conversation.id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.SYSTEM,
            staff_id=staff.id,
            content=JOINED_NOTICE.format(name=staff.name),
        ),
        alongside=lambda _: _audit(session, staff, "take_over", conversation_id, previous_status=previous_status),
    )
    conversation.status, conversation.assigned_staff_id = ConversationStatus.HUMAN, staff.id
    broker.publish(conversation.id, "conversation.status", {"status": "human", "staff_name": staff.name})


def _checked_text(text: str) -> str:
    clean = text.strip()
    if not clean:
        raise ActionError("The message is empty; type something.")
    if len(clean) > MAX_REPLY_CHARS:
        raise ActionError(f"Messages can be at most {MAX_REPLY_CHARS} characters; this one has {len(clean)}.")
    return clean


def reply(session: Session, broker: EventBroker, staff: Staff, conversation: Conversation, text: str) -> Message:
    """Send the customer a message as this staff member (taking the conversation over from the bot first)."""
    assert conversation.id is not None
    conversation_id = conversation.id
    clean = _checked_text(text)
    if conversation.status == ConversationStatus.CLOSED:
        raise ActionConflict("This conversation is closed; reopen it first.")
    if conversation.status in TAKEABLE:
        take_over(session, broker, staff, conversation)
    _bump(session, conversation.id)
    return store_message(
        session,
        broker,
        conversation,
        Message(
            conversation_id=conversation.id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.STAFF,
            staff_id=staff.id,
            content=clean,
        ),
        staff_name=staff.name,
        alongside=lambda message: _audit(session, staff, "reply", conversation_id, message_id=message.id),
    )


def add_note(session: Session, broker: EventBroker, staff: Staff, conversation: Conversation, text: str) -> Message:
    """A note for staff only (see the module docstring for why it never reaches the customer or the LLM)."""
    assert conversation.id is not None
    conversation_id = conversation.id
    return store_message(
        session,
        broker,
        conversation,
        Message(
            conversation_id=conversation.id,
            role=MessageRole.SYSTEM,
            author=MessageAuthor.STAFF,
            staff_id=staff.id,
            private=True,
            content=_checked_text(text),
        ),
        staff_name=staff.name,
        alongside=lambda note: _audit(session, staff, "note", conversation_id, message_id=note.id),
    )


def _bump(session: Session, conversation_id: int) -> None:
    session.execute(update(Conversation).where(col(Conversation.id) == conversation_id).values(updated_at=utc_now()))


def awaits_answer(session: Session, conversation_id: int) -> bool:
    """Whether the customer's latest message has no answer from the bot or a person after it."""

    def latest(*conditions: Any) -> int | None:
        statement = sa_select(func.max(Message.id)).where(col(Message.conversation_id) == conversation_id, *conditions)
        value = session.execute(statement).scalar()
        return int(value) if value is not None else None

    customer = latest(col(Message.author) == MessageAuthor.CUSTOMER)
    answer = latest(is_reply())
    return customer is not None and (answer is None or customer > answer)


def hand_back(
    session: Session, broker: EventBroker, turns: TurnScheduler, staff: Staff, conversation: Conversation
) -> bool:
    """Give the conversation back to the bot; True when the bot was asked to answer a waiting message."""
    assert conversation.id is not None
    if not _set_status(session, conversation.id, HANDABLE_BACK, status=ConversationStatus.BOT):
        raise _conflict_for_hand_back(session, conversation.id)
    _audit(session, staff, "hand_back", conversation.id, previous_status=conversation.status.value)
    waiting = awaits_answer(session, conversation.id)
    session.commit()
    conversation.status = ConversationStatus.BOT
    broker.publish(conversation.id, "conversation.status", {"status": "bot"})
    serve_queue_now(session, broker)  # a slot freed
    if waiting:
        turns.schedule_turn(conversation.id)
    return waiting


def _conflict_for_hand_back(session: Session, conversation_id: int) -> ActionConflict:
    status, _ = _holder(session, conversation_id)
    session.rollback()
    if status == ConversationStatus.BOT:
        return ActionConflict("The bot already has this conversation.")
    return ActionConflict("This conversation is closed; reopen it first.")


def close(session: Session, broker: EventBroker, staff: Staff, conversation: Conversation) -> None:
    assert conversation.id is not None
    open_statuses = tuple(status for status in ConversationStatus if status != ConversationStatus.CLOSED)
    previous_status = conversation.status  # the update below also changes the loaded row
    if not _set_status(session, conversation.id, open_statuses, status=ConversationStatus.CLOSED):
        session.rollback()
        raise ActionConflict("This conversation is already closed.")
    _audit(session, staff, "close", conversation.id, previous_status=previous_status.value)
    record_close(session, conversation.id, previous_status)
    session.commit()
    conversation.status = ConversationStatus.CLOSED
    broker.publish(conversation.id, "conversation.status", {"status": "closed"})
    serve_queue_now(session, broker)  # a slot freed


def reopen(session: Session, broker: EventBroker, staff: Staff, conversation: Conversation) -> None:
    """Reopen a closed conversation with the person who reopened it in charge (the bot stays silent until a hand
    back), assigned to them unless someone else is."""
    assert conversation.id is not None
    assignee = conversation.assigned_staff_id or staff.id
    values = {"status": ConversationStatus.HUMAN, "assigned_staff_id": assignee}
    if not _set_status(session, conversation.id, (ConversationStatus.CLOSED,), **values):
        session.rollback()
        raise ActionConflict("This conversation is not closed.")
    _audit(session, staff, "reopen", conversation.id)
    record_reopen(session, conversation.id)
    session.commit()
    conversation.status, conversation.assigned_staff_id = ConversationStatus.HUMAN, assignee
    broker.publish(conversation.id, "conversation.status", {"status": "human"})


def assign(
    session: Session, broker: EventBroker, staff: Staff, conversation: Conversation, assigned_staff_id: int | None
) -> str | None:
    """Assign the conversation to an active staff member (None: to nobody); returns their name."""
    assert conversation.id is not None
    name = None
    if assigned_staff_id is not None:
        assignee = session.get(StaffMember, assigned_staff_id)
        if assignee is None or not assignee.active:
            session.rollback()
            raise ActionError("Choose an active staff member.")
        name = assignee.name
    session.execute(
        update(Conversation)
        .where(col(Conversation.id) == conversation.id)
        .values(assigned_staff_id=assigned_staff_id, updated_at=utc_now())
    )
    _audit(session, staff, "assign", conversation.id, assigned_staff_id=assigned_staff_id)
    session.commit()
    conversation.assigned_staff_id = assigned_staff_id
    broker.publish(conversation.id, "conversation.assigned", {"staff_name": name})
    return name


def label(session: Session, broker: EventBroker, staff: Staff, conversation: Conversation, text: str) -> str:
    """Put a label on the conversation; every open inbox shows it."""
    assert conversation.id is not None
    try:
        added = add_label(session, conversation.id, text, staff.id)
    except LabelError as error:
        session.rollback()
        raise InvalidLabel(str(error)) from error
    _audit(session, staff, "label", conversation.id, label=added)
    session.commit()
    broker.publish(conversation.id, LABELS_EVENT, {})
    return added


def unlabel(session: Session, broker: EventBroker, staff: Staff, conversation: Conversation, text: str) -> None:
    assert conversation.id is not None
    if not remove_label(session, conversation.id, text):
        session.rollback()
        raise LabelNotFound("The conversation has no such label.")
    _audit(session, staff, "unlabel", conversation.id, label=text)
    session.commit()
    broker.publish(conversation.id, LABELS_EVENT, {})
