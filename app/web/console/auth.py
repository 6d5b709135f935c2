"""Console sign-in and sign-out, and the console's static files (stylesheet, script, vendored htmx).

``GET /console/login`` shows the form (``email``, ``password``, hidden ``csrf_token``) and sets the signed
double-submit cookie its token is checked against; ``POST /console/login`` signs in, throttled per email and per
client address (``app.console.auth``); ``POST /console/logout`` ends the session. Every attempt, failed or locked
out, is audited.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Annotated

import anyio
from fastapi import Form, Query, Request, status
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.console import auth
from app.console.audit import record_audit_event
from app.console.permissions import STAFF_ACTOR_PREFIX
from app.console.staff import MAX_PASSWORD_CHARS, StaffError, normalize_email, verify_password
from app.models import StaffMember
from app.settings import Settings
from app.web.console.common import ConsoleError, console_router, page
from app.web.deps import ConsoleStaffDep, DbDep, SettingsDep, console_signer
from app.web.input import DatabaseInt

router = console_router()

# Package data, found the same in a wheel and in an editable install (as the widget's files are).
STATIC_DIR = Path(str(files("app").joinpath("static")))
STATIC_FILES = {
    "console.css": ("console.css", "text/css; charset=utf-8"),
    "console.js": ("console.js", "text/javascript; charset=utf-8"),
    "console-attention.js": ("console-attention.js", "text/javascript; charset=utf-8"),
    "console-canned.js": ("console-canned.js", "text/javascript; charset=utf-8"),
    "console-keys.js": ("console-keys.js", "text/javascript; charset=utf-8"),
    "console-typing.js": ("console-typing.js", "text/javascript; charset=utf-8"),
    "htmx.min.js": ("vendor/htmx-2.0.11.min.js", "text/javascript; charset=utf-8"),
    "htmx-ext-sse.min.js": ("vendor/htmx-ext-sse-2.2.4.min.js", "text/javascript; charset=utf-8"),
}
STATIC_MAX_AGE_S = 3_600
WRONG_CREDENTIALS = "Wrong email or password."
MAX_FIELD_CHARS = 400


def _safe_next(target: str | None) -> str:
    """Only a path inside the console (never another site, never a scheme-relative ``//host``)."""
    if target and target.startswith("/console") and not target.startswith("//") and "\\" not in target:
        return target
    return "/console"


def _client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _login_page(
    request: Request, settings: Settings, *, message: str | None = None, status_code: int = 200, next_path: str = ""
) -> HTMLResponse:
    token = auth.new_token()
    response = page(
        request, "login.html", status_code=status_code, csrf_token=token, message=message, next_path=next_path
    )
    response.set_cookie(
        auth.LOGIN_CSRF_COOKIE,
        console_signer(settings).login_cookie(token),
        max_age=auth.LOGIN_FORM_MAX_AGE_S,
        httponly=True,
        samesite="lax",
        secure=settings.console_secure_cookie,
        path="/console",
    )
    return response


@router.get("/login", response_class=HTMLResponse)
def login_form(
    request: Request,
    settings: SettingsDep,
    expired: Annotated[DatabaseInt, Query(le=1)] = 0,
    next: Annotated[str, Query(max_length=MAX_FIELD_CHARS)] = "",
) -> HTMLResponse:
    message = "Your session has ended; sign in again." if expired else None
    return _login_page(request, settings, message=message, next_path=_safe_next(next))


def _audit_attempt(db: Engine, actor: str, action: str, **detail: object) -> None:
    with Session(db) as session:
        record_audit_event(session, actor=actor, action=action, target_type="console", target_id="login", detail=detail)
        session.commit()


def _attempt(
    db: Engine, settings: Settings, email: str, password: str, address: str
) -> tuple[str, StaffMember | None, float | None]:
    """One sign-in attempt (blocking: argon2): ("ok" | "locked" | "failed", the member, seconds locked)."""
    keys = auth.ThrottleKeys.of(email, address, settings)
    with Session(db, expire_on_commit=False) as session:
        wait = auth.locked_for(session, keys)
        if wait is not None:
            session.commit()
            return "locked", None, wait
        try:
            member = session.exec(select(StaffMember).where(StaffMember.email == normalize_email(email))).first()
        except StaffError:
            member = None
        matches, new_hash = verify_password(password, member.password_hash if member and member.active else None)
        if not matches or member is None:
            auth.record_failure(session, keys, settings)  # the attempt that reaches the limit is still a 401
            session.commit()
            return "failed", None, None
        auth.clear_failures(session, keys)
        if new_hash is not None:
            member.password_hash = new_hash
            session.add(member)
        session.commit()
        return "ok", member, None


@router.post("/login", response_model=None)
async def login(
    request: Request,
    db: DbDep,
    settings: SettingsDep,
    email: Annotated[str, Form(max_length=MAX_FIELD_CHARS)] = "",
    password: Annotated[str, Form(max_length=MAX_PASSWORD_CHARS)] = "",
    csrf_token: Annotated[str, Form(max_length=MAX_FIELD_CHARS)] = "",
    next: Annotated[str, Form(max_length=MAX_FIELD_CHARS)] = "",
) -> Response:
    expected = console_signer(settings).login_token(request.cookies.get(auth.LOGIN_CSRF_COOKIE))
    address = _client_address(request)
    if expected is None or not auth.tokens_match(expected, csrf_token):
        await anyio.to_thread.run_sync(
            lambda: _audit_attempt(db, f"address:{address}"[:64], "console.csrf_rejected", email=email[:320])
        )
        raise ConsoleError(status.HTTP_403_FORBIDDEN, "The sign-in form expired; reload the page and try again.")
    outcome, member, wait = await anyio.to_thread.run_sync(_attempt, db, settings, email, password, address)
    if outcome != "ok" or member is None:
        action = "console.login_locked" if outcome == "locked" else "console.login_failed"
        await anyio.to_thread.run_sync(lambda: _audit_attempt(db, f"address:{address}"[:64], action, email=email[:320]))
        if outcome == "locked":
            minutes = max(1, round((wait or 0) / 60))
            response = _login_page(
                request,
                settings,
                message=f"Too many failed sign-ins. Try again in {minutes} min, or ask an administrator.",
                status_code=status.HTTP_429_TOO_MANY_REQUESTS,
                next_path=_safe_next(next),
            )
            response.headers["Retry-After"] = str(int(wait or 0) + 1)
            return response
        return _login_page(
            request, settings, message=WRONG_CREDENTIALS, status_code=status.HTTP_401_UNAUTHORIZED, next_path=next
        )
    return await _signed_in(db, settings, member, _safe_next(next))


async def _signed_in(db: Engine, settings: Settings, member: StaffMember, target: str) -> Response:
    def start() -> str:
        with Session(db) as session:
            token = auth.start_session(session, member)
            actor = f"{STAFF_ACTOR_PREFIX}{member.id}"
            record_audit_event(
                session, actor=actor, action="console.login", target_type="staff", target_id=str(member.id), detail={}
            )
            session.commit()
            return token

    token = await anyio.to_thread.run_sync(start)
    response = RedirectResponse(target, status_code=status.HTTP_303_SEE_OTHER)
    response.set_cookie(
        auth.SESSION_COOKIE,
        console_signer(settings).session_cookie(token),
        max_age=int(settings.console_session_max_age_s),
        httponly=True,
        samesite="lax",
        secure=settings.console_secure_cookie,
        path="/console",
    )
    response.delete_cookie(auth.LOGIN_CSRF_COOKIE, path="/console")
    return response


@router.post("/logout")
async def logout(request: Request, db: DbDep, settings: SettingsDep, staff: ConsoleStaffDep) -> RedirectResponse:
    token = console_signer(settings).session_token(request.cookies.get(auth.SESSION_COOKIE))

    def end() -> None:
        with Session(db) as session:
            if token is not None:
                auth.end_session(session, token)
            record_audit_event(
                session, actor=staff.actor, action="console.logout", target_type="staff", target_id=staff.id, detail={}
            )
            session.commit()

    await anyio.to_thread.run_sync(end)
    response = RedirectResponse("/console/login", status_code=status.HTTP_303_SEE_OTHER)
    if request.headers.get("HX-Request") == "true":
        response = RedirectResponse("/console/login", status_code=status.HTTP_200_OK)
        response.headers["HX-Redirect"] = "/console/login"
    response.delete_cookie(auth.SESSION_COOKIE, path="/console")
    return response


@router.get("/static/{name}")
def static_file(name: str) -> FileResponse:
    found = STATIC_FILES.get(name)
    if found is None:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, "No such file.")
    path, media_type = found
    return FileResponse(
        STATIC_DIR / path, media_type=media_type, headers={"Cache-Control": f"public, max-age={STATIC_MAX_AGE_S}"}
    )
