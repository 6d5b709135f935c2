"""FastAPI dependencies as ``Annotated`` aliases; handlers take only these plus path and body parameters."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session

from app.db import get_session
from app.identity import IdentityError, Visitor
from app.services import Services

SessionDep = Annotated[Session, Depends(get_session)]


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


visitor_bearer = HTTPBearer(
    scheme_name="VisitorToken",
    description="The token from POST /api/widget/sessions",
    auto_error=False,
)
MAX_TOKEN_CHARS = 512


def _verified(services: Services, token: str | None) -> Visitor:
    try:
        return services.visitor_tokens.verify(token)
    except IdentityError as error:
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED, detail=str(error), headers={"WWW-Authenticate": "Bearer"}
        ) from error


def current_visitor(
    services: ServicesDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(visitor_bearer)]
) -> Visitor:
    return _verified(services, credentials.credentials if credentials is not None else None)


def current_stream_visitor(
    services: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(visitor_bearer)],
    token: Annotated[
        str | None,
        Query(max_length=MAX_TOKEN_CHARS, description="Visitor token, for EventSource (which cannot send headers)"),
    ] = None,
) -> Visitor:
    """Like ``current_visitor``, also from ``?token=``: only the event stream accepts a token in its URL."""
    return _verified(services, credentials.credentials if credentials is not None else token)


VisitorDep = Annotated[Visitor, Depends(current_visitor)]
StreamVisitorDep = Annotated[Visitor, Depends(current_stream_visitor)]
