"""Before the model: a request for a person hands off without an LLM call, and the customer's order (or the
knowledge chunk that answers with confidence) is looked up through the tool layer and sent as a tool call and its
result."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from app.knowledge.importer import import_documents
from app.models import (
    AuditEvent,
    Conversation,
    ConversationStatus,
    MessageAuthor,
    MessageRole,
    Order,
    OrderStatus,
    Shipment,
    ShipmentStatus,
)
from app.settings import EMBEDDED_CHAT_MODEL
from app.tools.handoff import HANDOFF_ACTION
from app.turns.preparation import HANDOFF_REPLIES, unanswered_customer_text
from compression.messages import ChatMessage
from tests.support.knowledge import article
from tests.support.live_app import LiveApp, add_customer_with_order, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings
from tests.support.shop_api import ShopAPI, running_shop_api

RETURNS_ARTICLE = article(
    "returns.md",
    "Returns",
    ("Refund timing", "Refunds reach the original payment method within five business days of arrival."),
)


@pytest.fixture
def shop_api() -> Iterator[ShopAPI]:
    with running_shop_api() as server:
        yield server


def _status(live: LiveApp, conversation_id: str) -> ConversationStatus:
    with live.db() as session:
        conversation = session.get(Conversation, live.conversation_key(conversation_id))
        assert conversation is not None
        return conversation.status


def _handoff_notes(live: LiveApp) -> list[str]:
    with live.db() as session:
        events = session.exec(select(AuditEvent).where(AuditEvent.action == HANDOFF_ACTION)).all()
        return [str(event.detail["summary"]) for event in events]


def test_asking_for_a_human_hands_off_through_the_tool_without_an_llm_call(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    url = f"/api/widget/conversations/{conversation_id}/messages"
    assert client.post(url, json={"content": "I'd like to talk to a human please"}).status_code == 202
    live_app.wait_for_reply(conversation_id)

    assert scripted_server.chat_requests == []
    assert _status(live_app, conversation_id) == ConversationStatus.NEEDS_HUMAN
    transcript = live_app.transcript(conversation_id)
    assert [(m.role, m.author) for m in transcript] == [
        (MessageRole.USER, MessageAuthor.CUSTOMER),
        (MessageRole.ASSISTANT, MessageAuthor.BOT),
        (MessageRole.TOOL, MessageAuthor.SYSTEM),
        (MessageRole.ASSISTANT, MessageAuthor.BOT),
    ]
    call = (transcript[1].tool_calls or [{}])[0]
    assert call["function"]["name"] == "transfer_to_human" and transcript[2].tool_call_id == call["id"]
    assert json.loads(transcript[2].content or "{}")["status"] == "needs_human"
    assert _handoff_notes(live_app) == [
        "The customer asked to talk to a person: \u201cI'd like to talk to a human please\u201d"
    ]
    visible = [m["content"] for m in client.get(url).json()]
    assert visible == ["I'd like to talk to a human please", HANDOFF_REPLIES["en"]]


def test_a_german_request_for_a_person_is_answered_in_german(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    url = f"/api/widget/conversations/{conversation_id}/messages"
    client.post(url, json={"content": "Ich möchte mit einem Mitarbeiter sprechen"})
    replies = live_app.wait_for_reply(conversation_id)
    assert replies[-1].content == HANDOFF_REPLIES["de"] and scripted_server.chat_requests == []


def test_my_agent_said_is_not_a_request_and_goes_to_the_model(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue("Let me check that for you.")
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    client.post(
        f"/api/widget/conversations/{conversation_id}/messages",
        json={"content": "My agent said the parcel was delayed"},
    )
    replies = live_app.wait_for_reply(conversation_id)
    assert replies[-1].content == "Let me check that for you."
    assert len(scripted_server.chat_requests) == 1 and _status(live_app, conversation_id) == ConversationStatus.BOT


def test_talk_to_a_person_button_hands_off_at_once_and_refuses_a_non_boolean_flag(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    url = f"/api/widget/conversations/{conversation_id}/messages"
    assert client.post(url, json={"content": "Talk to a person", "handoff": "yes"}).status_code == 422
    posted = client.post(url, json={"content": "Where is my refund? Talk to a person", "handoff": True})
    assert posted.status_code == 202 and posted.json()["content"] == "Where is my refund? Talk to a person"
    assert _status(live_app, conversation_id) == ConversationStatus.NEEDS_HUMAN
    live_app.wait_for_reply(conversation_id)
    assert scripted_server.chat_requests == []
    assert _handoff_notes(live_app)[0].startswith("The customer pressed \u201cTalk to a person\u201d")
    # A second press changes nothing: the conversation already waits for a person.
    client.post(url, json={"content": "Talk to a person", "handoff": True})
    replies = [m for m in live_app.transcript(conversation_id) if m.content == HANDOFF_REPLIES["en"]]
    assert len(replies) == 1 and len(_handoff_notes(live_app)) == 1


def test_a_named_own_order_is_looked_up_before_the_model_is_called(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    add_customer_with_order(live_app, external_id="shop-42", number="#W1234567")
    scripted_server.enqueue("Your order #W1234567 has shipped.")
    client, _ = live_app.visitor("shop-42")
    conversation_id = live_app.conversation(client)
    client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "Where is W1234567?"})
    live_app.wait_for_reply(conversation_id)

    assert len(scripted_server.chat_requests) == 1, "the answer needed one LLM call, not a tool round trip"
    sent = scripted_server.chat_requests[0].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "system"]
    call = sent[2]["tool_calls"][0]
    assert call["function"]["name"] == "get_order"
    assert json.loads(call["function"]["arguments"]) == {"order_number": "#W1234567"}
    result = json.loads(sent[3]["content"])
    assert sent[3]["tool_call_id"] == call["id"] and result["order_number"] == "#W1234567"
    assert result["status"] == "shipped"
    roles = [m.role for m in live_app.transcript(conversation_id)]
    assert roles == [MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.ASSISTANT]


def test_another_customers_order_number_is_not_looked_up(live_app: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    add_customer_with_order(live_app, external_id="shop-1", number="#W1111111")
    scripted_server.enqueue("I can't find that order.")
    client, _ = live_app.visitor("shop-2")
    conversation_id = live_app.conversation(client)
    client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "Where is #W1111111?"})
    live_app.wait_for_reply(conversation_id)
    assert [m["role"] for m in scripted_server.chat_requests[0].messages] == ["system", "user", "system"]


def test_my_order_is_looked_up_only_when_a_verified_customer_has_exactly_one_recent_order(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    customer_id = add_customer_with_order(live_app, external_id="shop-9", number="#W9999999")
    with live_app.db() as session:
        order = session.exec(select(Order).where(Order.number == "#W9999999")).one()
        order.placed_at = datetime.now(UTC) - timedelta(days=2)
        session.add(order)
        session.commit()
    scripted_server.set_rule(lambda request: "Here you go.")
    client, _ = live_app.visitor("shop-9")
    conversation_id = live_app.conversation(client)
    url = f"/api/widget/conversations/{conversation_id}/messages"
    client.post(url, json={"content": "Where is my order?"})
    live_app.wait_for_reply(conversation_id)
    first = scripted_server.chat_requests[-1].messages
    assert first[2]["tool_calls"][0]["function"]["name"] == "get_order" and "#W9999999" in first[3]["content"]

    with live_app.db() as session:
        second = Order(
            number="#W8888888",
            customer_id=customer_id,
            status=OrderStatus.PENDING,
            total_cents=1999,
            shipping_name="Jane Doe",
            shipping_line1="1 Main St",
            shipping_city="Springfield",
            shipping_postal_code="12345",
            shipping_country="US",
        )
        session.add(second)
        session.commit()
    client.post(url, json={"content": "And where is my order now?"})
    live_app.wait_for_reply(conversation_id, count=2)
    latest = scripted_server.chat_requests[-1].messages
    assert latest[-2] == {"role": "user", "content": "And where is my order now?"}, "two recent orders: no guess"


def test_a_policy_question_the_knowledge_answers_gets_search_knowledge_prefetched(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(lambda request: "Refunds take five business days [1].")
    for live in run_live_app(app_settings(tmp_path, scripted_server, memory_embedder="hashing")):
        with live.db() as session:
            import_documents(session, "help", [RETURNS_ARTICLE])
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        url = f"/api/widget/conversations/{conversation_id}/messages"
        client.post(url, json={"content": "When do refunds reach the original payment method?"})
        live.wait_for_reply(conversation_id)
        sent = scripted_server.chat_requests[-1].messages
        assert "never\n  state a policy that no source gave you" in sent[0]["content"]
        assert sent[2]["tool_calls"][0]["function"]["name"] == "search_knowledge"
        found = json.loads(sent[3]["content"])
        assert found["confident"] and found["results"][0]["ref"] == 1
        assert "five business days" in found["results"][0]["text"]

        client.post(url, json={"content": "Do you sell gift cards?"})  # nothing answers it: left to the model
        live.wait_for_reply(conversation_id, count=2)
        assert scripted_server.chat_requests[-1].messages[-2]["content"] == "Do you sell gift cards?"


def test_for_the_embedded_model_an_order_question_is_answered_from_the_lookup(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    settings = app_settings(tmp_path, scripted_server, chat_model=EMBEDDED_CHAT_MODEL)
    for live in run_live_app(settings):
        add_customer_with_order(live, external_id="shop-5", number="#W5555555")
        with live.db() as session:
            order = session.exec(select(Order).where(Order.number == "#W5555555")).one()
            session.add(Shipment(order_id=order.id or 0, carrier="UPS", tracking_number="1ZTEST0000000001",
                                 status=ShipmentStatus.IN_TRANSIT, eta=date(2026, 12, 3)))  # fmt: skip
            session.commit()
        client, _ = live.visitor("shop-5")
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "Where's #W5555555?"})
        reply = live.wait_for_reply(conversation_id)[-1].content or ""
        assert "**shipped**" in reply and "1ZTEST0000000001" in reply and "expected 2026-12-03" in reply
        assert scripted_server.chat_requests == []


def test_for_the_embedded_model_a_policy_question_is_answered_from_the_chunk_and_cites_it(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    settings = app_settings(tmp_path, scripted_server, chat_model=EMBEDDED_CHAT_MODEL, memory_embedder="hashing")
    for live in run_live_app(settings):
        with live.db() as session:
            import_documents(session, "help", [RETURNS_ARTICLE])
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        question = "When do refunds reach the original payment method?"
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": question})
        reply = live.wait_for_reply(conversation_id)[-1].content or ""
        assert reply == (
            "From our help centre, **Returns › Refund timing**: Refunds reach the original payment method within "
            "five business days of arrival. [1]"
        )
        assert scripted_server.chat_requests == []
        shown = client.get(f"/api/widget/conversations/{conversation_id}/messages").json()[-1]
        assert [(source["marker"], source["title"]) for source in shown["sources"]] == [(1, "Returns")]


def test_a_config_declared_order_lookup_is_prefetched_for_the_customers_own_orders_only(
    tmp_path: Path, scripted_server: ScriptedLLMServer, shop_api: ShopAPI
) -> None:
    shop_api.orders[("shop-77", "A-123456")] = {"number": "A-123456", "status": "shipped", "carrier": "UPS"}
    shop_api.orders[("shop-78", "A-654321")] = {"number": "A-654321", "status": "pending"}
    lookup = {
        "name": "shop_order",
        "description": "One of the customer's orders in the shop, by its number (A-123456).",
        "url": f"{shop_api.base_url}/accounts/{{customer_external_id}}/orders/{{number}}",
        "parameters": {"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]},
        "reference_pattern": r"\bA-\d{6}\b",
    }
    config = tmp_path / "tools.json"
    config.write_text(json.dumps({"tools": [lookup]}), encoding="utf-8")
    scripted_server.set_rule(lambda request: "Here is what I found.")
    for live in run_live_app(app_settings(tmp_path, scripted_server, demo_shop=False, tools_config_path=config)):
        client, _ = live.visitor("shop-77")
        conversation_id = live.conversation(client)
        url = f"/api/widget/conversations/{conversation_id}/messages"
        client.post(url, json={"content": "Where is A-123456?"})
        live.wait_for_reply(conversation_id)
        assert len(scripted_server.chat_requests) == 1, "the answer needed one LLM call, not a tool round trip"
        sent = scripted_server.chat_requests[0].messages
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "system"]
        call = sent[2]["tool_calls"][0]
        assert call["function"]["name"] == "shop_order"
        assert json.loads(call["function"]["arguments"]) == {"number": "A-123456"}
        assert json.loads(sent[3]["content"])["data"]["carrier"] == "UPS"

        client.post(url, json={"content": "And A-654321?"})  # another customer's: the shop says 404
        live.wait_for_reply(conversation_id, count=2)
        assert shop_api.requests[-1]["raw_path"] == "/accounts/shop-77/orders/A-654321"
        latest = scripted_server.chat_requests[-1].messages
        assert latest[-2] == {"role": "user", "content": "And A-654321?"}
        assert "pending" not in json.dumps(latest)


def test_a_burst_is_read_as_one_request_so_an_order_named_in_its_first_message_counts() -> None:
    context: list[ChatMessage] = [
        {"role": "system", "content": "instructions"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "my parcel #W1234567 still hasn't arrived"},
        {"role": "user", "content": "where is it"},
    ]
    assert unanswered_customer_text(context) == "my parcel #W1234567 still hasn't arrived\nwhere is it"
    assert unanswered_customer_text([*context, {"role": "assistant", "content": "On its way."}]) is None
