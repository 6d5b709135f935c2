"""The conclusion sync's bookkeeping: one row per run, and each conversation's watermark.

``Conversation.synced_through_message_id`` is the last message a sync covered; it moves in the same transaction as the
outbox rows of the conclusions found up to it, so a run killed at any point resumes exactly where its last commit
left off. A ``SyncRun`` is written when a run starts (status ``running``) and completed when it ends; one still
``running`` when the next run starts was interrupted.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlmodel import Field, SQLModel

from app.models.base import enum_type, json_type, utc_now


class SyncRunStatus(StrEnum):
    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"


class SyncRun(SQLModel, table=True):
    __tablename__ = "sync_runs"

    id: int | None = Field(default=None, primary_key=True)
    status: SyncRunStatus = Field(default=SyncRunStatus.RUNNING, sa_type=enum_type(SyncRunStatus), index=True)
    dry_run: bool = False
    started_at: datetime = Field(default_factory=utc_now)
    finished_at: datetime | None = None
    scanned: int = 0
    summarized: int = 0
    skipped: int = 0
    failed: int = 0
    conclusions_written: int = 0
    conclusions_superseded: int = 0
    promises_expired: int = 0
    outbox_retried: int = 0
    # {"<model>": {"prompt_tokens": …, "completion_tokens": …, "cost_usd": … or null}}
    usage: dict[str, Any] = Field(default_factory=dict, sa_type=json_type())
    # [{"conversation_id": "<public id>", "error": "…"}], at most SyncRunner.MAX_ERRORS
    errors: list[dict[str, Any]] = Field(default_factory=list, sa_type=json_type())
