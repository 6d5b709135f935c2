"""How the HTTP API describes its errors in the OpenAPI document."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ErrorBody(BaseModel):
    """Every error but a validation error (422 carries FastAPI's list of problems)."""

    detail: str


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` entry documenting these status codes with ``ErrorBody``."""
    return {code: {"model": ErrorBody} for code in codes}
