"""FastAPI dependencies as ``Annotated`` aliases; handlers take only these plus path and body parameters.

Handlers take the long-lived objects they use (``DbDep``, ``BrokerDep``, ``TurnsDep``, ``MemoryDep``, ...), never
the whole container: each alias picks its object from the app's ``Services``, which ``get_services`` (the one
reader of ``app.state``) hands to the dependencies here and to nothing else.

Console routes take one of the staff aliases at the end: ``StaffDep`` (signed in), ``ConsoleStaffDep`` (signed in,
and the CSRF token checked on state-changing requests), or a role-checked one such as ``MemoryEditorDep``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date, datetime
from typing import Annotated, Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import anyio
from fastapi import Depends, HTTPException, Query, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine
from sqlmodel import Session

from app.console.audit import record_audit_event
from app.console.auth import (
    BACKGROUND_HEADER,
    CSRF_FORM_FIELD,
    CSRF_HEADER,
    SESSION_COOKIE,
    CookieSigner,
    load_session,
    tokens_match,
)
from app.console.permissions import Permission, Staff
from app.console.summary_jobs import SummaryJobs
from app.customer_memory.service import MemoryService
from app.db import get_session
from app.identity import IdentityError, Visitor, VisitorTokens
from app.infra.metrics import Metrics
from app.live.broker import EventBroker
from app.live.typing import TypingSignals
from app.llm import LLMGateway
from app.ratelimit import VisitorRateLimiter
from app.services import Services
from app.settings import Settings
from app.sync import SyncSchedule
from app.sync.timetable import SyncTimetable
from app.tools import ToolRegistry
from app.turns.preparation import ButtonHandoff
from app.turns.scheduler import TurnScheduler
from app.web.console.common import ConsoleError
from memory.store import CustomerMemory

SessionDep = Annotated[Session, Depends(get_session)]


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def get_app_settings(services: ServicesDep) -> Settings:
    return services.settings


def get_db(services: ServicesDep) -> Engine:
    return services.db


def get_broker(services: ServicesDep) -> EventBroker:
    return services.broker


def get_typing(services: ServicesDep) -> TypingSignals:
    assert services.typing is not None
    return services.typing


def get_summaries(services: ServicesDep) -> SummaryJobs:
    assert services.summaries is not None
    return services.summaries


def get_turns(services: ServicesDep) -> TurnScheduler:
    return services.turns


def get_handoff(services: ServicesDep) -> ButtonHandoff:
    return services.agent.preparation.hand_off_on_button


def get_memory(services: ServicesDep) -> MemoryService | None:
    return services.memory


def get_memory_store(services: ServicesDep) -> CustomerMemory | None:
    """The memory store itself, for the privacy functions, which run it in a thread of their own."""
    return services.memory.store if services.memory is not None else None


def get_metrics(services: ServicesDep) -> Metrics:
    return services.metrics


def get_tools(services: ServicesDep) -> ToolRegistry:
    return services.tools


def get_gateway(services: ServicesDep) -> LLMGateway:
    return services.gateway


def get_message_limiter(services: ServicesDep) -> VisitorRateLimiter:
    return services.message_limiter


def get_visitor_tokens(services: ServicesDep) -> VisitorTokens:
    return services.visitor_tokens


def get_sync(services: ServicesDep) -> SyncSchedule | SyncTimetable | None:
    return services.sync


SettingsDep = Annotated[Settings, Depends(get_app_settings)]


def shop_today(settings: SettingsDep) -> date:
    """Today on the shop's calendar (``MEMDESK_TIMEZONE``), which dates staff write are resolved against, as the
    compressor resolves the bot's."""
    return datetime.now(ZoneInfo(settings.timezone)).date()


ShopTodayDep = Annotated[date, Depends(shop_today)]
DbDep = Annotated[Engine, Depends(get_db)]
BrokerDep = Annotated[EventBroker, Depends(get_broker)]
TypingDep = Annotated[TypingSignals, Depends(get_typing)]
SummariesDep = Annotated[SummaryJobs, Depends(get_summaries)]
TurnsDep = Annotated[TurnScheduler, Depends(get_turns)]
HandoffDep = Annotated[ButtonHandoff, Depends(get_handoff)]
MemoryDep = Annotated[MemoryService | None, Depends(get_memory)]
MemoryStoreDep = Annotated[CustomerMemory | None, Depends(get_memory_store)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ToolsDep = Annotated[ToolRegistry, Depends(get_tools)]
GatewayDep = Annotated[LLMGateway, Depends(get_gateway)]
LimiterDep = Annotated[VisitorRateLimiter, Depends(get_message_limiter)]
VisitorTokensDep = Annotated[VisitorTokens, Depends(get_visitor_tokens)]
SyncDep = Annotated[SyncSchedule | SyncTimetable | None, Depends(get_sync)]


visitor_bearer = HTTPBearer(
    scheme_name="VisitorToken",
    description="The token from POST /api/widget/sessions",
    auto_error=False,
)
MAX_TOKEN_CHARS = 512


def _verified(tokens: VisitorTokens, token: str | None) -> Visitor:
    try:
        return tokens.verify(token)
    except IdentityError as error:
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED, detail=str(error), headers={"WWW-Authenticate": "Bearer"}
        ) from error


def current_visitor(
    tokens: VisitorTokensDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(visitor_bearer)]
) -> Visitor:
    return _verified(tokens, credentials.credentials if credentials is not None else None)


def current_stream_visitor(
    tokens: VisitorTokensDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(visitor_bearer)],
    token: Annotated[
        str | None,
        Query(max_length=MAX_TOKEN_CHARS, description="Visitor token, for EventSource (which cannot send headers)"),
    ] = None,
) -> Visitor:
    """Like ``current_visitor``, also from ``?token=``: only the event stream accepts a token in its URL."""
    return _verified(tokens, credentials.credentials if credentials is not None else token)


VisitorDep = Annotated[Visitor, Depends(current_visitor)]
StreamVisitorDep = Annotated[Visitor, Depends(current_stream_visitor)]


# --- the staff console -------------------------------------------------------------------------------------------
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
LOGIN_PATH = "/console/login"


def console_signer(settings: SettingsDep) -> CookieSigner:
    return CookieSigner(settings.secret_key.get_secret_value())


def _sign_in_again(request: Request) -> ConsoleError:
    """Back to the sign-in page: htmx follows ``HX-Redirect``; a page load follows the redirect itself."""
    if request.headers.get("HX-Request") == "true":
        target = f"{LOGIN_PATH}?expired=1"
        return ConsoleError(
            status.HTTP_401_UNAUTHORIZED, "Your session has ended; sign in again.", {"HX-Redirect": target}
        )
    if request.method != "GET" or "text/event-stream" in request.headers.get("accept", ""):
        return ConsoleError(status.HTTP_401_UNAUTHORIZED, "Your session has ended; sign in again.")
    target = f"{LOGIN_PATH}?{urlencode({'next': request.url.path, 'expired': 1})}"
    return ConsoleError(status.HTTP_303_SEE_OTHER, "Sign in to continue.", {"Location": target})


def current_staff(request: Request, db: DbDep, settings: SettingsDep) -> Staff:
    """The signed-in staff member; otherwise back to the sign-in page. Requests a page makes by itself to stay
    live (``X-Console-Background``) do not extend the session."""
    token = console_signer(settings).session_token(request.cookies.get(SESSION_COOKIE))
    staff = None
    if token is not None:
        background = request.headers.get(BACKGROUND_HEADER) == "1"
        with Session(db, expire_on_commit=False) as session:
            staff = load_session(session, token, settings, activity=not background)
    if staff is None:
        raise _sign_in_again(request)
    return staff


StaffDep = Annotated[Staff, Depends(current_staff)]
SignedInCheck = Callable[[], Awaitable[bool]]


def signed_in_check(request: Request, db: DbDep, settings: SettingsDep) -> SignedInCheck:
    """A coroutine function telling whether this request's session is still valid (for long-lived streams)."""
    token = console_signer(settings).session_token(request.cookies.get(SESSION_COOKIE))

    def check() -> bool:
        if token is None:
            return False
        with Session(db) as session:
            return load_session(session, token, settings, activity=False) is not None

    async def still() -> bool:
        return await anyio.to_thread.run_sync(check)

    return still


SignedInCheckDep = Annotated[SignedInCheck, Depends(signed_in_check)]


def audit_refusal(db: Engine, staff: Staff, action: str, request: Request, **detail: object) -> None:
    with Session(db) as session:
        record_audit_event(
            session,
            actor=staff.actor,
            action=action,
            target_type="path",
            target_id=request.url.path[:64],
            detail={"method": request.method, "path": request.url.path, **detail},
        )
        session.commit()


async def checked_staff(request: Request, staff: StaffDep, db: DbDep) -> Staff:
    """The staff member, after checking the CSRF token of a state-changing request (403 without a valid one)."""
    if request.method in UNSAFE_METHODS:
        given = request.headers.get(CSRF_HEADER)
        if given is None and request.headers.get("content-type", "").startswith(FORM_CONTENT_TYPES):
            value = (await request.form()).get(CSRF_FORM_FIELD)
            given = value if isinstance(value, str) else None
        if not tokens_match(staff.csrf_token, given):
            await anyio.to_thread.run_sync(lambda: audit_refusal(db, staff, "console.csrf_rejected", request))
            raise ConsoleError(
                status.HTTP_403_FORBIDDEN,
                "This form has expired or did not come from the console; reload the page and try again.",
            )
    return staff


ConsoleStaffDep = Annotated[Staff, Depends(checked_staff)]


def requires(permission: Permission) -> Any:
    """A dependency: the checked staff member, if their role allows ``permission``; else 403, audited."""

    async def allowed(request: Request, staff: ConsoleStaffDep, db: DbDep) -> Staff:
        if not staff.can(permission):
            detail = {"permission": permission.value, "role": staff.role.value}
            await anyio.to_thread.run_sync(lambda: audit_refusal(db, staff, "console.forbidden", request, **detail))
            raise ConsoleError(
                status.HTTP_403_FORBIDDEN,
                f"Your role ({staff.role.value}) does not allow this; ask a supervisor or an administrator.",
            )
        return staff

    return Depends(allowed)


WorkerDep = Annotated[Staff, requires(Permission.WORK_CONVERSATIONS)]
MemoryEditorDep = Annotated[Staff, requires(Permission.EDIT_MEMORIES)]
UsageViewerDep = Annotated[Staff, requires(Permission.VIEW_USAGE)]
OutboxRetrierDep = Annotated[Staff, requires(Permission.RETRY_OUTBOX)]
KnowledgeEditorDep = Annotated[Staff, requires(Permission.MANAGE_KNOWLEDGE)]
PlaybookEditorDep = Annotated[Staff, requires(Permission.MANAGE_PLAYBOOKS)]
RoutingManagerDep = Annotated[Staff, requires(Permission.MANAGE_ROUTING)]
StaffManagerDep = Annotated[Staff, requires(Permission.MANAGE_STAFF)]
PrivacyOfficerDep = Annotated[Staff, requires(Permission.EXPORT_ERASE)]
