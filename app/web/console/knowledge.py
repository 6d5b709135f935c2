"""The Knowledge page (``/console/knowledge``): sources, their documents and chunks, and supervisors' deletions.

Any signed-in staff member reads the page, a source's documents and a document's chunks (paged). Deleting a
source or a document needs the supervisor role (``Permission.MANAGE_KNOWLEDGE``) and a ticked confirmation box
in the form; without it nothing is deleted and the answer says why (400). Imports live in
``app.web.console.knowledge_import``, content gaps in ``app.web.console.knowledge_gaps``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import Form, Path, Query, Request, status
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import Engine
from sqlmodel import Session

from app.console import knowledge
from app.console.permissions import Permission, Staff
from app.web.console.common import ConsoleError, after_action, console_router, page
from app.web.deps import DbDep, KnowledgeEditorDep, WorkerDep
from app.web.input import DatabaseInt

router = console_router("/console/knowledge")

KNOWLEDGE_PATH = "/console/knowledge"
MAX_PAGE = 100_000
SourceId = Annotated[DatabaseInt, Path()]
DocumentId = Annotated[DatabaseInt, Path()]
PageQuery = Annotated[DatabaseInt, Query(alias="page", ge=1, le=MAX_PAGE)]
ConfirmField = Annotated[str, Form(max_length=8)]
NOT_CONFIRMED = "Nothing was deleted: tick the box that confirms the deletion, then press Delete again."
T = TypeVar("T")


async def read_knowledge(db: Engine, load: Callable[[Session], T]) -> T:
    """``load`` in a worker thread with its own session; a missing row is the console's 404 page."""

    def run() -> T:
        with Session(db) as session:
            return load(session)

    try:
        return await anyio.to_thread.run_sync(run)
    except knowledge.KnowledgeNotFoundError as error:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, str(error)) from error


def knowledge_context(staff: Staff) -> dict[str, Any]:
    """What every knowledge template needs besides its own data."""
    return {"staff": staff, "active": "knowledge", "can_manage": staff.can(Permission.MANAGE_KNOWLEDGE)}


@router.get("", response_class=HTMLResponse)
async def knowledge_home(request: Request, db: DbDep, staff: WorkerDep) -> Any:
    sources = await read_knowledge(db, knowledge.list_sources)
    return page(request, "knowledge.html", sources=sources, **knowledge_context(staff))


@router.get("/sources/{source_id}", response_class=HTMLResponse)
async def source_documents(
    request: Request, source_id: SourceId, db: DbDep, staff: WorkerDep, page_number: PageQuery = 1
) -> Any:
    listing = await read_knowledge(db, lambda session: knowledge.source_page(session, source_id, page_number))
    return page(request, "knowledge_source.html", listing=listing, **knowledge_context(staff))


@router.get("/documents/{document_id}", response_class=HTMLResponse)
async def document_chunks(
    request: Request, document_id: DocumentId, db: DbDep, staff: WorkerDep, page_number: PageQuery = 1
) -> Any:
    listing = await read_knowledge(db, lambda session: knowledge.document_page(session, document_id, page_number))
    return page(request, "knowledge_document.html", listing=listing, **knowledge_context(staff))


def _confirmed(confirm: str) -> None:
    if confirm != "1":
        raise ConsoleError(status.HTTP_400_BAD_REQUEST, NOT_CONFIRMED)


@router.post("/sources/{source_id}/delete")
async def delete_source(
    request: Request, source_id: SourceId, db: DbDep, staff: KnowledgeEditorDep, confirm: ConfirmField = ""
) -> Response:
    _confirmed(confirm)
    await read_knowledge(db, lambda session: knowledge.delete_source(session, source_id, actor=staff.actor))
    return after_action(request, KNOWLEDGE_PATH)


@router.post("/documents/{document_id}/delete")
async def delete_document(
    request: Request, document_id: DocumentId, db: DbDep, staff: KnowledgeEditorDep, confirm: ConfirmField = ""
) -> Response:
    _confirmed(confirm)
    deleted = await read_knowledge(
        db, lambda session: knowledge.delete_document(session, document_id, actor=staff.actor)
    )
    return after_action(request, f"{KNOWLEDGE_PATH}/sources/{deleted.source_id}")
