"""What each staff role may do in the console.

- agent: the inbox and conversations, replies, takeover, hand-back, private notes, close, reopen, assignment;
  reading memories and the conversation figures of the overview; reading the knowledge page and its search.
- supervisor: also adding, editing, locking and deleting memories, all LLM usage and cost, retrying failed
  outbox rows; importing, re-importing and deleting knowledge, and resolving content gaps.
- admin: also managing staff, and exporting or erasing a customer.

A refusal is a 403 and an audit event (``console.forbidden``), recorded by the route dependency that checks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.models import StaffRole


class Permission(StrEnum):
    WORK_CONVERSATIONS = "work_conversations"
    EDIT_MEMORIES = "edit_memories"
    VIEW_USAGE = "view_usage"
    RETRY_OUTBOX = "retry_outbox"
    MANAGE_KNOWLEDGE = "manage_knowledge"
    MANAGE_PLAYBOOKS = "manage_playbooks"
    MANAGE_CANNED_REPLIES = "manage_canned_replies"  # the team's; every member keeps their own
    MANAGE_ROUTING = "manage_routing"
    MANAGE_STAFF = "manage_staff"
    EXPORT_ERASE = "export_erase"


# How the audit trail, and a memory's ``edited_by``, name a staff member: ``staff:<id>``.
STAFF_ACTOR_PREFIX = "staff:"

_AGENT = frozenset({Permission.WORK_CONVERSATIONS})
_SUPERVISOR = _AGENT | {
    Permission.EDIT_MEMORIES,
    Permission.VIEW_USAGE,
    Permission.RETRY_OUTBOX,
    Permission.MANAGE_KNOWLEDGE,
    Permission.MANAGE_PLAYBOOKS,
    Permission.MANAGE_CANNED_REPLIES,
    Permission.MANAGE_ROUTING,
}
_ADMIN = _SUPERVISOR | {Permission.MANAGE_STAFF, Permission.EXPORT_ERASE}
ROLE_PERMISSIONS: dict[StaffRole, frozenset[Permission]] = {
    StaffRole.AGENT: _AGENT,
    StaffRole.SUPERVISOR: _SUPERVISOR,
    StaffRole.ADMIN: _ADMIN,
}


@dataclass(frozen=True)
class Staff:
    """The signed-in staff member of one request."""

    id: int
    name: str
    email: str
    role: StaffRole
    session_id: int
    csrf_token: str
    notify_desktop: bool = False
    notify_sound: bool = False
    availability: str = "offline"

    @property
    def actor(self) -> str:
        """How the audit trail names this member."""
        return f"{STAFF_ACTOR_PREFIX}{self.id}"

    def can(self, permission: Permission) -> bool:
        return permission in ROLE_PERMISSIONS[self.role]
