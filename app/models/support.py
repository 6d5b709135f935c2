"""Customers, their conversations and the messages in them.

A message row is the permanent transcript: compaction overlays a summary on a range of message ids (see
``app.models.context``) but never deletes or edits messages. ``role`` is the OpenAI chat role the message is sent to
the LLM with; ``author`` says who actually wrote it (a customer, the bot, a staff member, the system), and
``private`` marks a staff member's internal note that the customer never sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import PUBLIC_ID_LENGTH, enum_type, json_type, new_public_id, utc_now
from compression.message_index import default_extractor, index_message
from compression.messages import ChatMessage

NAME_LENGTH = 200
EMAIL_LENGTH = 320
PHONE_LENGTH = 40
EXTERNAL_ID_LENGTH = 128
TOOL_CALL_ID_LENGTH = 128
FOCUS_KIND_LENGTH = 32
FOCUS_REF_LENGTH = 64
CUSTOMER_ID_PREFIX = "cus"
CONVERSATION_ID_PREFIX = "cnv"
MESSAGE_ID_PREFIX = "msg"
# SQLite hands a deleted row's id to the next insert unless the table uses AUTOINCREMENT; these ids key live state
# (event streams, context engines), so they must never come back.
NEVER_REUSE_IDS = {"sqlite_autoincrement": True}


def new_customer_public_id() -> str:
    return new_public_id(CUSTOMER_ID_PREFIX)


def new_conversation_public_id() -> str:
    return new_public_id(CONVERSATION_ID_PREFIX)


def new_message_public_id() -> str:
    return new_public_id(MESSAGE_ID_PREFIX)


class ConversationStatus(StrEnum):
    BOT = "bot"
    NEEDS_HUMAN = "needs_human"
    HUMAN = "human"
    CLOSED = "closed"


class MessageRole(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class MessageAuthor(StrEnum):
    CUSTOMER = "customer"
    BOT = "bot"
    STAFF = "staff"
    SYSTEM = "system"


# --- customers ---------------------------------------------------------------------------------------------------


class CustomerBase(SQLModel):
    # The shop's own id for this customer, once verified; None for anonymous widget visitors.
    external_id: str | None = Field(default=None, max_length=EXTERNAL_ID_LENGTH, unique=True)
    name: str | None = Field(default=None, max_length=NAME_LENGTH)
    email: str | None = Field(default=None, max_length=EMAIL_LENGTH, index=True)
    phone: str | None = Field(default=None, max_length=PHONE_LENGTH)


class Customer(CustomerBase, table=True):
    __tablename__ = "customers"
    __table_args__ = (sa.Index("ix_customers_public_id", "public_id", unique=True), NEVER_REUSE_IDS)

    id: int | None = Field(default=None, primary_key=True)
    # What visitor tokens and the admin API name the customer by.
    public_id: str = Field(default_factory=new_customer_public_id, max_length=PUBLIC_ID_LENGTH)
    created_at: datetime = Field(default_factory=utc_now)


# --- conversations -----------------------------------------------------------------------------------------------


class ConversationBase(SQLModel):
    title: str = Field(default="", max_length=NAME_LENGTH)


class Conversation(ConversationBase, table=True):
    __tablename__ = "conversations"
    __table_args__ = (
        sa.Index("ix_conversations_public_id", "public_id", unique=True),
        # The console's inbox reads each status newest first (``app.console.inbox``).
        sa.Index("ix_conversations_status_updated_at_id", "status", "updated_at", "id"),
        # The overview's outcome figures read the conversations started in a window (``app.outcomes.figures``).
        sa.Index("ix_conversations_created_at", "created_at"),
        NEVER_REUSE_IDS,
    )

    id: int | None = Field(default=None, primary_key=True)
    public_id: str = Field(default_factory=new_conversation_public_id, max_length=PUBLIC_ID_LENGTH)
    customer_id: int = Field(foreign_key="customers.id", index=True, ondelete="CASCADE")
    status: ConversationStatus = Field(
        default=ConversationStatus.BOT, sa_type=enum_type(ConversationStatus), index=True
    )
    assigned_staff_id: int | None = Field(default=None, foreign_key="staff_members.id", index=True, ondelete="SET NULL")
    # The last message the conclusion sync covered (``app.models.sync``); None before the first sync.
    synced_through_message_id: int | None = None
    # What the conversation is about (``app.playbooks.focus``): a follow-up without a number means this one.
    focus_kind: str | None = Field(default=None, max_length=FOCUS_KIND_LENGTH)
    focus_ref: str | None = Field(default=None, max_length=FOCUS_REF_LENGTH)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now, sa_column_kwargs={"onupdate": utc_now})


class ConversationPublic(ConversationBase):
    """A conversation as the API shows it, named by its public id."""

    id: str = Field(description="The conversation's public id")
    status: ConversationStatus
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationPublic:
        return cls(
            id=conversation.public_id,
            title=conversation.title,
            status=conversation.status,
            created_at=conversation.created_at,
            updated_at=conversation.updated_at,
        )


# --- messages ----------------------------------------------------------------------------------------------------


class MessageBase(SQLModel):
    role: MessageRole = Field(sa_type=enum_type(MessageRole))
    content: str | None = Field(default=None, sa_type=sa.Text)
    # OpenAI chat format: [{"id": ..., "type": "function", "function": {"name": ..., "arguments": "<json>"}}]
    tool_calls: list[dict[str, Any]] | None = Field(default=None, sa_type=json_type(nullable=True))
    tool_call_id: str | None = Field(default=None, max_length=TOOL_CALL_ID_LENGTH)
    author: MessageAuthor = Field(sa_type=enum_type(MessageAuthor))
    private: bool = False


class Message(MessageBase, table=True):
    __tablename__ = "messages"
    __table_args__ = (
        # Transcripts are always read in id order within one conversation.
        sa.Index("ix_messages_conversation_id_id", "conversation_id", "id"),
        sa.Index("ix_messages_public_id", "public_id", unique=True),
        # The overview's token totals read only this: the model's replies, without visiting each message's row.
        sa.Index(
            "ix_messages_usage",
            "prompt_tokens",
            "completion_tokens",
            "usage_estimated",
            sqlite_where=sa.text("prompt_tokens IS NOT NULL"),
            postgresql_where=sa.text("prompt_tokens IS NOT NULL"),
        ),
        NEVER_REUSE_IDS,
    )

    id: int | None = Field(default=None, primary_key=True)
    # What the widget's API and events name the message by. Random rather than an encoding of ``id``: a keyed
    # encoding would still be one secret away from the message count and order, and would change with the key; a
    # stored random id tells nothing, and the paging cursor finds its row through the unique index.
    public_id: str = Field(default_factory=new_message_public_id, max_length=PUBLIC_ID_LENGTH)
    conversation_id: int = Field(foreign_key="conversations.id", ondelete="CASCADE")
    staff_id: int | None = Field(default=None, foreign_key="staff_members.id", ondelete="SET NULL")
    created_at: datetime = Field(default_factory=utc_now)
    # Usage reported by the LLM API for the request that produced this (assistant) message.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # The endpoint reported no usage: the counts above are memdesk's estimate from the texts.
    usage_estimated: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    # What a compaction does with this message (reduced tool output, identifiers), done once when it is stored, so
    # that a process that did not see it arrive (a restart, another worker) does not do it again.
    compressor_index: dict[str, Any] | None = Field(default=None, sa_type=json_type(nullable=True))

    @classmethod
    def tool_result(cls, conversation_id: int, call_id: str, content: str) -> Message:
        """The stored result of one tool call, answering the assistant message that made it."""
        return cls(
            conversation_id=conversation_id,
            role=MessageRole.TOOL,
            author=MessageAuthor.SYSTEM,
            content=content,
            tool_call_id=call_id,
        )


@sa.event.listens_for(Message, "before_insert")
def _index_for_compaction(mapper: Any, connection: Any, message: Message) -> None:
    # At insert, the one moment every stored message passes through, whichever code path wrote it.
    if message.compressor_index is None and not message.private and message.role != MessageRole.SYSTEM:
        chat: ChatMessage = {"role": message.role.value, "content": message.content}
        if message.tool_calls:
            chat["tool_calls"] = message.tool_calls  # type: ignore[typeddict-item]
        message.compressor_index = index_message(chat, default_extractor())


class SourcePublic(SQLModel):
    """A knowledge chunk a reply cites, as its copy in ``message_sources`` keeps it."""

    marker: int = Field(description="The reply's [n] marker that cites it")
    title: str
    heading_path: str = ""
    url: str | None = Field(default=None, description="An http(s) address, when the source has one")


class MessagePublic(SQLModel):
    """A message as the API and the live events show it; ``customer_visible`` is the one rule for what a customer
    may see: their own and the replies' text, never private notes, tool traffic or empty assistant turns. It is
    named by its random public id (the integer key would tell how many messages the desk has stored)."""

    id: str = Field(description="The message's public id")
    conversation_id: str = Field(description="The conversation's public id")
    role: MessageRole
    author: MessageAuthor
    content: str
    private: bool = False
    has_tool_calls: bool = False
    created_at: datetime
    staff_name: str | None = Field(default=None, description="The staff member's display name on their messages")
    sources: list[SourcePublic] = Field(default_factory=list, description="The knowledge a bot reply cites")

    @classmethod
    def of(
        cls,
        message: Message,
        *,
        conversation_public_id: str,
        staff_name: str | None = None,
        sources: Sequence[SourcePublic] = (),
    ) -> MessagePublic:
        return cls(
            id=message.public_id,
            conversation_id=conversation_public_id,
            role=message.role,
            author=message.author,
            content=message.content or "",
            private=message.private,
            has_tool_calls=bool(message.tool_calls),
            created_at=message.created_at,
            staff_name=staff_name if message.author == MessageAuthor.STAFF else None,
            sources=list(sources),
        )

    @property
    def customer_visible(self) -> bool:
        return (
            not self.private and self.role in (MessageRole.USER, MessageRole.ASSISTANT) and bool(self.content.strip())
        )
