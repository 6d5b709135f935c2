"""Content gaps (``/console/knowledge/gaps``): the questions the knowledge could not answer, for supervisors.

The page lists the open gaps in groups of similar questions (``app.console.knowledge_gaps``), each with its count,
example questions and links to their conversations. A group's form carries the ids of the gaps it showed, so
resolving it changes exactly those (a gap recorded since then stays open until it is seen).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from fastapi import Form, Request, status
from fastapi.responses import HTMLResponse, Response
from sqlmodel import Session

from app.console.knowledge_gaps import MAX_GROUPED_GAPS, GapResolutionError, gap_overview, resolve_gaps
from app.models import GapStatus
from app.web.console.common import ConsoleError, after_action, console_router, page
from app.web.console.knowledge import knowledge_context
from app.web.deps import DbDep, KnowledgeEditorDep
from app.web.input import DatabaseInt

router = console_router("/console/knowledge")

GAPS_PATH = "/console/knowledge/gaps"
GapIds = Annotated[list[DatabaseInt], Form(alias="gap_id", min_length=1, max_length=MAX_GROUPED_GAPS)]
Resolution = Annotated[Literal["dismissed", "covered"], Form()]


@router.get("/gaps", response_class=HTMLResponse)
async def gaps(request: Request, db: DbDep, staff: KnowledgeEditorDep) -> Any:
    def load() -> Any:
        with Session(db) as session:
            return gap_overview(session)

    overview = await anyio.to_thread.run_sync(load)
    return page(request, "knowledge_gaps.html", overview=overview, **{**knowledge_context(staff), "active": "gaps"})


@router.post("/gaps/resolve")
async def resolve(
    request: Request, db: DbDep, staff: KnowledgeEditorDep, gap_ids: GapIds, resolution: Resolution
) -> Response:
    def run() -> int:
        with Session(db) as session:
            return resolve_gaps(session, gap_ids, GapStatus(resolution), staff_id=staff.id, actor=staff.actor)

    try:
        await anyio.to_thread.run_sync(run)
    except GapResolutionError as error:
        raise ConsoleError(status.HTTP_409_CONFLICT, str(error)) from error
    return after_action(request, GAPS_PATH)
