"""Playbooks in conversations: the customer's intent runs the shop's procedure with its tools and replies, in the
customer's language; a destructive step waits for the customer's yes, which the model cannot skip; follow-ups keep
the order in focus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
from sqlmodel import select

from app.console.playbooks import with_mode
from app.models import (
    Conclusion,
    ConclusionSource,
    Order,
    OrderStatus,
    PlaybookRun,
    RunStatus,
    Shipment,
    ShipmentStatus,
)
from app.settings import EMBEDDED_CHAT_MODEL
from app.turns.fact_replies import CAPABILITIES_REPLIES
from tests.support.live_app import LiveApp, add_customer_with_order, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply, ScriptedToolCall
from tests.support.settings import app_settings


@pytest.fixture
def desk(tmp_path: Any, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from run_live_app(app_settings(tmp_path, scripted_server, playbooks="on"))


def _order_status(live: LiveApp, number: str) -> OrderStatus:
    with live.db() as session:
        return session.exec(select(Order).where(Order.number == number)).one().status


def _say(live: LiveApp, client: Any, conversation_id: str, text: str, count: int) -> str:
    url = f"/api/widget/conversations/{conversation_id}/messages"
    assert client.post(url, json={"content": text}).status_code == 202
    return live.wait_for_reply(conversation_id, count=count)[-1].content or ""


def _tool_calls(live: LiveApp, conversation_id: str) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for message in live.transcript(conversation_id):
        for call in message.tool_calls or []:
            calls.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
    return calls


def test_a_cancel_waits_for_the_customers_yes_and_then_cancels(
    desk: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    add_customer_with_order(desk, external_id="pb-1", number="#W2000001", status=OrderStatus.PENDING)
    client, _ = desk.visitor("pb-1")
    conversation_id = desk.conversation(client)
    asked = _say(desk, client, conversation_id, "Please cancel order #W2000001", count=1)
    assert "Shall I cancel it?" in asked and "#W2000001" in asked
    assert _order_status(desk, "#W2000001") == OrderStatus.PENDING
    done = _say(desk, client, conversation_id, "Yes, please.", count=2)
    assert done.startswith("Done: order #W2000001 is cancelled")
    assert _order_status(desk, "#W2000001") == OrderStatus.CANCELLED
    assert ("cancel_order", {"order_number": "#W2000001", "reason": "Please cancel order #W2000001",
                             "confirmed": True}) in _tool_calls(desk, conversation_id)  # fmt: skip
    assert scripted_server.chat_requests == [], "the playbook needed no model"
    with desk.db() as session:
        run = session.exec(select(PlaybookRun)).one()
    assert (run.playbook, run.status) == ("cancel_order", RunStatus.COMPLETED)


def test_the_model_cannot_skip_the_confirmation_a_playbook_asked_for(
    desk: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    add_customer_with_order(desk, external_id="pb-2", number="#W2000002", status=OrderStatus.PENDING)
    client, _ = desk.visitor("pb-2")
    conversation_id = desk.conversation(client)
    _say(desk, client, conversation_id, "I want to cancel #W2000002", count=1)
    # The customer answers with something else; the model then tries to cancel as if they had said yes.
    forced = json.dumps({"order_number": "#W2000002", "confirmed": True})
    scripted_server.enqueue(
        ScriptedReply.with_tool_calls(ScriptedToolCall("cancel_order", forced)), "I have cancelled it."
    )
    _say(desk, client, conversation_id, "Hmm, how heavy is the cast iron pan?", count=2)
    assert _order_status(desk, "#W2000002") == OrderStatus.PENDING
    refused = [
        m for m in desk.transcript(conversation_id) if m.tool_call_id and "confirmation_required" in (m.content or "")
    ]
    assert refused, "the registry refused the unconfirmed cancel"
    with desk.db() as session:
        assert session.exec(select(PlaybookRun)).one().status == RunStatus.ABANDONED


def test_a_plain_no_declines_and_changes_nothing(desk: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    add_customer_with_order(desk, external_id="pb-3", number="#W2000003", status=OrderStatus.PENDING)
    client, _ = desk.visitor("pb-3")
    conversation_id = desk.conversation(client)
    _say(desk, client, conversation_id, "cancel order #W2000003 please", count=1)
    declined = _say(desk, client, conversation_id, "No, I'll keep it after all.", count=2)
    assert declined.startswith("Alright, I have left everything as it was")
    assert _order_status(desk, "#W2000003") == OrderStatus.PENDING and scripted_server.chat_requests == []


def test_a_follow_up_without_a_number_keeps_the_order_in_focus(
    desk: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    add_customer_with_order(desk, external_id="pb-4", number="#W2000004")
    add_customer_with_order(desk, external_id="pb-4b", number="#W2000005")
    with desk.db() as session:
        order = session.exec(select(Order).where(Order.number == "#W2000004")).one()
        session.add(Shipment(order_id=order.id or 0, carrier="UPS", tracking_number="1ZFOCUS00000000001",
                             status=ShipmentStatus.IN_TRANSIT, eta=date(2026, 12, 9)))  # fmt: skip
        session.commit()
    client, _ = desk.visitor("pb-4")
    conversation_id = desk.conversation(client)
    status = _say(desk, client, conversation_id, "Where is my order #W2000004?", count=1)
    assert "#W2000004" in status and "**shipped**" in status and "1ZFOCUS00000000001" in status
    arrival = _say(desk, client, conversation_id, "and when will it arrive?", count=2)
    assert "#W2000004" in arrival and "2026-12-09" in arrival
    assert scripted_server.chat_requests == []


def test_replies_come_in_the_customers_language(desk: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    add_customer_with_order(desk, external_id="pb-5", number="#W2000006")
    client, _ = desk.visitor("pb-5")
    german = desk.conversation(client)
    assert "Ihre Bestellung #W2000006 ist **versandt**" in _say(
        desk, client, german, "Wo ist meine Bestellung #W2000006?", 1
    )
    chinese = desk.conversation(client)
    assert "您的订单 #W2000006 状态：**已发货**" in _say(desk, client, chinese, "我的订单 #W2000006 在哪里？", 1)
    assert scripted_server.chat_requests == []


def test_a_contact_preference_is_queued_for_long_term_memory(desk: LiveApp) -> None:
    client, _ = desk.visitor()
    conversation_id = desk.conversation(client)
    reply = _say(desk, client, conversation_id, "Please only ever contact me by email, never by phone.", count=1)
    assert reply.startswith("Noted:")
    with desk.db() as session:
        conclusion = session.exec(select(Conclusion)).one()
    assert conclusion.kind == "preference" and conclusion.source == ConclusionSource.PLAYBOOK
    assert "only ever contact me by email" in conclusion.text


def test_the_embedded_model_answers_what_nothing_matches_with_what_it_can_help_with(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    settings = app_settings(tmp_path, scripted_server, chat_model=EMBEDDED_CHAT_MODEL)
    for live in run_live_app(settings):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        reply = _say(live, client, conversation_id, "Write me a poem about kettles", count=1)
        assert reply == CAPABILITIES_REPLIES["en"]
        reply = _say(live, client, conversation_id, "Schreib mir ein Gedicht über Wasserkocher", count=2)
        assert reply == CAPABILITIES_REPLIES["de"]
        assert scripted_server.chat_requests == []


def test_in_guide_mode_a_capable_model_follows_the_steps_with_only_the_playbooks_tools(
    desk: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    library = desk.services.playbooks
    assert library is not None
    cancel = library.get("cancel_order")
    assert cancel is not None
    library.replace(with_mode(cancel.source, "guide"))
    library.warm()  # the matcher retrains on its examples here, not within the turn's wait
    add_customer_with_order(desk, external_id="pb-6", number="#W2000007", status=OrderStatus.PENDING)
    client, _ = desk.visitor("pb-6")
    conversation_id = desk.conversation(client)
    # The model reaches for a tool the procedure does not name, then cancels without the customer's yes.
    forced = json.dumps({"order_number": "#W2000007", "confirmed": True})
    scripted_server.enqueue(
        ScriptedReply.with_tool_calls(ScriptedToolCall("request_refund", json.dumps({"order_number": "#W2000007"}))),
        ScriptedReply.with_tool_calls(ScriptedToolCall("cancel_order", forced)),
        "I can cancel #W2000007 for you. Shall I?",
    )
    reply = _say(desk, client, conversation_id, "Please cancel my order #W2000007", count=1)
    assert reply == "I can cancel #W2000007 for you. Shall I?", "the model wrote the reply, not a template"
    request = scripted_server.chat_requests[0]
    offered = {tool["function"]["name"] for tool in request.tools}
    assert offered == {*cancel.tools(), "transfer_to_human"} and "request_refund" not in offered
    procedure = request.messages[-1]["content"]
    assert "<procedure>" in procedure and "Cancel" in procedure and "after the customer said yes" in procedure
    results = [m.content or "" for m in desk.transcript(conversation_id) if m.tool_call_id]
    assert "not part of this procedure" in results[-2] and "confirmation_required" in results[-1]
    assert _order_status(desk, "#W2000007") == OrderStatus.PENDING
    with desk.db() as session:
        assert session.exec(select(PlaybookRun)).one().status == RunStatus.GUIDED
