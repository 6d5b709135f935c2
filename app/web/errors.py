"""How the HTTP API describes its errors, and the one answer to a database that is unavailable.

Exception tree of what becomes 503 here (``app.db.is_database_unavailable`` decides)::

    sqlalchemy.exc.DBAPIError
    ├── connection_invalidated   the connection broke under the statement (the database restarted)
    └── OperationalError         a connect refused, a server shutting down, too many connections; on SQLite only
                                 "database is busy / locked" past the busy timeout
    sqlalchemy.exc.TimeoutError  no pooled connection came free in time

Every other error keeps its course (a bug is still a 500, logged with its traceback). The 503 carries
``Retry-After``; under ``/console`` it is the console's error page (or htmx's notice fragment), elsewhere JSON in the
shape of ``ErrorBody``. The request's transaction was rolled back with the broken connection (or never began), so
a client may send it again; only a commit that reached the database and whose answer was lost can have stored it,
which is why the widget checks the conversation's messages before it sends a message again. The log line names the
driver's error class and SQLSTATE only; the error's text can carry the statement's parameters, which are customers'
words.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.openapi.constants import REF_PREFIX
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from app.db import is_database_unavailable
from app.web.console.common import CONSOLE_PREFIX, error_page

logger = logging.getLogger(__name__)

# A restart of PostgreSQL takes a second or two, a fail-over a few more: a client asked to come back after this is
# unlikely to meet the same outage, and thousands of widgets retrying do not arrive all at once.
DATABASE_RETRY_AFTER_S = 5
DATABASE_UNAVAILABLE = (
    f"The support desk's database is unavailable for a moment; nothing was saved. "
    f"Try again in {DATABASE_RETRY_AFTER_S} seconds."
)


class ErrorBody(BaseModel):
    """Every error but a validation error (422 carries FastAPI's list of problems)."""

    detail: str


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` entry documenting these status codes with ``ErrorBody``."""
    return {code: {"model": ErrorBody} for code in codes}


def stream_error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """``error_responses`` for a route that answers success with an event stream: FastAPI files a ``model`` under
    the route's own media type, but these errors are JSON, so they name their schema in ``application/json``."""
    schema = {"$ref": f"{REF_PREFIX}{ErrorBody.__name__}"}
    return {code: {"content": {"application/json": {"schema": schema}}} for code in codes}


async def database_unavailable_response(request: Request, error: Exception) -> Response:
    """503 with ``Retry-After`` for a database that cannot take the request now; any other error is re-raised."""
    if not is_database_unavailable(error):
        raise error
    driver_error = getattr(error, "orig", None)
    logger.warning(
        "Database unavailable during %s %s (%s, SQLSTATE %s); answered 503.",
        request.method,
        request.url.path,
        type(driver_error or error).__name__,
        getattr(driver_error, "sqlstate", None) or "-",
    )
    headers = {"Retry-After": str(DATABASE_RETRY_AFTER_S)}
    if request.url.path.startswith(CONSOLE_PREFIX):
        return error_page(request, status.HTTP_503_SERVICE_UNAVAILABLE, DATABASE_UNAVAILABLE, headers)
    body = ErrorBody(detail=DATABASE_UNAVAILABLE).model_dump()
    return JSONResponse(body, status_code=status.HTTP_503_SERVICE_UNAVAILABLE, headers=headers)


def install(app: FastAPI) -> None:
    """Answer database unavailability on every route with 503 (widget API, console, admin API, event streams)."""
    for error_class in (DBAPIError, PoolTimeoutError):
        app.add_exception_handler(error_class, database_unavailable_response)
