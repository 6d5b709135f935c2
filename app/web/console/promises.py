"""The promises board (``/console/promises``): every open promise in long-term memory across customers, filtered by
due date, and staff marking one kept or broken (with the permission memory edits need)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import Form, Path, Query, Request, status
from fastapi.responses import HTMLResponse, Response
from sqlmodel import Session

from app.console import promises
from app.console.memories import MemoryUnavailable
from app.console.permissions import Permission
from app.models import PromiseStatus
from app.outcomes.promises import DueFilter, open_promises
from app.web.console.common import ConsoleError, after_action, console_router, page
from app.web.deps import DbDep, MemoryDep, MemoryEditorDep, ShopTodayDep, WorkerDep
from memory.store import CustomerMemoryError, MemoryNotFoundError

router = console_router()

MAX_ID_CHARS = 64
FILTER_CHARS = 16
MARKS = {"kept": PromiseStatus.KEPT, "broken": PromiseStatus.BROKEN}


@router.get("/promises", response_class=HTMLResponse)
async def board(
    request: Request,
    db: DbDep,
    staff: WorkerDep,
    today: ShopTodayDep,
    due: Annotated[str, Query(max_length=FILTER_CHARS)] = DueFilter.ALL.value,
) -> Any:
    try:
        chosen = DueFilter(due)
    except ValueError as error:
        choices = ", ".join(choice.value for choice in DueFilter)
        raise ConsoleError(status.HTTP_422_UNPROCESSABLE_CONTENT, f"Filter by one of: {choices}.") from error

    def load() -> Any:
        with Session(db) as session:
            listed = open_promises(session, chosen, today)
            session.commit()
            return listed

    listed = await anyio.to_thread.run_sync(load)
    return page(
        request,
        "promises.html",
        staff=staff,
        promises=listed,
        due=chosen,
        filters=list(DueFilter),
        today=today,
        can_mark=staff.can(Permission.EDIT_MEMORIES),
    )


@router.post("/promises/{memory_id}/mark")
async def mark(
    request: Request,
    memory_id: Annotated[str, Path(max_length=MAX_ID_CHARS)],
    db: DbDep,
    memory: MemoryDep,
    staff: MemoryEditorDep,
    outcome: Annotated[str, Form(max_length=10)] = "",
    note: Annotated[str, Form(max_length=promises.MAX_NOTE_CHARS * 2)] = "",
) -> Response:
    if outcome not in MARKS:
        raise ConsoleError(status.HTTP_422_UNPROCESSABLE_CONTENT, "Mark the promise kept or broken.")
    try:
        await promises.mark(memory, db, staff, memory_id, status=MARKS[outcome], note=note)
    except MemoryUnavailable as error:
        raise ConsoleError(status.HTTP_503_SERVICE_UNAVAILABLE, str(error)) from error
    except (promises.PromiseNotOpen, MemoryNotFoundError) as error:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, str(error)) from error
    except (ValueError, CustomerMemoryError) as error:
        raise ConsoleError(status.HTTP_422_UNPROCESSABLE_CONTENT, str(error)) from error
    return after_action(request, "/console/promises")
