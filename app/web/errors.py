"""How the HTTP API describes its errors in the OpenAPI document."""

from __future__ import annotations

from typing import Any

from fastapi.openapi.constants import REF_PREFIX
from pydantic import BaseModel


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
