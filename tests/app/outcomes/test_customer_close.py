"""The customer ends their own chat ("That's all, thanks"): the conversation closes with its outcome decided as any
close, the close is audited as the customer's, and the widget is told whether to ask for a rating."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import select

from app.models import AuditEvent, Conversation, ConversationOutcome, ConversationStatus, Resolution
from app.outcomes.customer_close import CUSTOMER_CLOSE_ACTION
from tests.support.console_support import console_app
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def test_a_customer_who_is_done_closes_the_chat_the_bot_resolved_and_is_asked_to_rate(console: LiveApp) -> None:
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "where is my parcel?"})
    console.wait_for_reply(conversation)

    closed = widget.post(f"/api/widget/conversations/{conversation}/close")
    assert closed.status_code == 200, closed.text
    assert closed.json()["status"] == "closed" and closed.json()["rating"]["asked"] is True

    key = console.conversation_key(conversation)
    with console.db() as session:
        found = session.get(Conversation, key)
        outcome = session.get(ConversationOutcome, key)
        audit = session.exec(select(AuditEvent).where(AuditEvent.action == CUSTOMER_CLOSE_ACTION)).all()
    assert found is not None and found.status == ConversationStatus.CLOSED
    assert outcome is not None and outcome.resolution == Resolution.BOT and outcome.closed_at is not None
    assert [event.target_id for event in audit] == [str(key)] and audit[0].actor.startswith("customer:cus_")

    again = widget.post(f"/api/widget/conversations/{conversation}/close")
    assert again.status_code == 409 and "closed already" in again.json()["detail"]
    rated = widget.put(f"/api/widget/conversations/{conversation}/rating", json={"score": 5})
    assert rated.status_code == 200 and rated.json()["score"] == 5


def test_a_customer_cannot_close_another_customers_chat_or_one_that_does_not_exist(console: LiveApp) -> None:
    owner, _ = console.visitor()
    conversation = console.conversation(owner)
    stranger, _ = console.visitor()
    for path in (f"/api/widget/conversations/{conversation}/close", "/api/widget/conversations/cnv_nope/close",
                 "/api/widget/conversations/" + "9" * 400 + "/close"):  # fmt: skip
        refused = stranger.post(path)
        assert refused.status_code in (404, 422), (path, refused.status_code)
    with console.db() as session:
        found = session.get(Conversation, console.conversation_key(conversation))
    assert found is not None and found.status != ConversationStatus.CLOSED


def test_with_ratings_off_the_close_asks_for_none(tmp_path: Path, scripted_server: ScriptedLLMServer) -> None:
    for live in console_app(tmp_path, scripted_server, csat_enabled=False):
        widget, _ = live.visitor()
        conversation = live.conversation(widget)
        closed = widget.post(f"/api/widget/conversations/{conversation}/close")
        assert closed.status_code == 200 and closed.json()["rating"]["asked"] is False
        with live.db() as session:
            outcome = session.get(ConversationOutcome, live.conversation_key(conversation))
        # Nobody answered the customer: closing a chat with no reply is an abandoned one, as for any close.
        assert outcome is not None and outcome.resolution == Resolution.ABANDONED
