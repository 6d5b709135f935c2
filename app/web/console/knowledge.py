"""The Knowledge page (``/console/knowledge``): sources, their documents and chunks, and supervisors' deletions.

Any signed-in staff member reads the page, a source's documents and a document's chunks (paged), and asks the
search box what the bot would find for a question: each hit with its fused score, its confidence, each
retriever's rank and whether it clears the threshold that prefetch and content gaps use. Deleting a
source or a document needs the supervisor role (``Permission.MANAGE_KNOWLEDGE``) and a ticked confirmation box
in the form; without it nothing is deleted and the answer says why (400). Content gaps live in
``app.web.console.knowledge_gaps``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import Form, Path, Query, Request, status
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import Engine
from sqlmodel import Session

from app.console import knowledge
from app.console.permissions import Permission, Staff
from app.knowledge.fulltext import MAX_QUERY_CHARS
from app.knowledge.search import CONFIDENCE_THRESHOLD, is_confident, search_knowledge
from app.knowledge.types import KnowledgeHit
from app.web.console.common import ConsoleError, after_action, console_router, is_htmx, page
from app.web.deps import DbDep, KnowledgeEditorDep, WorkerDep
from app.web.input import DatabaseInt

router = console_router("/console/knowledge")

KNOWLEDGE_PATH = "/console/knowledge"
UPLOAD_PATH = f"{KNOWLEDGE_PATH}/upload"
# The largest upload request (all its files): read into memory and imported while the request waits.
MAX_UPLOAD_BYTES = 16 * 1024 * 1024
MAX_PAGE = 100_000
SourceId = Annotated[DatabaseInt, Path()]
DocumentId = Annotated[DatabaseInt, Path()]
PageQuery = Annotated[DatabaseInt, Query(alias="page", ge=1, le=MAX_PAGE)]
ConfirmField = Annotated[str, Form(max_length=8)]
QuestionQuery = Annotated[str, Query(alias="q", max_length=MAX_QUERY_CHARS)]
# As many hits as the bot's tool may ask for, and a few more to show what just missed.
SEARCH_HITS = 10
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
    return {
        "staff": staff,
        "active": "knowledge",
        "can_manage": staff.can(Permission.MANAGE_KNOWLEDGE),
        "upload_limit_mb": MAX_UPLOAD_BYTES // (1024 * 1024),
    }


@dataclass(frozen=True)
class SearchPreview:
    question: str
    hits: list[tuple[KnowledgeHit, bool]]  # each hit, and whether it clears the confidence threshold
    threshold: float = CONFIDENCE_THRESHOLD


async def _search(db: Engine, question: str) -> SearchPreview | None:
    if not question.strip():
        return None

    def run(session: Session) -> list[KnowledgeHit]:
        return search_knowledge(session, question, limit=SEARCH_HITS)

    hits = await read_knowledge(db, run)
    return SearchPreview(question, [(hit, is_confident(hit)) for hit in hits])


@router.get("", response_class=HTMLResponse)
async def knowledge_home(request: Request, db: DbDep, staff: WorkerDep, question: QuestionQuery = "") -> Any:
    preview = await _search(db, question)
    sources = await read_knowledge(db, knowledge.list_sources)
    return page(request, "knowledge.html", sources=sources, search=preview, **knowledge_context(staff))


@router.get("/search", response_class=HTMLResponse)
async def search(request: Request, db: DbDep, staff: WorkerDep, question: QuestionQuery = "") -> Any:
    """The search box's results: a fragment for htmx, else the whole page with them."""
    if not is_htmx(request):
        return await knowledge_home(request, db, staff, question)
    return page(request, "_knowledge_search.html", search=await _search(db, question), **knowledge_context(staff))


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
