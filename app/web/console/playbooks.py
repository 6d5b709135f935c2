"""Playbooks in the console (``/console/playbooks``, supervisors): the list with each playbook's mode and its runs,
a mode switch, and the editor of a playbook's text, validated before it runs (``app.console.playbooks``)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import Form, Path, Request, status
from fastapi.responses import HTMLResponse, Response
from sqlmodel import Session

from app.console import playbooks
from app.console.permissions import Staff
from app.playbooks.library import PlaybookLibrary
from app.playbooks.schema import PlaybookError
from app.services import Services
from app.web.console.common import ConsoleError, after_action, console_router, page
from app.web.deps import DbDep, PlaybookEditorDep, ServicesDep

router = console_router("/console/playbooks")

NAME_CHARS = 64
GUIDELINES = "guidelines"  # the editor's address for the response guidelines; no playbook may take the name
PlaybookName = Annotated[str, Path(max_length=NAME_CHARS, pattern=r"^[a-z][a-z0-9_]*$")]


def _library(services: Services) -> PlaybookLibrary:
    library = services.playbooks
    if library is None:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, "Playbooks are off on this desk (MEMDESK_PLAYBOOKS=off).")
    return library


@router.get("", response_class=HTMLResponse)
async def listing(request: Request, db: DbDep, services: ServicesDep, staff: PlaybookEditorDep) -> Any:
    library = _library(services)

    def load() -> list[playbooks.PlaybookRow]:
        with Session(db) as session:
            return playbooks.playbook_rows(session, library)

    rows = await anyio.to_thread.run_sync(load)
    turn = services.agent.preparation.playbooks
    applies = turn is not None and turn.applies()
    return page(request, "playbooks.html", rows=rows, staff=staff, active="playbooks", applies=applies,
                setting=services.settings.playbooks)  # fmt: skip


@router.get("/guidelines", response_class=HTMLResponse)
async def guidelines(request: Request, services: ServicesDep, staff: PlaybookEditorDep) -> Any:
    return _editor_page(request, staff, GUIDELINES, _library(services).guidelines.source)


@router.post("/guidelines", response_class=HTMLResponse)
async def save_guidelines(
    request: Request,
    db: DbDep,
    services: ServicesDep,
    staff: PlaybookEditorDep,
    source: Annotated[str, Form(max_length=playbooks.MAX_SOURCE_CHARS)] = "",
) -> Any:
    library = _library(services)

    def store() -> None:
        with Session(db) as session:
            playbooks.save_guidelines(session, library, staff, source)

    try:
        await anyio.to_thread.run_sync(store)
    except PlaybookError as error:
        return _editor_page(request, staff, GUIDELINES, source, error=error)
    return _editor_page(request, staff, GUIDELINES, source, saved=True)


@router.get("/{name}", response_class=HTMLResponse)
async def editor(request: Request, name: PlaybookName, services: ServicesDep, staff: PlaybookEditorDep) -> Any:
    found = _library(services).get(name)
    if found is None or name == GUIDELINES:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, f"There is no playbook named {name}.")
    return _editor_page(request, staff, name, found.source)


def _editor_page(
    request: Request, staff: Staff, name: str, source: str, error: PlaybookError | None = None, saved: bool = False
) -> HTMLResponse:
    code = status.HTTP_422_UNPROCESSABLE_CONTENT if error is not None else status.HTTP_200_OK
    return page(request, "playbook.html", status_code=code, name=name, source=source, error=error, saved=saved,
                staff=staff, active="playbooks")  # fmt: skip


@router.post("/{name}", response_class=HTMLResponse)
async def save(
    request: Request,
    name: PlaybookName,
    db: DbDep,
    services: ServicesDep,
    staff: PlaybookEditorDep,
    source: Annotated[str, Form(max_length=playbooks.MAX_SOURCE_CHARS)] = "",
) -> Any:
    library = _library(services)

    def store() -> None:
        with Session(db) as session:
            playbooks.save_version(session, library, staff, name, source)

    try:
        await anyio.to_thread.run_sync(store)
    except playbooks.UnknownPlaybook as error:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, str(error)) from error
    except PlaybookError as error:
        return _editor_page(request, staff, name, source, error=error)
    return _editor_page(request, staff, name, source, saved=True)


@router.post("/{name}/mode")
async def mode(
    request: Request,
    name: PlaybookName,
    db: DbDep,
    services: ServicesDep,
    staff: PlaybookEditorDep,
    mode: Annotated[str, Form(max_length=16)] = "",
) -> Response:
    library = _library(services)

    def store() -> None:
        with Session(db) as session:
            playbooks.set_mode(session, library, staff, name, mode)

    try:
        await anyio.to_thread.run_sync(store)
    except playbooks.UnknownPlaybook as error:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, str(error)) from error
    except PlaybookError as error:
        raise ConsoleError(status.HTTP_422_UNPROCESSABLE_CONTENT, error.reason) from error
    return after_action(request, "/console/playbooks")
