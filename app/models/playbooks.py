"""Playbook runs (``playbook_runs``) and the playbook versions saved in the console (``playbook_versions``).

Runs: one row each time a playbook starts in a conversation, kept while it waits for
the customer (an order number, a yes) and afterwards as the record the console counts (matched, completed).

The conversation's focus (what is being discussed: an order) lives on the conversation (``focus_kind``,
``focus_ref``); a follow-up without a number uses it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import enum_type, json_type, utc_now

PLAYBOOK_NAME_LENGTH = 64
WAITING_FOR_LENGTH = 64


class RunStatus(StrEnum):
    WAITING = "waiting"  # for the customer's answer: a slot's value or a confirmation
    COMPLETED = "completed"
    HANDED_OFF = "handed_off"
    DECLINED = "declined"  # the customer said no to the confirmation
    ABANDONED = "abandoned"  # the customer's answer was neither: the message went on to the rest of the turn
    GUIDED = "guided"  # in guide mode: the model followed the steps as instructions


class PlaybookRun(SQLModel, table=True):
    __tablename__ = "playbook_runs"
    __table_args__ = (
        # The turn reads a conversation's waiting run; the console counts runs per playbook.
        sa.Index("ix_playbook_runs_conversation_status", "conversation_id", "status"),
        sa.Index("ix_playbook_runs_playbook_status", "playbook", "status"),
    )

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = Field(foreign_key="conversations.id", ondelete="CASCADE")
    playbook: str = Field(max_length=PLAYBOOK_NAME_LENGTH)
    status: RunStatus = Field(default=RunStatus.WAITING, sa_type=enum_type(RunStatus))
    # What the run waits for: "confirm" or a slot's name; None once it is over.
    waiting_for: str | None = Field(default=None, max_length=WAITING_FOR_LENGTH)
    step: int = 0
    language: str = Field(default="en", max_length=8)
    slots: dict[str, Any] = Field(default_factory=dict, sa_type=json_type())
    results: dict[str, Any] = Field(default_factory=dict, sa_type=json_type())
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now, sa_column_kwargs={"onupdate": utc_now})


class PlaybookVersion(SQLModel, table=True):
    """A playbook's text as a supervisor saved it in the console; the newest version of each name is the one that
    runs, over the file the desk ships."""

    __tablename__ = "playbook_versions"
    __table_args__ = (sa.UniqueConstraint("name", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=PLAYBOOK_NAME_LENGTH)
    version: int
    source: str = Field(sa_type=sa.Text)
    edited_by: str = Field(max_length=64)
    created_at: datetime = Field(default_factory=utc_now)
