"""Console agents (the humans who supervise the bot) and the audit trail of everything with consequences.

An audit event is written for every write action, whoever performed it: a tool acting for a customer (actor
``"bot"``), a human agent (actor ``"agent:<id>"``), an administrator or a background job. ``detail`` holds the
arguments and outcome as JSON so the trail can be read without joining other tables.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlmodel import Field, SQLModel

from app.models.base import enum_type, json_type, utc_now

AGENT_NAME_LENGTH = 200
AGENT_EMAIL_LENGTH = 320
PASSWORD_HASH_LENGTH = 255
AUDIT_FIELD_LENGTH = 64


class AgentRole(StrEnum):
    AGENT = "agent"
    SUPERVISOR = "supervisor"


class AgentBase(SQLModel):
    email: str = Field(max_length=AGENT_EMAIL_LENGTH, unique=True)
    name: str = Field(max_length=AGENT_NAME_LENGTH)
    role: AgentRole = Field(default=AgentRole.AGENT, sa_type=enum_type(AgentRole))
    active: bool = True


class Agent(AgentBase, table=True):
    __tablename__ = "agents"

    id: int | None = Field(default=None, primary_key=True)
    password_hash: str = Field(max_length=PASSWORD_HASH_LENGTH)
    created_at: datetime = Field(default_factory=utc_now)


class AuditEvent(SQLModel, table=True):
    __tablename__ = "audit_events"

    id: int | None = Field(default=None, primary_key=True)
    actor: str = Field(max_length=AUDIT_FIELD_LENGTH)
    action: str = Field(max_length=AUDIT_FIELD_LENGTH, index=True)
    target_type: str = Field(max_length=AUDIT_FIELD_LENGTH)
    target_id: str = Field(max_length=AUDIT_FIELD_LENGTH)
    detail: dict[str, Any] = Field(default_factory=dict, sa_type=json_type())
    created_at: datetime = Field(default_factory=utc_now, index=True)
