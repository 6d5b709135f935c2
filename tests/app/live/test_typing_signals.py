"""Typing signals reach the other side as events, at most one "typing" per person and conversation every couple of
seconds whatever a page sends, and every "stopped"; a customer signals only in their own conversation and staff
only with a CSRF token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from app.live.broker import Event, EventBroker
from app.live.typing import CUSTOMER_TYPING, STAFF_TYPING, TypingSignals
from app.models import StaffRole
from tests.support.console_support import console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply, ScriptedToolCall


def _published(broker: EventBroker, conversation_id: int) -> list[Event]:
    async def read() -> list[Event]:
        with broker.subscribe(conversation_id, f"{broker.boot}:0") as subscription:
            events = []
            while (event := await subscription.next(0.05)) is not None:
                events.append(event)
            return events

    return anyio.run(read)


def test_a_burst_of_signals_is_one_event_and_stopping_always_passes() -> None:
    broker = EventBroker()
    signals = TypingSignals(broker)
    sent = [signals.staff(7, 1, "Sam Rivera", on=True) for _ in range(50)]
    assert sent == [True] + [False] * 49
    assert signals.customer(7, on=True)  # another person: their own interval
    assert signals.staff(7, 2, "Kim Lee", on=True)
    assert signals.staff(7, 1, "Sam Rivera", on=False)
    assert signals.staff(7, 1, "Sam Rivera", on=True)  # stopped, then started again: passes at once
    events = [(event.type, event.data) for event in _published(broker, 7)]
    assert events == [
        (STAFF_TYPING, {"on": True, "who": "Sam Rivera"}),
        (CUSTOMER_TYPING, {"on": True}),
        (STAFF_TYPING, {"on": True, "who": "Kim Lee"}),
        (STAFF_TYPING, {"on": False, "who": "Sam Rivera"}),
        (STAFF_TYPING, {"on": True, "who": "Sam Rivera"}),
    ]


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def test_the_routes_check_who_may_signal_and_what_they_send(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    transfer = ScriptedToolCall("transfer_to_human", json.dumps({"summary": "Wants a refund for a broken kettle."}))
    scripted_server.enqueue(ScriptedReply.with_tool_calls(transfer))
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "escalate my kettle case"})
    console.wait_for_reply(conversation)
    typing = f"/api/widget/conversations/{conversation}/typing"
    assert widget.post(typing, json={"on": True}).status_code == 204
    assert widget.post(typing, json={"on": "yes"}).status_code == 422
    stranger, _ = console.visitor()
    assert stranger.post(typing, json={"on": True}).status_code == 404
    assert console.client().post(typing, json={"on": True}).status_code == 401
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com", "Sam Rivera")
    staff_typing = f"/console/conversations/{conversation}/typing"
    assert sam.post(staff_typing, {"on": "true"}, csrf=False).status_code == 403
    assert sam.post(staff_typing, {"on": "true"}).status_code == 204
    assert sam.post("/console/conversations/cnv_doesNotExist/typing", {"on": "true"}).status_code == 404
    key = console.conversation_key(conversation)
    assert key is not None
    kinds = [(event.type, event.data) for event in _published(console.services.broker, key) if "typing" in event.type]
    assert (CUSTOMER_TYPING, {"on": True}) in kinds
    assert (STAFF_TYPING, {"on": True, "who": "Sam Rivera"}) in kinds
