"""Evaluation runs: one ``EvalRun`` per ``memdesk eval run`` saved to the database, its whole report kept as JSON,
so the console shows the runs and what failed in each."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from app.models.base import json_type, utc_now

MODEL_NAME_LENGTH = 200


class EvalRun(SQLModel, table=True):
    __tablename__ = "eval_runs"

    id: int | None = Field(default=None, primary_key=True)
    started_at: datetime
    finished_at: datetime = Field(default_factory=utc_now, index=True)
    chat_model: str = Field(max_length=MODEL_NAME_LENGTH)
    scenarios: int
    as_expected: int
    checks: int
    checks_passed: int
    tokens: int
    # The report ``memdesk eval run --json`` prints (``app.evals.runner.SuiteReport.as_json``).
    report: dict[str, Any] = Field(sa_type=json_type())
