"""Whether routing is on: one row of ``desk_settings``, changed by supervisors, read where a handoff happens."""

from __future__ import annotations

from sqlmodel import Session

from app.models import DeskSetting, utc_now

ROUTING_KEY = "routing"


def routing_enabled(session: Session) -> bool:
    row = session.get(DeskSetting, ROUTING_KEY)
    return bool(row is not None and row.value.get("enabled"))


def set_routing(session: Session, enabled: bool, staff_id: int) -> None:
    """Turn routing on or off (the caller commits)."""
    row = session.get(DeskSetting, ROUTING_KEY) or DeskSetting(key=ROUTING_KEY)
    row.value = {"enabled": enabled}
    row.updated_by, row.updated_at = staff_id, utc_now()
    session.add(row)
