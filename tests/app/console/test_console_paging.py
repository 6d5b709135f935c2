"""A long conversation opens on its latest page; every earlier message is a "Show earlier messages" away, exactly
once, with tool results folded into their calls and compaction cards after the last message they cover."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session

from app.console.transcript import TRANSCRIPT_PAGE_MESSAGES, TranscriptPage, load_transcript
from app.db import create_db_engine, migrate
from app.models import Message, MessageAuthor, MessageRole, StaffRole
from tests.support.console_data import seed_conversation
from tests.support.console_support import StaffClient, console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer

NOTE = "PRIVATE-NOTE-7f3a: customer is a reseller, check the invoice first."
EARLIER_LINK = re.compile(r'hx-get="/console/conversations/[^/"]+/transcript\?before=(\d+)"')
ENTRY_ID = re.compile(r'<li id="m-(\d+)"')
CARD_ID = re.compile(r'<li id="compaction-(\d+)"')


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def _exchange(conversation_id: int, number: int) -> list[Message]:
    call_id = f"call_page_{number}"
    arguments = json.dumps({"order_number": f"#W{number:07d}"})
    return [
        Message(conversation_id=conversation_id, role=MessageRole.USER, author=MessageAuthor.CUSTOMER,
                content=f"Question {number}"),
        Message(conversation_id=conversation_id, role=MessageRole.ASSISTANT, author=MessageAuthor.BOT, content="",
                tool_calls=[{"id": call_id, "type": "function",
                             "function": {"name": "get_order", "arguments": arguments}}]),
        Message(conversation_id=conversation_id, role=MessageRole.TOOL, author=MessageAuthor.BOT,
                tool_call_id=call_id, content=json.dumps({"status": f"shipped-{number}"})),
        Message(conversation_id=conversation_id, role=MessageRole.ASSISTANT, author=MessageAuthor.BOT,
                content=f"Answer {number}"),
    ]  # fmt: skip


def _pages(session: Session, conversation_id: int) -> list[TranscriptPage]:
    """Every page, newest first, as "Show earlier messages" reaches them."""
    pages = [load_transcript(session, conversation_id)]
    while pages[-1].earlier_before is not None:
        before = pages[-1].earlier_before
        pages.append(load_transcript(session, conversation_id, before_id=before, through_latest=False))
    return pages


def _walk(staff: StaffClient, public_id: str) -> list[str]:
    """The conversation page and each earlier fragment htmx would fetch, newest first."""
    pages = [staff.get(f"/console/conversations/{public_id}").text]
    while found := EARLIER_LINK.search(pages[-1]):
        fragment = staff.get(f"/console/conversations/{public_id}/transcript?before={found.group(1)}")
        assert fragment.status_code == 200
        pages.append(fragment.text)
    return pages


def test_a_long_conversation_pages_back_to_its_first_message_without_losing_or_repeating_any(
    console: LiveApp,
) -> None:
    with Session(console.services.db) as session:
        seeded = seed_conversation(session, messages=500, compactions=5)
    agent = signed_in(console, StaffRole.AGENT)
    pages = _walk(agent, seeded.public_id)
    assert len(pages) >= 5
    shown = [int(found) for page in reversed(pages) for found in ENTRY_ID.findall(page)]
    with Session(console.services.db) as session:
        kept = [m.id for m in (session.get(Message, i) for i in seeded.message_ids) if m and m.role != MessageRole.TOOL]
    assert shown == kept  # every message but the folded tool results, once each, in order
    calls = sum(page.count("looked up order #W2378156: shipped") for page in pages)
    assert calls == len(seeded.message_ids) // 4  # every result folded into its call's line
    cards = [int(found) for page in reversed(pages) for found in CARD_ID.findall(page)]
    assert cards == seeded.compaction_ids
    assert "Show earlier messages" not in pages[-1]


def test_the_earlier_link_without_javascript_shows_the_earlier_page_through_the_latest(console: LiveApp) -> None:
    with Session(console.services.db) as session:
        seeded = seed_conversation(session, messages=300, compactions=1)
    agent = signed_in(console, StaffRole.AGENT)
    latest = agent.get(f"/console/conversations/{seeded.public_id}").text
    found = re.search(r'href="/console/conversations/[^?"]+\?before=(\d+)#m-(\d+)"', latest)
    assert found and found.group(1) == found.group(2)
    longer = agent.get(f"/console/conversations/{seeded.public_id}?before={found.group(1)}").text
    latest_ids, longer_ids = ENTRY_ID.findall(latest), ENTRY_ID.findall(longer)
    assert longer_ids[-len(latest_ids) :] == latest_ids and len(longer_ids) > len(latest_ids)
    assert agent.get(f"/console/conversations/{seeded.public_id}?before=0").status_code == 400
    assert agent.get(f"/console/conversations/{seeded.public_id}/transcript?before=x").status_code == 400


def test_a_private_note_on_an_earlier_page_is_shown_to_staff_and_never_to_the_widget(console: LiveApp) -> None:
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    agent = signed_in(console, StaffRole.AGENT)
    assert agent.post(f"/console/conversations/{conversation}/note", {"text": NOTE}).status_code == 303
    key = console.conversation_key(conversation)
    assert key is not None
    with Session(console.services.db) as session:
        session.add_all([m for number in range(60) for m in _exchange(key, number)])
        session.commit()
    pages = _walk(agent, conversation)
    assert len(pages) >= 3 and NOTE not in pages[0]
    assert sum(page.count(NOTE) for page in pages) == 1 and NOTE in pages[-1]
    shown = widget.get(f"/api/widget/conversations/{conversation}/messages")
    assert shown.status_code == 200 and "Answer 59" in shown.text and NOTE not in shown.text


def test_a_tool_result_stays_with_its_call_when_a_message_came_between_them_at_a_page_boundary(
    console: LiveApp,
) -> None:
    with Session(console.services.db) as session:
        conversation_id = seed_conversation(session, messages=8, compactions=0).conversation_id
        call, result = _exchange(conversation_id, 900)[1:3]
        interjection = Message(conversation_id=conversation_id, role=MessageRole.USER,
                               author=MessageAuthor.CUSTOMER, content="Hello? Still there?")  # fmt: skip
        # The result is the page's oldest counted message: the page starts at the message before it.
        after = [m for number in range(TRANSCRIPT_PAGE_MESSAGES) for m in _exchange(conversation_id, number)]
        session.add_all([call, interjection, result, *after[: TRANSCRIPT_PAGE_MESSAGES - 1]])
        session.commit()
        assert result.id is not None and interjection.id is not None
        latest, earlier = _pages(session, conversation_id)[:2]
    latest_ids = [entry.message.id for entry in latest.entries if entry.message]
    earlier_ids = [entry.message.id for entry in earlier.entries if entry.message]
    assert latest_ids[0] == interjection.id and result.id not in latest_ids + earlier_ids
    lines = [line for entry in earlier.entries if entry.message for line in entry.message.tool_lines]
    assert lines[-1].call_id == "call_page_900" and lines[-1].summary.endswith(": shipped-900")


def test_compaction_cards_follow_the_last_message_they_cover_on_whichever_page_holds_it(console: LiveApp) -> None:
    with Session(console.services.db) as session:
        seeded = seed_conversation(session, messages=500, compactions=5)
        pages = _pages(session, seeded.conversation_id)
    entries = [entry for page in reversed(pages) for entry in page.entries]
    for card_id in seeded.compaction_ids:
        at = next(i for i, entry in enumerate(entries) if entry.compaction and entry.compaction.id == card_id)
        before = entries[at - 1].message
        assert before is not None and before.id is not None
        card = entries[at].compaction
        assert card is not None and before.id <= card.last_message_id
        later = next(entry.message for entry in entries[at + 1 :] if entry.message)
        assert later.id is not None and later.id > card.last_message_id
    assert sum(len(page.entries) for page in pages) == len(entries)


def test_pages_on_postgresql_hold_every_message_once(postgres_url: str) -> None:
    migrate(postgres_url)
    engine = create_db_engine(postgres_url)
    try:
        with Session(engine) as session:
            seeded = seed_conversation(session, messages=260, compactions=3)
            pages = _pages(session, seeded.conversation_id)
            tool_results = {
                m.id for m in (session.get(Message, i) for i in seeded.message_ids) if m and m.role == MessageRole.TOOL
            }
    finally:
        engine.dispose()
    shown = [e.message.id for page in reversed(pages) for e in page.entries if e.message]
    assert len(pages) == 3 and shown == [i for i in seeded.message_ids if i not in tool_results]
    cards = [e.compaction.id for page in reversed(pages) for e in page.entries if e.compaction]
    assert cards == seeded.compaction_ids
