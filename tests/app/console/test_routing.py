"""Routing: with it on, handoffs go in turn to online members with room, the rest wait in a queue served oldest
first when a slot frees, and a member going offline gives theirs back; with it off (the default) nothing is
assigned; only supervisors change it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlmodel import Session, col

from app.db import create_db_engine, upgrade
from app.models import Availability, Conversation, ConversationStatus, StaffMember, StaffRole
from app.routing.assign import queue, route
from app.routing.settings import set_routing
from tests.support.console_support import StaffClient, audit_actions, console_app, handed_off, signed_in
from tests.support.live_app import LiveApp
from tests.support.rows import add_customer_conversation
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def _assignee(live: LiveApp, conversation: str) -> int | None:
    key = live.conversation_key(conversation)
    with Session(live.services.db) as session:
        found = session.get(Conversation, key)
        assert found is not None
        return found.assigned_staff_id


def _online(member: StaffClient, value: str = "online") -> None:
    assert member.post("/console/availability", {"value": value, "back": "/console"}).status_code == 303


def test_two_agents_with_room_for_one_each_get_one_handoff_each_and_the_third_waits_for_a_free_slot(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    sue = signed_in(console, StaffRole.SUPERVISOR, "sue@example.com", "Sue Park")  # id 1, stays offline
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")  # id 2
    kim = signed_in(console, StaffRole.AGENT, "kim@example.com", "Kim Lee")  # id 3
    assert sam.get("/console/routing").status_code == 403
    assert sam.post("/console/routing", {"enabled": "on"}).status_code == 403
    off = handed_off(console, scripted_server, "Escalate: routing is still off")[1]
    assert _assignee(console, off) is None
    assert sue.post("/console/routing", {"enabled": "on"}).status_code == 303
    for member_id in (2, 3):
        assert sue.post(f"/console/routing/members/{member_id}/capacity", {"capacity": "1"}).status_code == 303
    assert sue.post("/console/routing/members/2/capacity", {"capacity": "51"}).status_code in (400, 422)
    assert sam.post("/console/availability", {"value": "asleep"}).status_code == 422
    _online(sam)  # the waiting conversation goes to Sam at once
    assert _assignee(console, off) == 2
    _online(kim)
    first = handed_off(console, scripted_server, "Escalate: the first")[1]
    second = handed_off(console, scripted_server, "Escalate: the second")[1]
    assert _assignee(console, first) == 3  # Kim was given none yet: her turn
    assert _assignee(console, second) is None  # both full: the queue
    page = sue.get("/console/routing").text
    assert f'href="/console/conversations/{second}"' in page and 'Queue <span class="muted">(1)</span>' in page
    assert sam.post(f"/console/conversations/{off}/close").status_code == 303
    assert _assignee(console, second) == 2  # Sam's slot freed: the oldest waiting goes to him
    _online(kim, "offline")
    assert _assignee(console, first) is None  # back to the queue; nobody has room
    assert "routing.assign" in [event.action for event in audit_actions(console, "routing")]
    assert 'value="online" selected' in sam.get("/console").text


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_round_robin_skips_full_and_absent_members_on_both_databases(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = f"sqlite:///{tmp_path / 'routing.db'}" if database == "sqlite" else request.getfixturevalue("postgres_url")
    engine = create_db_engine(url)
    upgrade(engine)
    try:
        with Session(engine) as session:
            members = [
                StaffMember(email=f"{name}@example.com", name=name, password_hash="x", capacity=capacity,
                            availability=availability)
                for name, capacity, availability in (
                    ("ann", 2, Availability.ONLINE),
                    ("bob", 1, Availability.ONLINE),
                    ("cat", 5, Availability.AWAY),
                )
            ]  # fmt: skip
            session.add_all(members)
            set_routing(session, True, 1)
            session.flush()
            conversations = []
            for _ in range(4):
                _, key = add_customer_conversation(session)
                session.execute(
                    update(Conversation)
                    .where(col(Conversation.id) == key)
                    .values(status=ConversationStatus.NEEDS_HUMAN)
                )
                conversations.append(key)
            given = [route(session, key) for key in conversations]
            session.commit()
            ann, bob, _ = (member.id for member in members)
            assert given == [ann, bob, ann, None]  # in turn, Bob full after one, Cat away: the fourth waits
            assert queue(session) == [conversations[3]]
    finally:
        engine.dispose()
