"""Each conversation's outcome is recorded where it happens: handoffs with their reason category, the first bot and
staff replies, a close with its resolution, a reopen; and a normal bot turn sends no statement for it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from app.models import ConversationOutcome, HandoffReason, Resolution, StaffRole
from app.tools.handoff import TransferToHumanTool
from tests.support.console_support import StaffClient, console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply, ScriptedToolCall


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def _outcome(live: LiveApp, conversation: str) -> ConversationOutcome:
    key = live.conversation_key(conversation)
    with live.db() as session:
        found = session.get(ConversationOutcome, key)
        assert found is not None, [(m.role, m.content) for m in live.transcript(conversation)]
        return found


def _chat(live: LiveApp, text: str, *, replies: int = 1) -> tuple[httpx.Client, str]:
    widget, _ = live.visitor()
    conversation = live.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": text})
    live.wait_for_reply(conversation, count=replies)
    return widget, conversation


def _transfer(category: str | None) -> ScriptedReply:
    arguments: dict[str, Any] = {"summary": "Wants a refund of $480 for a sofa, above what the bot may grant."}
    if category is not None:
        arguments["category"] = category
    return ScriptedReply.with_tool_calls(ScriptedToolCall("transfer_to_human", json.dumps(arguments)))


def _staff(live: LiveApp) -> StaffClient:
    return signed_in(live, StaffRole.AGENT, "sam@example.com", "Sam Rivera")


def test_a_conversation_the_bot_answered_and_staff_closed_is_resolved_by_the_bot(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue("Your order shipped yesterday.")
    _, conversation = _chat(console, "where is my order?")
    answered = _outcome(console, conversation)
    reply = next(m for m in console.transcript(conversation) if m.content == "Your order shipped yesterday.")
    assert answered.resolution == Resolution.OPEN and answered.first_bot_reply_at == reply.created_at
    assert answered.first_human_reply_at is None and answered.handoff_reason is None

    assert _staff(console).post(f"/console/conversations/{conversation}/close").status_code == 303
    closed = _outcome(console, conversation)
    assert closed.resolution == Resolution.BOT and closed.closed_at is not None
    assert closed.first_bot_reply_at == reply.created_at  # a close keeps the first reply's time


def test_a_handoff_keeps_the_models_category_and_a_staff_reply_makes_the_resolution_human(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(_transfer("policy"))
    _, conversation = _chat(console, "I need my money back for the sofa")
    handed = _outcome(console, conversation)
    assert handed.handoff_reason == HandoffReason.POLICY and handed.handed_off_at is not None

    sam, base = _staff(console), f"/console/conversations/{conversation}"
    assert sam.post(f"{base}/take-over").status_code == 303
    assert _outcome(console, conversation).first_human_reply_at is None  # the "joined" notice is no reply
    assert sam.post(f"{base}/reply", {"text": "Hi, I have approved the refund."}).status_code == 303
    replied = _outcome(console, conversation).first_human_reply_at
    assert replied is not None
    assert sam.post(f"{base}/reply", {"text": "Anything else?"}).status_code == 303
    assert _outcome(console, conversation).first_human_reply_at == replied

    assert sam.post(f"{base}/close").status_code == 303
    assert _outcome(console, conversation).resolution == Resolution.HUMAN
    assert sam.post(f"{base}/reopen").status_code == 303
    reopened = _outcome(console, conversation)
    assert (reopened.resolution, reopened.closed_at, reopened.reopen_count) == (Resolution.OPEN, None, 1)
    assert sam.post(f"{base}/close").status_code == 303 and sam.post(f"{base}/reopen").status_code == 303
    assert _outcome(console, conversation).reopen_count == 2


def test_a_customer_left_waiting_for_a_person_is_abandoned_at_close(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    _, conversation = _chat(console, "I want to talk to a real person please")
    waiting = _outcome(console, conversation)
    assert waiting.handoff_reason == HandoffReason.CUSTOMER_REQUEST
    assert _staff(console).post(f"/console/conversations/{conversation}/close").status_code == 303
    assert _outcome(console, conversation).resolution == Resolution.ABANDONED
    assert scripted_server.chat_requests == []  # the request was recognised without the model


def test_a_handoff_without_a_category_is_other(console: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    scripted_server.enqueue(_transfer(None))
    _, conversation = _chat(console, "I need my money back for the sofa")
    assert _outcome(console, conversation).handoff_reason == HandoffReason.OTHER


def test_a_turn_whose_model_fails_hands_off_as_a_model_failure_without_a_bot_reply(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text=None))  # neither text nor tool calls
    _, conversation = _chat(console, "where is my order?")
    failed = _outcome(console, conversation)
    assert failed.handoff_reason == HandoffReason.MODEL_FAILURE
    assert failed.first_bot_reply_at is None  # the fallback apology is the system's, not the bot's answer


def test_a_normal_bot_turn_sends_no_statement_for_the_outcome(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue("Your order shipped yesterday.", "It should arrive on Friday.")
    widget, conversation = _chat(console, "where is my order?")
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = console.services.db
    event.listen(engine, "before_cursor_execute", record)
    try:
        widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "and when will it come?"})
        console.wait_for_reply(conversation, count=2)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert any("INSERT INTO messages" in s for s in statements)  # the listener saw the turn
    assert not [s for s in statements if "conversation_outcomes" in s]


def test_the_handoff_tool_offers_the_model_every_reason_category() -> None:
    schema = TransferToHumanTool().parameters_schema()
    assert set(schema["properties"]["category"]["enum"]) == {reason.value for reason in HandoffReason}
