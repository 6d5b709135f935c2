"""Console sign-in: signed session cookies backed by ``staff_sessions``, idle timeout, throttling and CSRF tokens.

Sessions. Signing in creates a ``StaffSession`` row and sets a cookie holding a random token signed with
``MEMDESK_SECRET_KEY`` (itsdangerous); the row keeps only the token's SHA-256. The cookie is HttpOnly,
SameSite=Lax and, outside development, Secure. A session ends when its member signs out (the row is deleted), is
disabled or gets a new password, when it goes unused for ``console_session_idle_s``, or after
``console_session_max_age_s`` whatever happens. Use is recorded at most once per ``TOUCH_INTERVAL_S`` (one write a
minute instead of one per request), and requests that a page makes by itself to stay live do not count as use.

CSRF. Each session has a random synchronizer token; every state-changing request must send it back, in the
``csrf_token`` form field or the ``X-CSRF-Token`` header (htmx). The sign-in form, before any session exists, uses a
signed double-submit token: the same random value in a short-lived cookie and in the form. Written here rather
than taken from a library because the token lives in the server-side session we already keep, which the
double-submit-cookie libraries (starlette-csrf, fastapi-csrf-protect) do not use, and it is a few lines.

Throttling. Failed sign-ins are counted per email and per client address in ``login_throttles``. The failure that
reaches a key's limit within the window is still answered as a wrong password, and locks the key for the lockout
time: every attempt after it answers 429 without checking the password. So with limits 5 and 20, five wrong
passwords for one email (or twenty from one address) are answered 401, and the next attempt is the first 429.
A success clears the email's count (not the address's: one valid account must not reset an attacker's count).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from itsdangerous import BadSignature, URLSafeSerializer
from sqlalchemy import delete
from sqlmodel import Session, col, select

from app.console.permissions import Staff
from app.models import LoginThrottle, StaffMember, StaffSession, utc_now
from app.settings import Settings

SESSION_COOKIE = "memdesk_console"
LOGIN_CSRF_COOKIE = "memdesk_console_login"
CSRF_FORM_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
# Requests a page makes by itself (live refreshes) carry this header and do not extend the session.
BACKGROUND_HEADER = "X-Console-Background"
TOUCH_INTERVAL_S = 60.0
TOKEN_BYTES = 32
LOGIN_FORM_MAX_AGE_S = 3_600
_SESSION_SALT = "memdesk.console.session"
_LOGIN_SALT = "memdesk.console.login-csrf"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def tokens_match(expected: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


class CookieSigner:
    """Signs and checks the values the console keeps in cookies."""

    def __init__(self, secret_key: str) -> None:
        self._session = URLSafeSerializer(secret_key, salt=_SESSION_SALT)
        self._login = URLSafeSerializer(secret_key, salt=_LOGIN_SALT)

    def session_cookie(self, token: str) -> str:
        return str(self._session.dumps(token))

    def session_token(self, cookie: str | None) -> str | None:
        return _loaded(self._session, cookie)

    def login_cookie(self, token: str) -> str:
        return str(self._login.dumps(token))

    def login_token(self, cookie: str | None) -> str | None:
        return _loaded(self._login, cookie)


def _loaded(serializer: URLSafeSerializer, cookie: str | None) -> str | None:
    if not cookie:
        return None
    try:
        value = serializer.loads(cookie)
    except BadSignature:
        return None
    return value if isinstance(value, str) else None


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def start_session(session: Session, member: StaffMember) -> str:
    """A new signed-in session for ``member``; returns the token for the cookie (committed)."""
    assert member.id is not None
    token = new_token()
    session.add(StaffSession(token_digest=token_digest(token), staff_id=member.id, csrf_token=new_token()))
    session.commit()
    return token


def end_session(session: Session, token: str) -> None:
    session.execute(delete(StaffSession).where(col(StaffSession.token_digest) == token_digest(token)))
    session.commit()


def _expired(row: StaffSession, settings: Settings, now: datetime) -> bool:
    idle = now - row.last_seen_at > timedelta(seconds=settings.console_session_idle_s)
    too_old = now - row.created_at > timedelta(seconds=settings.console_session_max_age_s)
    return idle or too_old


def load_session(
    session: Session, token: str, settings: Settings, *, activity: bool = True, now: datetime | None = None
) -> Staff | None:
    """The staff member of a live session, or None (unknown, expired or disabled; an expired row is deleted).
    ``activity`` records the request as use of the session."""
    moment = now or utc_now()
    statement = (
        select(StaffSession, StaffMember)
        .join(StaffMember, col(StaffMember.id) == col(StaffSession.staff_id))
        .where(StaffSession.token_digest == token_digest(token))
    )
    found = session.exec(statement).first()
    if found is None:
        session.commit()
        return None
    row, member = found
    if not member.active or _expired(row, settings, moment):
        session.delete(row)
        session.commit()
        return None
    if activity and (moment - row.last_seen_at).total_seconds() >= TOUCH_INTERVAL_S:
        row.last_seen_at = moment
        session.add(row)
    session.commit()
    assert member.id is not None and row.id is not None
    return Staff(
        member.id,
        member.name,
        member.email,
        member.role,
        row.id,
        row.csrf_token,
        notify_desktop=member.notify_desktop,
        notify_sound=member.notify_sound,
        availability=member.availability.value,
    )


# --- throttling ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThrottleKeys:
    """The two counters one sign-in attempt is charged to, with their limits."""

    email: str
    address: str
    email_limit: int
    address_limit: int

    @classmethod
    def of(cls, email: str, address: str, settings: Settings) -> ThrottleKeys:
        return cls(
            email=f"email:{email.strip().lower()}",
            address=f"address:{address}",
            email_limit=settings.console_login_failures_per_email,
            address_limit=settings.console_login_failures_per_address,
        )


def locked_for(session: Session, keys: ThrottleKeys, *, now: datetime | None = None) -> float | None:
    """Seconds until sign-in is allowed again for these keys, or None when it is allowed now."""
    moment = now or utc_now()
    rows = session.exec(select(LoginThrottle).where(col(LoginThrottle.key).in_([keys.email, keys.address]))).all()
    waits = [(row.locked_until - moment).total_seconds() for row in rows if row.locked_until is not None]
    longest = max((wait for wait in waits if wait > 0), default=None)
    return longest


def record_failure(session: Session, keys: ThrottleKeys, settings: Settings, *, now: datetime | None = None) -> None:
    """Count one failed sign-in on both keys (in the caller's transaction); a key whose count reaches its limit is
    locked from the next attempt on."""
    moment = now or utc_now()
    window = timedelta(seconds=settings.console_login_window_s)
    for key, limit in ((keys.email, keys.email_limit), (keys.address, keys.address_limit)):
        row = session.get(LoginThrottle, key) or LoginThrottle(key=key, window_started_at=moment)
        if moment - row.window_started_at > window:
            row.failures, row.window_started_at = 0, moment
        row.failures += 1
        if row.failures >= limit:
            row.locked_until = moment + timedelta(seconds=settings.console_login_lockout_s)
            row.failures, row.window_started_at = 0, moment
        session.add(row)


def clear_failures(session: Session, keys: ThrottleKeys) -> None:
    session.execute(delete(LoginThrottle).where(col(LoginThrottle.key) == keys.email))
