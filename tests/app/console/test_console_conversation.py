"""Staff working a conversation over real HTTP: inbox, takeover, replies, private notes, hand back, close, and what
the customer and the LLM see of it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session

from app.models import Conversation, ConversationStatus, Customer, MessageAuthor, StaffRole
from tests.support.console_support import StaffClient, audit_actions, console_app, signed_in
from tests.support.live_app import LiveApp, sse_events
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply, ScriptedToolCall

NOTE = "Private: customer was rude on the phone, check the refund policy"


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def replayed_events(live: LiveApp, client: httpx.Client, path: str) -> list[dict[str, Any]]:
    """Every event a stream holds from the start (``since=<boot>:0``), read until it goes quiet."""
    events: list[dict[str, Any]] = []
    since = {"since": f"{live.services.broker.boot}:0"}
    try:
        with client.stream("GET", path, params=since, timeout=httpx.Timeout(10.0, read=1.0)) as response:
            assert response.status_code == 200
            events.extend(sse_events(response))
    except httpx.ReadTimeout:
        pass
    return events


def _handed_off(
    live: LiveApp, server: ScriptedLLMServer, text: str = "Please escalate my refund case"
) -> tuple[httpx.Client, str]:
    # Words the handoff detector does not take as a request for a person: the model decides to transfer.
    transfer = ScriptedToolCall("transfer_to_human", json.dumps({"summary": "Wants a refund for a broken kettle."}))
    server.enqueue(ScriptedReply.with_tool_calls(transfer))
    widget, _ = live.visitor()
    conversation = live.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": text})
    live.wait_for_reply(conversation)
    return widget, conversation


def _status(live: LiveApp, conversation: str) -> ConversationStatus:
    with live.db() as session:
        found = session.get(Conversation, live.conversation_key(conversation))
        assert found is not None
        return found.status


def test_the_inbox_lists_conversations_needing_a_person_first_and_updates_live(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    agent = signed_in(console, StaffRole.AGENT)
    quiet_widget, _ = console.visitor()
    quiet = console.conversation(quiet_widget)
    quiet_widget.post(f"/api/widget/conversations/{quiet}/messages", json={"content": "just browsing"})
    console.wait_for_reply(quiet)

    received: list[dict[str, Any]] = []
    opened = threading.Event()

    def listen() -> None:
        try:
            with agent.http.stream("GET", "/console/events", timeout=httpx.Timeout(10.0, read=5.0)) as response:
                opened.set()
                for event in sse_events(response):
                    received.append(event)
                    if len(received) >= 3:
                        return
        except httpx.ReadTimeout:
            return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert opened.wait(5.0)
    _, urgent = _handed_off(console, scripted_server, "my kettle arrived broken")
    listener.join(10.0)
    assert received and {event["event"] for event in received} == {"inbox"}

    listing = agent.http.get("/console/inbox", headers={"HX-Request": "true"}).text
    assert listing.index(urgent) < listing.index(quiet)
    assert "needs human" in listing and "waiting" in listing
    needs_human_only = agent.get("/console/inbox?status=needs_human").text
    assert urgent in needs_human_only and quiet not in needs_human_only
    assert "No conversations here." in agent.get("/console/inbox?mine=true").text


def test_take_over_and_reply_reach_the_customer_live_with_the_staff_members_name(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    widget, conversation = _handed_off(console, scripted_server)
    sam = signed_in(console, StaffRole.AGENT, name="Sam Rivera")
    page = sam.get(f"/console/conversations/{conversation}")
    assert page.status_code == 200 and "Wants a refund for a broken kettle." in page.text
    assert sam.post(f"/console/conversations/{conversation}/take-over").status_code == 303
    assert _status(console, conversation) == ConversationStatus.HUMAN
    assert sam.post(f"/console/conversations/{conversation}/reply", {"text": "Hi, I'm on it."}).status_code == 303

    requests_before = len(scripted_server.chat_requests)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "thanks!"})
    events = replayed_events(console, widget, f"/api/widget/conversations/{conversation}/events")
    created = [e["data"] for e in events if e["event"] == "message.created"]
    assert [(m["content"], m.get("staff_name")) for m in created[-3:]] == [
        ("Sam Rivera joined the conversation.", None),
        ("Hi, I'm on it.", "Sam Rivera"),
        ("thanks!", None),
    ]
    assert len(scripted_server.chat_requests) == requests_before  # the bot stays silent while a person has it
    trail = [e.action for e in audit_actions(console, "staff:1")]
    assert trail[-2:] == ["console.take_over", "console.reply"]


def test_a_double_takeover_cannot_happen(console: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    _, conversation = _handed_off(console, scripted_server)
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    kim = signed_in(console, StaffRole.AGENT, "kim@example.com", "Kim Lee")
    results: list[int] = []

    def take(client: StaffClient) -> None:
        results.append(client.post(f"/console/conversations/{conversation}/take-over").status_code)

    threads = [threading.Thread(target=take, args=(client,)) for client in (sam, kim)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [303, 409]
    joined = [m for m in console.transcript(conversation) if (m.content or "").endswith("joined the conversation.")]
    assert len(joined) == 1
    again = kim.http.post(
        f"/console/conversations/{conversation}/take-over",
        data={"csrf_token": kim.csrf_token},
        headers={"HX-Request": "true"},
    )
    assert again.status_code == 409 and "has already taken over this conversation" in again.text


def test_a_private_note_never_reaches_the_widget_its_events_or_the_llm(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    widget, conversation = _handed_off(console, scripted_server)
    sam = signed_in(console, StaffRole.AGENT)
    assert sam.post(f"/console/conversations/{conversation}/note", {"text": NOTE}).status_code == 303
    assert NOTE in sam.get(f"/console/conversations/{conversation}").text
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "anyone there?"})
    assert sam.post(f"/console/conversations/{conversation}/hand-back").status_code == 303
    console.wait_for_reply(conversation, count=2)

    base = f"/api/widget/conversations/{conversation}"
    responses = [widget.get(f"{base}/messages").text, widget.get("/api/widget/conversations").text]
    events = replayed_events(console, widget, f"{base}/events")
    assert events, "the widget stream replayed nothing"
    assert all(NOTE not in text for text in responses)
    assert all(NOTE not in json.dumps(event) for event in events)
    assert all(NOTE not in json.dumps(request.messages) for request in scripted_server.chat_requests)
    stored = [m for m in console.transcript(conversation) if m.content == NOTE]
    assert len(stored) == 1 and stored[0].private and stored[0].author == MessageAuthor.STAFF


def test_handing_back_makes_the_bot_answer_the_waiting_message(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    widget, conversation = _handed_off(console, scripted_server)
    sam = signed_in(console, StaffRole.AGENT)
    sam.post(f"/console/conversations/{conversation}/take-over")
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "where is order #W1?"})
    scripted_server.enqueue("The bot is back: order #W1 shipped.")
    assert sam.post(f"/console/conversations/{conversation}/hand-back").status_code == 303
    replies = console.wait_for_reply(conversation, count=2)
    assert replies[-1].content == "The bot is back: order #W1 shipped."
    assert _status(console, conversation) == ConversationStatus.BOT
    again = sam.post(f"/console/conversations/{conversation}/hand-back")
    assert again.status_code == 409 and "already has this conversation" in again.text


def test_close_reopen_and_assign(console: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    _, conversation = _handed_off(console, scripted_server)
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    kim_id = signed_in(console, StaffRole.AGENT, "kim@example.com", "Kim Lee")
    del kim_id
    base = f"/console/conversations/{conversation}"
    assert sam.post(f"{base}/assign", {"assigned_staff_id": "2"}).status_code == 303
    header = sam.http.get(f"{base}/state").text
    assert '<option value="2" selected>Kim Lee</option>' in header
    assert sam.post(f"{base}/assign", {"assigned_staff_id": "99"}).status_code == 400
    assert sam.post(f"{base}/close").status_code == 303
    assert _status(console, conversation) == ConversationStatus.CLOSED
    assert sam.post(f"{base}/reply", {"text": "hello?"}).status_code == 409
    assert sam.post(f"{base}/close").status_code == 409
    assert sam.post(f"{base}/reopen").status_code == 303
    assert _status(console, conversation) == ConversationStatus.HUMAN
    assert sam.post(f"{base}/reply", {"text": "   "}).status_code == 400
    assert sam.post("/console/conversations/cnv_doesNotExist/close").status_code == 404
    actions = [e.action for e in audit_actions(console, "staff:1")]
    assert actions[-3:] == ["console.assign", "console.close", "console.reopen"]


XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_customer_text_names_and_bot_replies_stay_inert_in_the_console(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(f"**Sure** {XSS} [click](javascript:alert(1))")
    widget, customer_ref = console.visitor()
    conversation = console.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": XSS})
    console.wait_for_reply(conversation)
    with Session(console.services.db) as session:
        customer = session.get(Customer, console.customer(customer_ref).id)
        assert customer is not None
        customer.name = XSS
        session.add(customer)
        session.commit()
    sam = signed_in(console, StaffRole.SUPERVISOR)
    pages = [
        sam.get("/console").text,
        sam.get(f"/console/conversations/{conversation}").text,
        sam.get(f"/console/customers/{customer_ref}/panel").text,
    ]
    for text in pages:
        assert "<script>alert" not in text and "<img src=x" not in text and 'href="javascript:' not in text
        assert "&lt;script&gt;alert(" in text
    assert "<strong>Sure</strong>" in pages[1]
