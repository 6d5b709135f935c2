"""What an agent reads beside a conversation: the customer's orders with their items, and a handoff card that says
why the bot handed over, also when the bot did not choose to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import select

from app.console.customer import items_line
from app.models import Order, OrderItem, Product, StaffRole
from tests.support.console_support import console_app, signed_in
from tests.support.live_app import LiveApp, add_customer_with_order
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def _with_item(live: LiveApp, number: str, product: str, quantity: int) -> None:
    with live.db() as session:
        order = session.exec(select(Order).where(Order.number == number)).one()
        kettle = Product(sku=f"SKU-{number}", name=product, price_cents=2100)
        session.add(kettle)
        session.flush()
        assert order.id is not None and kettle.id is not None
        session.add(OrderItem(order_id=order.id, product_id=kettle.id, quantity=quantity, unit_price_cents=2100))
        session.commit()


def test_the_customer_panel_lists_each_order_with_its_items(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    add_customer_with_order(console, external_id="shop-77", number="#W7000001")
    _with_item(console, "#W7000001", "Glass kettle", 2)
    scripted_server.enqueue("Happy to help.")
    widget, customer = console.visitor("shop-77")
    conversation = console.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "hello there"})
    console.wait_for_reply(conversation)
    page = signed_in(console, StaffRole.AGENT).get(f"/console/customers/{customer}/panel").text
    assert "#W7000001" in page
    assert "2 × Glass kettle" in page
    assert "built-in method" not in page


def test_items_from_a_shops_own_tool_read_as_one_line() -> None:
    assert items_line("1 × Mug") == "1 × Mug"
    assert items_line([{"name": "Mug", "quantity": 2}, {"product": "Lid"}, "Spoon"]) == "2 × Mug, Lid, Spoon"
    assert items_line(None) == ""
    assert items_line([{"quantity": 3}, {"name": {"nested": 1}}, 4]) == "4"


def test_a_turn_whose_model_fails_leaves_a_handoff_card_that_says_why(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text=None))  # neither text nor tool calls
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "where is my order?"})
    console.wait_for_reply(conversation)
    page = signed_in(console, StaffRole.AGENT).get(f"/console/conversations/{conversation}").text
    assert "The bot could not answer: LLM returned neither text nor tool calls." in page
    assert "(model failure)" in page


def test_the_inbox_tells_a_conversation_the_bot_is_answering_from_a_customer_waiting_for_a_person(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text="One moment.", delay_s=3.0))
    widget, _ = console.visitor()
    answering = console.conversation(widget)
    widget.post(f"/api/widget/conversations/{answering}/messages", json={"content": "where is my order?"})
    agent = signed_in(console, StaffRole.AGENT)
    row = console.wait_for(lambda: _row_of(agent.get("/console").text, answering), what="the conversation in the inbox")
    assert "bot answering" in row and 'class="waiting waiting--bot"' in row
    console.wait_for_reply(answering)
    other, _ = console.visitor()
    handed = console.conversation(other)
    other.post(f"/api/widget/conversations/{handed}/messages", json={"content": "talk to a human please"})
    console.wait_for_reply(handed)
    row = _row_of(agent.get("/console").text, handed)
    assert row is not None and 'class="waiting"' in row and "bot answering" not in row


def _row_of(page: str, conversation: str) -> str | None:
    start = page.find(f'data-conversation="{conversation}"')
    return page[start : page.find("</li>", start)] if start >= 0 else None


def test_the_customer_panel_links_the_customers_earlier_conversations_with_their_first_line_and_outcome(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    widget, customer = console.visitor("shop-88")
    conversations = []
    for text in ("My kettle arrived with a dent", "Do you ship to Norway?", "Where is order #W123?"):
        scripted_server.enqueue("Let me check.")
        conversation = console.conversation(widget)
        widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": text})
        console.wait_for_reply(conversation)
        conversations.append(conversation)
    agent = signed_in(console, StaffRole.AGENT)
    assert agent.post(f"/console/conversations/{conversations[0]}/close").status_code == 303
    panel = agent.get(f"/console/customers/{customer}/panel", params={"current": conversations[2]}).text
    for earlier in conversations[:2]:
        assert f'href="/console/conversations/{earlier}"' in panel
    assert f'href="/console/conversations/{conversations[2]}"' not in panel and "this conversation" in panel
    assert panel.index("Where is order #W123?") < panel.index("Do you ship to Norway?")  # newest first
    assert panel.index("Do you ship to Norway?") < panel.index("My kettle arrived with a dent")
    closed = panel[panel.index("My kettle arrived") - 400 : panel.index("My kettle arrived")]
    assert "resolved by the bot" in closed
    stranger, _ = console.visitor("shop-99")
    scripted_server.enqueue("Hello.")
    theirs = console.conversation(stranger)
    stranger.post(f"/api/widget/conversations/{theirs}/messages", json={"content": "a stranger's question"})
    console.wait_for_reply(theirs)
    assert "a stranger" not in agent.get(f"/console/customers/{customer}/panel").text
