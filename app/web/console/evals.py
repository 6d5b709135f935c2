"""Evaluation runs in the console (``/console/evals``, supervisors): the saved runs of ``memdesk eval run``, newest
first, and each run's scenarios with the checks that failed."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import Request, status
from fastapi.responses import HTMLResponse
from sqlmodel import Session

from app.evals.store import recent_runs
from app.models import EvalRun
from app.web.console.common import ConsoleError, console_router, page
from app.web.deps import DbDep, UsageViewerDep
from app.web.input import DatabaseInt

router = console_router("/console/evals")


@router.get("", response_class=HTMLResponse)
async def runs(request: Request, db: DbDep, staff: UsageViewerDep) -> Any:
    def load() -> list[EvalRun]:
        with Session(db) as session:
            return recent_runs(session)

    return page(request, "evals.html", runs=await anyio.to_thread.run_sync(load), staff=staff, active="evals")


@router.get("/{run_id}", response_class=HTMLResponse)
async def run(request: Request, run_id: DatabaseInt, db: DbDep, staff: UsageViewerDep) -> Any:
    def load() -> EvalRun | None:
        with Session(db) as session:
            return session.get(EvalRun, run_id)

    found = await anyio.to_thread.run_sync(load)
    if found is None:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, f"There is no evaluation run {run_id}.")
    # What needs a look first: scenarios not as expected, then those that failed as they were meant to.
    results = sorted(found.report.get("results", []), key=lambda result: (result["as_expected"], result["passed"]))
    return page(request, "eval_run.html", run=found, results=results, staff=staff, active="evals")
