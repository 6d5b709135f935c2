"""Canned replies: saved answers a staff member inserts by typing ``/`` and a shortcut in the composer.

The team's replies are kept by supervisors; every member keeps their own besides. A reply's text may name a few
fields of the conversation, filled in when it is inserted: ``{{ customer.first_name }}``, ``{{ customer.name }}``,
``{{ agent.first_name }}``, ``{{ agent.name }}`` and ``{{ order.number }}`` (the order the conversation is about).

The fields are substituted by one regular expression over that fixed list rather than rendered by a template
engine: a canned reply needs nothing else, and a text staff write can then reach no attribute, loop or filter at
all. A ``{{ … }}`` naming anything else is refused when the reply is saved, with the list of the fields there are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import or_
from sqlmodel import Session, col, select

from app.console.permissions import Permission, Staff
from app.models import CannedReply, Conversation, Customer
from app.models.console import CANNED_BODY_LENGTH, CANNED_SHORTCUT_LENGTH

FIELDS = ("customer.first_name", "customer.name", "agent.first_name", "agent.name", "order.number")
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_SHORTCUT = re.compile(r"[a-z0-9][a-z0-9_-]*")
SUGGESTIONS_SHOWN = 8
ORDER_FOCUS = "order"


class CannedReplyError(ValueError):
    """A reply that cannot be saved or changed; the message says why, for the staff member."""


@dataclass(frozen=True)
class CannedView:
    id: int
    shortcut: str
    body: str
    team: bool


def check(shortcut: str, body: str) -> tuple[str, str]:
    """The shortcut (lowercase, without its ``/``) and the text, or ``CannedReplyError``."""
    shortcut = shortcut.strip().lstrip("/").lower()
    body = body.strip()
    if not _SHORTCUT.fullmatch(shortcut) or len(shortcut) > CANNED_SHORTCUT_LENGTH:
        raise CannedReplyError(
            f"A shortcut is up to {CANNED_SHORTCUT_LENGTH} lowercase letters, digits, - or _, such as “refund-time”."
        )
    if not body or len(body) > CANNED_BODY_LENGTH:
        raise CannedReplyError(f"The reply needs a text of at most {CANNED_BODY_LENGTH} characters.")
    unknown = sorted({name for name in _PLACEHOLDER.findall(body) if name not in FIELDS})
    if unknown:
        known = ", ".join(f"{{{{ {name} }}}}" for name in FIELDS)
        raise CannedReplyError(f"Unknown field {', '.join(repr(name) for name in unknown)}; the fields are {known}.")
    return shortcut, body


# A guest has no name: "Hi there," reads better than "Hi ,".
FALLBACKS = {"customer.first_name": "there", "customer.name": "there"}


def fill(body: str, values: Mapping[str, str]) -> str:
    """``body`` with each field replaced by its value (its fallback, or empty, when the conversation has none)."""
    return _PLACEHOLDER.sub(lambda match: values.get(match.group(1)) or FALLBACKS.get(match.group(1), ""), body)


def field_values(session: Session, conversation_id: int | None, staff: Staff) -> dict[str, str]:
    values = {"agent.name": staff.name, "agent.first_name": staff.name.split()[0] if staff.name.split() else ""}
    conversation = session.get(Conversation, conversation_id) if conversation_id is not None else None
    if conversation is None:
        return values
    customer = session.get(Customer, conversation.customer_id)
    name = (customer.name or "").strip() if customer else ""
    values["customer.name"] = name
    values["customer.first_name"] = name.split()[0] if name else ""
    if conversation.focus_kind == ORDER_FOCUS and conversation.focus_ref:
        values["order.number"] = conversation.focus_ref
    return values


def visible(session: Session, staff: Staff, query: str = "") -> list[CannedView]:
    """The team's replies and this member's own, by shortcut; ``query`` keeps those whose shortcut starts with it
    or whose text holds it."""
    statement = select(CannedReply).where(
        or_(col(CannedReply.owner_staff_id).is_(None), col(CannedReply.owner_staff_id) == staff.id)
    )
    wanted = query.strip().lstrip("/").lower()
    if wanted:
        escaped = wanted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        statement = statement.where(
            or_(
                col(CannedReply.shortcut).like(f"{escaped}%", escape="\\"),
                col(CannedReply.body).ilike(f"%{escaped}%", escape="\\"),
            )
        )
    rows = session.exec(statement.order_by(col(CannedReply.shortcut), col(CannedReply.id))).all()
    return [CannedView(row.id or 0, row.shortcut, row.body, row.owner_staff_id is None) for row in rows]


def add(session: Session, staff: Staff, shortcut: str, body: str, *, team: bool) -> CannedReply:
    """A new reply (the caller commits): the team's needs the supervisor's permission, and a shortcut is used once
    among the replies this member sees."""
    if team and not staff.can(Permission.MANAGE_CANNED_REPLIES):
        raise PermissionError("Only supervisors keep the team's canned replies; save it as your own instead.")
    shortcut, body = check(shortcut, body)
    if any(view.shortcut == shortcut for view in visible(session, staff)):
        raise CannedReplyError(f"The shortcut /{shortcut} is taken; choose another.")
    reply = CannedReply(shortcut=shortcut, body=body, owner_staff_id=None if team else staff.id, created_by=staff.id)
    session.add(reply)
    return reply


def remove(session: Session, staff: Staff, reply_id: int) -> CannedReply:
    """Delete a reply this member may change (the caller commits); ``LookupError`` for one they cannot see."""
    reply = session.get(CannedReply, reply_id)
    if reply is None or reply.owner_staff_id not in (None, staff.id):
        raise LookupError("No such canned reply.")
    if reply.owner_staff_id is None and not staff.can(Permission.MANAGE_CANNED_REPLIES):
        raise PermissionError("Only supervisors change the team's canned replies.")
    session.delete(reply)
    return reply
