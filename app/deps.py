"""FastAPI dependencies as ``Annotated`` aliases; handlers take only these plus path and body parameters."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request, status
from sqlmodel import Session

from app.db import get_session
from app.identity import IdentityError, Visitor
from app.services import Services

SessionDep = Annotated[Session, Depends(get_session)]


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def current_visitor(
    request: Request,
    services: ServicesDep,
    token: Annotated[str | None, Query(description="Visitor token, for clients that cannot send headers")] = None,
) -> Visitor:
    header = request.headers.get("authorization", "")
    bearer = header[7:].strip() if header.lower().startswith("bearer ") else None
    try:
        return services.visitor_tokens.verify(bearer or token)
    except IdentityError as error:
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED, detail=str(error), headers={"WWW-Authenticate": "Bearer"}
        ) from error


VisitorDep = Annotated[Visitor, Depends(current_visitor)]
