"""Saved evaluation runs: ``save_run`` writes a report into ``eval_runs``; the console reads them back."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.models import EvalRun

RECENT_RUNS = 50


def save_run(engine: Engine, report: Mapping[str, Any]) -> int:
    """Store ``report`` (what ``memdesk eval run --json`` prints); the run's id."""
    with Session(engine) as session:
        run = EvalRun(
            started_at=datetime.fromisoformat(report["started_at"]),
            chat_model=report["chat_model"],
            scenarios=report["scenarios"],
            as_expected=report["as_expected"],
            checks=report["checks"],
            checks_passed=report["checks_passed"],
            tokens=report["tokens"],
            report=dict(report),
        )
        session.add(run)
        session.commit()
        assert run.id is not None
        return run.id


def recent_runs(session: Session, limit: int = RECENT_RUNS) -> list[EvalRun]:
    return list(session.exec(select(EvalRun).order_by(col(EvalRun.id).desc()).limit(limit)).all())
