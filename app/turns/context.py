"""The LLM context of a conversation, rebuilt from the transcript and its latest compaction.

The transcript (``messages``) is never edited. Compactions nest: each one covers the range of the one before it
plus the turns since, so the latest ``Compaction`` alone describes the context, which is the system prompt, the
messages before its range (the first exchange, until a second compaction takes it in), its notes, and the
messages after its range. Private staff notes never enter the context, nor do replies that were cut off (at the
reply cap or by the repetition guard, see ``app.llm.repetition``; marked by a ``CUT_REPLY_ACTION`` audit event): a
looping reply fed back to the model teaches it to loop again. The transcript keeps them.

Each context message carries the ``id`` of its row (and ``created_at``, and on request its stored compressor index),
and the notes message carries the id range it stands for under ``NOTES_KEY``, so the compressor's index ranges map
back to message ids; a staff member's reply carries ``author`` (``staff:<id>``), so a promise cited from it is
theirs. ``app.llm`` strips those keys before sending.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import String, cast, exists, or_
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from app.models import (
    AuditEvent,
    Compaction,
    ContextSegment,
    Conversation,
    Message,
    MessageAuthor,
    MessageRole,
    SegmentReason,
    segment_title,
)
from app.tools.conversation_search import RECALL_HINT
from compression import CompressionResult
from compression.assembly import NOTES_KEY, insert_notes, repair_tool_sequence
from compression.messages import ChatMessage

CUT_REPLY_ACTION = "reply.cut"
# Plain columns, not ORM objects: the context is rebuilt every turn and entity loading dominated its cost.
CONTEXT_COLUMNS = (
    col(Message.id),
    col(Message.role),
    col(Message.content),
    col(Message.tool_calls),
    col(Message.tool_call_id),
    col(Message.created_at),
    col(Message.author),
    col(Message.staff_id),
)


def to_chat_message(row: Any) -> ChatMessage:
    """One transcript row (a ``Message`` or a row of ``CONTEXT_COLUMNS``, with or without the index) in OpenAI chat
    format."""
    role = row.role
    chat: ChatMessage = {"role": role.value if hasattr(role, "value") else role, "content": row.content, "id": row.id}
    if row.tool_calls:
        chat["tool_calls"] = row.tool_calls
    if row.tool_call_id:
        chat["tool_call_id"] = row.tool_call_id
    chat["created_at"] = row.created_at.isoformat()
    if row.author == MessageAuthor.STAFF and row.staff_id is not None:
        chat["author"] = f"staff:{row.staff_id}"
    index = getattr(row, "compressor_index", None)
    if index is not None:
        chat["memdesk_index"] = index
    return chat


def latest_compaction(session: Session, conversation_id: int) -> Compaction | None:
    statement = (
        select(Compaction).where(Compaction.conversation_id == conversation_id).order_by(col(Compaction.id).desc())
    )
    return session.exec(statement.limit(1)).first()


def load_context(
    session: Session, conversation_id: int, system_prompt: str, *, with_index: bool = False
) -> list[ChatMessage]:
    """System prompt + transcript with the latest compaction's summary in place of the range it covers; with
    ``with_index``, each message carries its stored compressor index (for an engine that has not seen them yet:
    reading the index costs a JSON document per message, so it is not read every turn)."""
    compaction = latest_compaction(session, conversation_id)
    columns = (*CONTEXT_COLUMNS, col(Message.compressor_index)) if with_index else CONTEXT_COLUMNS
    statement = sa_select(*columns).where(
        col(Message.conversation_id) == conversation_id,
        col(Message.private).is_(False),
        col(Message.role) != MessageRole.SYSTEM,
        ~_was_cut(),
    )
    if compaction is not None:
        statement = statement.where(
            or_(col(Message.id) < compaction.first_message_id, col(Message.id) > compaction.last_message_id)
        )
    rows = session.execute(statement.order_by(col(Message.id))).all()
    system: ChatMessage = {"role": "system", "content": system_prompt}
    if compaction is None:
        messages = [system, *(to_chat_message(row) for row in rows)]
    else:
        assert compaction.first_message_id is not None
        head = [system, *(to_chat_message(r) for r in rows if r.id is not None and r.id < compaction.first_message_id)]
        tail = [to_chat_message(r) for r in rows if r.id is not None and r.id > compaction.last_message_id]
        messages = insert_notes(
            head,
            compaction.summary,
            tail,
            compaction.created_at.isoformat(),
            recall_hint=RECALL_HINT,  # as default_compressor framed them, so the rebuilt notes are identical
            first_message_id=compaction.first_message_id,
            last_message_id=compaction.last_message_id,
            compaction_id=compaction.id,
        )
    repaired, _, _ = repair_tool_sequence(messages)
    return repaired


def _was_cut() -> Any:
    """Whether the message row is a reply marked as cut off (in the same statement as the transcript, so the
    filter costs no round trip of its own)."""
    return exists().where(
        col(AuditEvent.action) == CUT_REPLY_ACTION,
        col(AuditEvent.target_type) == "message",
        col(AuditEvent.target_id) == cast(col(Message.id), String),
    )


def _covered_ids(message: ChatMessage) -> list[int]:
    """The message ids one context message stands for: its own row, or the range of the notes it holds."""
    record = message.get(NOTES_KEY)
    if isinstance(record, dict):
        return [
            value for value in (record.get("first_message_id"), record.get("last_message_id")) if isinstance(value, int)
        ]
    identifier = message.get("id")
    return [identifier] if isinstance(identifier, int) else []


def compacted_message_ids(context: list[ChatMessage], result: CompressionResult) -> tuple[int, int] | None:
    """The inclusive message-id range a compaction replaced, the previous notes' range included (None when it
    replaced no stored message)."""
    if result.compacted_range is None:
        return None
    start, end = result.compacted_range
    ids = [identifier for message in context[start:end] for identifier in _covered_ids(message)]
    return (min(ids), max(ids)) if ids else None


def current_segment(session: Session, conversation_id: int) -> ContextSegment | None:
    statement = (
        select(ContextSegment)
        .where(ContextSegment.conversation_id == conversation_id)
        .order_by(col(ContextSegment.number).desc())
    )
    return session.exec(statement.limit(1)).first()


def start_first_segment(session: Session, conversation: Conversation) -> ContextSegment:
    assert conversation.id is not None
    segment = ContextSegment(
        conversation_id=conversation.id,
        reason=SegmentReason.START,
        number=1,
        title=segment_title(1, SegmentReason.START),
    )
    session.add(segment)
    return segment


def record_compaction(
    session: Session,
    *,
    conversation_id: int,
    context: list[ChatMessage],
    result: CompressionResult,
    main_model: str,
    cost_usd: float | None,
) -> Compaction | None:
    """Persist the compaction overlay and open the next context segment; None when nothing stored was replaced."""
    id_range = compacted_message_ids(context, result)
    if id_range is None or result.summary is None:
        return None
    parent = current_segment(session, conversation_id)
    number = (parent.number if parent else 0) + 1
    end = result.compacted_range[1] if result.compacted_range else len(context)
    next_ids = [m["id"] for m in context[end:] if isinstance(m.get("id"), int)]
    segment = ContextSegment(
        conversation_id=conversation_id,
        parent_id=parent.id if parent else None,
        reason=SegmentReason.COMPRESSION,
        number=number,
        title=segment_title(number, SegmentReason.COMPRESSION),
        first_message_id=next_ids[0] if next_ids else None,
    )
    session.add(segment)
    session.flush()
    assert segment.id is not None
    usage = result.summary_usage
    compaction = Compaction(
        conversation_id=conversation_id,
        segment_id=segment.id,
        first_message_id=id_range[0],
        last_message_id=id_range[1],
        summary=result.summary,
        summary_model=result.summary_model,
        main_model=main_model,
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
        summary_prompt_tokens=usage.prompt_tokens if usage else None,
        summary_completion_tokens=usage.completion_tokens if usage else None,
        usage_estimated=usage.estimated if usage else False,
        cost_usd=cost_usd,
        fallback_used=result.fallback_used,
        trace_event=result.events[0] if result.events else {},
    )
    session.add(compaction)
    return compaction


def with_compaction_record(messages: list[ChatMessage], compaction: Compaction) -> list[ChatMessage]:
    """``messages`` whose notes message carries the id range of ``compaction``, as ``load_context`` would build it,
    so that a later compaction in the same turn covers that range too."""
    marked = []
    for message in messages:
        record = message.get(NOTES_KEY)
        if isinstance(record, dict):
            ids = {"first_message_id": compaction.first_message_id, "last_message_id": compaction.last_message_id}
            message = {**message, NOTES_KEY: {**record, **ids, "compaction_id": compaction.id}}
        marked.append(message)
    return marked


def mark_cut_reply(session: Session, message: Message, reason: str) -> None:
    """Mark a stored reply as cut off (at the reply cap or by the repetition guard): ``load_context`` leaves it out
    of every later context, and the console shows why."""
    assert message.id is not None
    session.add(
        AuditEvent(
            actor="bot",
            action=CUT_REPLY_ACTION,
            target_type="message",
            target_id=str(message.id),
            detail={"reason": reason, "conversation_id": message.conversation_id},
        )
    )
    session.commit()
