"""Staff accounts: adding, listing, disabling and re-enabling staff, and setting passwords.

These functions are what ``memdesk staff add/list/disable/set-password`` and the console's staff page call; each
takes the caller's session and commits its own change together with its audit event (``actor`` says who acted:
``cli`` for the command line, ``staff:<id>`` in the console). Passwords are hashed with argon2 (pwdlib's recommended
hasher); a password never leaves this module in any other form. Disabling a member or changing their password ends
every session they have open.

``read_password`` takes the password from an interactive prompt (asked twice), or from ``MEMDESK_STAFF_PASSWORD``
when there is no terminal (scripts, containers).
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from pwdlib import PasswordHash
from sqlalchemy import delete
from sqlmodel import Session, col, select

from app.console.audit import record_audit_event
from app.models import StaffMember, StaffRole, StaffSession

MIN_PASSWORD_CHARS = 12
MAX_PASSWORD_CHARS = 1_024  # argon2 hashes any length; this only bounds the work one request can ask for
MAX_NAME_CHARS = 200
MAX_EMAIL_CHARS = 320
PASSWORD_ENVIRONMENT_VARIABLE = "MEMDESK_STAFF_PASSWORD"
CLI_ACTOR = "cli"

_hasher = PasswordHash.recommended()
# Verified against when an email is unknown, so a wrong email takes as long as a wrong password.
_UNKNOWN_USER_HASH = _hasher.hash("memdesk-unknown-staff-member")


class StaffError(ValueError):
    """A staff change that cannot be made; the message says why and what to do."""


class StaffNotFoundError(StaffError, LookupError):
    pass


def normalize_email(email: str) -> str:
    normalized = email.strip().lower()
    well_formed = "@" in normalized.strip("@") and not any(c.isspace() for c in normalized)
    if not well_formed or not 3 <= len(normalized) <= MAX_EMAIL_CHARS:
        raise StaffError(f"{email!r} is not an email address; give one like sam@example.com.")
    return normalized


def check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_CHARS:
        raise StaffError(f"The password is too short: use at least {MIN_PASSWORD_CHARS} characters.")
    if len(password) > MAX_PASSWORD_CHARS:
        raise StaffError(f"The password is too long: use at most {MAX_PASSWORD_CHARS} characters.")
    return password


def hash_password(password: str) -> str:
    return _hasher.hash(check_password(password))


def verify_password(password: str, password_hash: str | None) -> tuple[bool, str | None]:
    """(matches, new hash when the stored one uses outdated parameters). Takes the same time for unknown users."""
    if password_hash is None or len(password) > MAX_PASSWORD_CHARS:
        _hasher.verify(password[:MAX_PASSWORD_CHARS], _UNKNOWN_USER_HASH)
        return False, None
    return _hasher.verify_and_update(password, password_hash)


def find_staff(session: Session, email: str) -> StaffMember:
    found = session.exec(select(StaffMember).where(StaffMember.email == normalize_email(email))).first()
    if found is None:
        raise StaffNotFoundError(f"No staff member with the email {email!r}; `memdesk staff list` shows them all.")
    return found


def _audit(session: Session, actor: str, action: str, member: StaffMember, **detail: Any) -> None:
    assert member.id is not None
    record_audit_event(
        session, actor=actor, action=f"staff.{action}", target_type="staff", target_id=member.id, detail=detail
    )


def add_staff(
    session: Session, *, email: str, name: str, role: StaffRole | str, password: str, actor: str = CLI_ACTOR
) -> StaffMember:
    """Create a staff member who can sign in to the console at once."""
    normalized = normalize_email(email)
    clean_name = " ".join(name.split())
    if not clean_name or len(clean_name) > MAX_NAME_CHARS:
        raise StaffError(f"Give the staff member a name of 1 to {MAX_NAME_CHARS} characters.")
    try:
        chosen_role = StaffRole(role)
    except ValueError as error:
        roles = ", ".join(choice.value for choice in StaffRole)
        raise StaffError(f"Unknown role {role!r}; choose one of {roles}.") from error
    if session.exec(select(StaffMember.id).where(StaffMember.email == normalized)).first() is not None:
        raise StaffError(f"A staff member with the email {normalized} already exists.")
    member = StaffMember(email=normalized, name=clean_name, role=chosen_role, password_hash=hash_password(password))
    session.add(member)
    session.flush()
    _audit(session, actor, "added", member, email=normalized, role=chosen_role.value)
    session.commit()
    return member


def list_staff(session: Session) -> list[StaffMember]:
    members = list(
        session.exec(select(StaffMember).order_by(col(StaffMember.active).desc(), col(StaffMember.name))).all()
    )
    session.commit()
    return members


def _end_sessions(session: Session, member: StaffMember) -> None:
    session.execute(delete(StaffSession).where(col(StaffSession.staff_id) == member.id))


def set_active(session: Session, email: str, *, active: bool, actor: str = CLI_ACTOR) -> StaffMember:
    """Disable a staff member (their sessions end at once) or enable them again."""
    member = find_staff(session, email)
    member.active = active
    session.add(member)
    if not active:
        _end_sessions(session, member)
    _audit(session, actor, "enabled" if active else "disabled", member)
    session.commit()
    return member


def disable_staff(session: Session, email: str, *, actor: str = CLI_ACTOR) -> StaffMember:
    return set_active(session, email, active=False, actor=actor)


def set_password(session: Session, email: str, password: str, *, actor: str = CLI_ACTOR) -> StaffMember:
    """Replace a staff member's password; every session they had open ends."""
    member = find_staff(session, email)
    member.password_hash = hash_password(password)
    session.add(member)
    _end_sessions(session, member)
    _audit(session, actor, "password_set", member)
    session.commit()
    return member


def read_password(
    *,
    environ: Mapping[str, str] = os.environ,
    interactive: bool | None = None,
    prompt: Callable[[str], str] = getpass.getpass,
) -> str:
    """The new password: typed twice at a prompt, or ``MEMDESK_STAFF_PASSWORD`` when there is no terminal."""
    if interactive is None:
        interactive = sys.stdin.isatty()
    if not interactive:
        password = environ.get(PASSWORD_ENVIRONMENT_VARIABLE)
        if not password:
            raise StaffError(
                f"No terminal to ask for the password: set {PASSWORD_ENVIRONMENT_VARIABLE} for this command."
            )
        return check_password(password)
    password = check_password(prompt("Password: "))
    if prompt("Repeat the password: ") != password:
        raise StaffError("The two passwords differ; nothing was changed.")
    return password
