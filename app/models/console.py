"""Console staff (the humans who supervise the bot), their sign-in state, and the audit trail.

An audit event is written for every write action, whoever performed it: a tool acting for a customer (actor
``"bot"``), a staff member (actor ``"staff:<id>"``), an administrator or a background job. ``detail`` holds the
arguments and outcome as JSON so the trail can be read without joining other tables.

Staff sign-in state lives here too:

- ``StaffSession``: one row per signed-in browser. The cookie carries a signed random token; only its SHA-256 is
  stored, so a copy of the database cannot be replayed as a cookie. Signing out deletes the row, and a row unused
  for the idle timeout no longer counts. Its ``csrf_token`` is the synchronizer token every form sends back.
- ``LoginThrottle``: failed sign-ins per key (an email or a client address) within a window, and a lock time.
- ``ConversationRead``: how far each staff member has read each conversation (the inbox's unread counts).
- ``HandoffSummary``: a summary written on demand for the staff member who picks a conversation up.
- ``ConversationLabel``: a label staff put on a conversation ("vip", "damaged-item"), to find and filter by.
- ``DeskSetting``: a setting supervisors change in the console (whether routing is on), by key.
- ``CannedReply``: a saved answer staff insert with ``/`` in the composer: the team's, or one member's own.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import enum_type, json_type, utc_now

STAFF_NAME_LENGTH = 200
STAFF_EMAIL_LENGTH = 320
PASSWORD_HASH_LENGTH = 255
AUDIT_FIELD_LENGTH = 64
TOKEN_DIGEST_LENGTH = 64  # a SHA-256 hex digest
CSRF_TOKEN_LENGTH = 64
THROTTLE_KEY_LENGTH = 400
MODEL_NAME_LENGTH = 200


class StaffRole(StrEnum):
    AGENT = "agent"
    SUPERVISOR = "supervisor"
    ADMIN = "admin"


class Availability(StrEnum):
    """Whether a staff member takes new conversations: routing gives handoffs to ``online`` members only."""

    ONLINE = "online"
    AWAY = "away"
    OFFLINE = "offline"


DEFAULT_CAPACITY = 3


class StaffMemberBase(SQLModel):
    email: str = Field(max_length=STAFF_EMAIL_LENGTH, unique=True)
    name: str = Field(max_length=STAFF_NAME_LENGTH)
    role: StaffRole = Field(default=StaffRole.AGENT, sa_type=enum_type(StaffRole))
    active: bool = True


class StaffMember(StaffMemberBase, table=True):
    __tablename__ = "staff_members"

    id: int | None = Field(default=None, primary_key=True)
    password_hash: str = Field(max_length=PASSWORD_HASH_LENGTH)
    created_at: datetime = Field(default_factory=utc_now)
    # How the console tells this member that a customer waits: a browser notification, a sound (the unread count
    # in the tab title and icon is always on).
    notify_desktop: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    notify_sound: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    # Routing (``app.routing``): whether they take handoffs now, how many open conversations at most, and when
    # they were last given one (the round robin's order).
    availability: Availability = Field(
        default=Availability.OFFLINE,
        sa_type=enum_type(Availability),
        sa_column_kwargs={"server_default": Availability.OFFLINE.value},
    )
    capacity: int = Field(default=DEFAULT_CAPACITY, sa_column_kwargs={"server_default": str(DEFAULT_CAPACITY)})
    last_routed_at: datetime | None = None


class AuditEvent(SQLModel, table=True):
    __tablename__ = "audit_events"

    id: int | None = Field(default=None, primary_key=True)
    actor: str = Field(max_length=AUDIT_FIELD_LENGTH)
    action: str = Field(max_length=AUDIT_FIELD_LENGTH, index=True)
    target_type: str = Field(max_length=AUDIT_FIELD_LENGTH)
    target_id: str = Field(max_length=AUDIT_FIELD_LENGTH)
    detail: dict[str, Any] = Field(default_factory=dict, sa_type=json_type())
    created_at: datetime = Field(default_factory=utc_now, index=True)


class StaffSession(SQLModel, table=True):
    __tablename__ = "staff_sessions"

    id: int | None = Field(default=None, primary_key=True)
    token_digest: str = Field(max_length=TOKEN_DIGEST_LENGTH, unique=True)
    staff_id: int = Field(foreign_key="staff_members.id", index=True, ondelete="CASCADE")
    csrf_token: str = Field(max_length=CSRF_TOKEN_LENGTH)
    created_at: datetime = Field(default_factory=utc_now)
    last_seen_at: datetime = Field(default_factory=utc_now)


class LoginThrottle(SQLModel, table=True):
    __tablename__ = "login_throttles"

    key: str = Field(primary_key=True, max_length=THROTTLE_KEY_LENGTH)
    failures: int = 0
    window_started_at: datetime = Field(default_factory=utc_now)
    locked_until: datetime | None = None


class ConversationRead(SQLModel, table=True):
    __tablename__ = "conversation_reads"

    staff_id: int = Field(foreign_key="staff_members.id", primary_key=True, ondelete="CASCADE")
    conversation_id: int = Field(foreign_key="conversations.id", primary_key=True, ondelete="CASCADE")
    last_read_message_id: int = 0
    read_at: datetime = Field(default_factory=utc_now)


class HandoffSummary(SQLModel, table=True):
    __tablename__ = "handoff_summaries"

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = Field(foreign_key="conversations.id", index=True, ondelete="CASCADE")
    # The newest message the summary has read (a plain id: the transcript is never edited).
    through_message_id: int
    summary: str = Field(sa_type=sa.Text)
    model: str | None = Field(default=None, max_length=MODEL_NAME_LENGTH)
    fallback_used: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # The endpoint reported no usage: the counts are estimated.
    usage_estimated: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    cost_usd: float | None = None
    requested_by: int | None = Field(default=None, foreign_key="staff_members.id", ondelete="SET NULL")
    created_at: datetime = Field(default_factory=utc_now)


CANNED_SHORTCUT_LENGTH = 32
CANNED_BODY_LENGTH = 4000


class CannedReply(SQLModel, table=True):
    __tablename__ = "canned_replies"

    id: int | None = Field(default=None, primary_key=True)
    shortcut: str = Field(max_length=CANNED_SHORTCUT_LENGTH, index=True)
    body: str = Field(sa_type=sa.Text)
    # None: the team's (supervisors keep them); else one member's own.
    owner_staff_id: int | None = Field(default=None, foreign_key="staff_members.id", index=True, ondelete="CASCADE")
    created_by: int | None = Field(default=None, foreign_key="staff_members.id", ondelete="SET NULL")
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)


LABEL_LENGTH = 40


class ConversationLabel(SQLModel, table=True):
    __tablename__ = "conversation_labels"

    conversation_id: int = Field(foreign_key="conversations.id", primary_key=True, ondelete="CASCADE")
    label: str = Field(max_length=LABEL_LENGTH, primary_key=True, index=True)
    added_by: int | None = Field(default=None, foreign_key="staff_members.id", ondelete="SET NULL")
    created_at: datetime = Field(default_factory=utc_now)


class DeskSetting(SQLModel, table=True):
    __tablename__ = "desk_settings"

    key: str = Field(max_length=64, primary_key=True)
    value: dict[str, Any] = Field(default_factory=dict, sa_type=json_type())
    updated_by: int | None = Field(default=None, foreign_key="staff_members.id", ondelete="SET NULL")
    updated_at: datetime = Field(default_factory=utc_now)
