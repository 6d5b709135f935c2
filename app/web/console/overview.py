"""The dashboard (``/console/overview``) with the conversations' outcomes and the latest nightly sync run, the
outcomes as CSV, and the supervisors' retry of failed outbox rows."""

from __future__ import annotations

from datetime import date
from typing import Any

import anyio
from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import Engine
from sqlmodel import Session

from app.console.audit import record_audit_event
from app.console.overview import load_overview, retry_failed
from app.console.permissions import Permission
from app.llm import LLMGateway
from app.models import utc_now
from app.outcomes.chart import outcome_chart
from app.outcomes.export import outcome_csv
from app.outcomes.figures import load_outcome_figures, window_start
from app.outcomes.promises import kept_on_time
from app.sync.runner import latest_sync_run
from app.web.console.common import after_action, console_router, page
from app.web.deps import DbDep, GatewayDep, MemoryDep, OutboxRetrierDep, ShopTodayDep, UsageViewerDep, WorkerDep

router = console_router()


def overview_context(db: Engine, gateway: LLMGateway, *, with_usage: bool, today: date) -> dict[str, Any]:
    """Everything the overview page shows, read in one worker-thread call (the benchmark times this and the render)."""
    with Session(db) as session:
        outcomes = load_outcome_figures(session)
        promises = kept_on_time(session, today)
        figures = load_overview(session, gateway, outcomes, with_usage=with_usage)
    return {
        "overview": figures,
        "outcomes": outcomes,
        "promises": promises,
        "chart": outcome_chart(outcomes.days),
        "live_usage": gateway.ledger.by_purpose() if with_usage else [],
        "with_usage": with_usage,
        "sync_run": latest_sync_run(db),
    }


@router.get("/overview", response_class=HTMLResponse)
async def overview(request: Request, db: DbDep, gateway: GatewayDep, staff: WorkerDep, today: ShopTodayDep) -> Any:
    with_usage = staff.can(Permission.VIEW_USAGE)
    context = await anyio.to_thread.run_sync(lambda: overview_context(db, gateway, with_usage=with_usage, today=today))
    return page(request, "overview.html", staff=staff, **context)


@router.get("/overview/outcomes.csv")
async def outcomes_csv(db: DbDep, staff: UsageViewerDep) -> Response:
    """The window's outcomes, one line per conversation (supervisors: it includes customers' comments). Built in
    one worker thread with one read, since the window is bounded, rather than streamed across threads."""
    since = window_start(utc_now())

    def build() -> str:
        with Session(db) as session:
            text = "".join(outcome_csv(session, since))
            session.commit()
            return text

    name = f"memdesk-outcomes-{since.date().isoformat()}.csv"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return Response(await anyio.to_thread.run_sync(build), media_type="text/csv; charset=utf-8", headers=headers)


@router.post("/outbox/retry")
async def retry_outbox(request: Request, db: DbDep, memory: MemoryDep, staff: OutboxRetrierDep) -> Response:
    def retry() -> int:
        with Session(db) as session:
            count = retry_failed(session)
            record_audit_event(
                session, actor=staff.actor, action="console.outbox_retry", target_type="outbox", target_id="failed",
                detail={"rows": count},
            )  # fmt: skip
            session.commit()
            return count

    await anyio.to_thread.run_sync(retry)
    if memory is not None:
        memory.kick()
    return after_action(request, "/console/overview")
