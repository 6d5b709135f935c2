"""The tool registry and the built-in tools, on a real SQLite database (no mocks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from app.demo_shop import shop_tools
from app.models import AuditEvent, Conversation, ConversationStatus, Order, OrderStatus, Refund
from app.tools import ErrorCode, Tool, ToolContext, ToolRegistry, build_tool_registry, support_tools
from app.tools.confirmation import is_affirmative
from app.tools.typed import ToolArguments, TypedTool
from tests.support.live_app import run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings
from tests.support.shop_fixtures import (
    ALICE_CANCELLED,
    ALICE_DELIVERED,
    ALICE_PENDING,
    ALICE_PROCESSING,
    ALICE_SECOND_PENDING,
    ALICE_SHIPPED,
    ALICE_UPS_TRACKING,
    BOB_DELIVERED,
    BOB_FEDEX_TRACKING,
    BOB_PENDING,
    MISSING_ORDER,
    TinyShop,
    build_tiny_shop,
    chat,
    tool_exchange,
)

WRITE_TOOLS = {"cancel_order", "request_refund", "change_shipping_address"}
NEW_ADDRESS = {"line1": "77 New Rd", "line2": "Unit 5", "city": "Austin", "region": "TX", "postal_code": "78701"}


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[TinyShop]:
    tiny = build_tiny_shop(tmp_path)
    yield tiny
    tiny.engine.dispose()


@pytest.fixture
def session(shop: TinyShop) -> Iterator[Session]:
    with Session(shop.engine) as db_session:
        yield db_session


@pytest.fixture
def registry() -> ToolRegistry:
    return build_tool_registry(tools=shop_tools())


def alice(session: Session, shop: TinyShop, *lines: str) -> ToolContext:
    return ToolContext(
        session=session, customer_id=shop.alice_id, conversation_id=shop.alice_conversation_id, messages=chat(*lines)
    )


def call(registry: ToolRegistry, context: ToolContext, name: str, **arguments: Any) -> dict[str, Any]:
    result = registry.execute(name, json.dumps(arguments), context)
    payload = json.loads(result.content)
    assert payload == result.payload
    return dict(payload)


def error_code(payload: dict[str, Any]) -> str | None:
    error = payload.get("error")
    return None if error is None else str(error["code"])


def order_status(session: Session, number: str) -> OrderStatus:
    session.expire_all()
    return session.exec(select(Order).where(Order.number == number)).one().status


def audit_actions(session: Session) -> list[str]:
    return [event.action for event in session.exec(select(AuditEvent).order_by(AuditEvent.id))]


# --- registry ----------------------------------------------------------------------------------------------------


def test_registry_exposes_openai_function_specs(registry: ToolRegistry) -> None:
    specs = {spec["function"]["name"]: spec for spec in registry.openai_specs()}
    assert set(specs) == {
        "list_orders", "get_order", "track_shipment", "cancel_order", "request_refund",
        "change_shipping_address", "search_knowledge", "search_conversation", "transfer_to_human",
    }  # fmt: skip
    for name, spec in specs.items():
        assert spec["type"] == "function"
        assert spec["function"]["description"]
        parameters = spec["function"]["parameters"]
        assert parameters["type"] == "object"
        assert all("title" not in schema for schema in parameters["properties"].values())
        assert ("confirmed" in parameters["properties"]) == (name in WRITE_TOOLS)
    assert registry.write_tool_names() == WRITE_TOOLS
    # Optional arguments are plain types for small models, not anyOf-with-null.
    reason = specs["cancel_order"]["function"]["parameters"]["properties"]["reason"]
    assert reason["type"] == "string" and "anyOf" not in reason


def test_unknown_tool_is_a_structured_error(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    payload = call(registry, alice(session, shop), "delete_everything")
    assert error_code(payload) == ErrorCode.UNKNOWN_TOOL
    assert "list_orders" in payload["error"]["message"]


@pytest.mark.parametrize("raw", ["{not json", '{"order_number": "#W1000001"', "nul"])
def test_invalid_json_arguments_are_a_structured_error(
    registry: ToolRegistry, session: Session, shop: TinyShop, raw: str
) -> None:
    result = registry.execute("get_order", raw, alice(session, shop))
    assert not result.ok
    assert result.error_code == ErrorCode.INVALID_JSON
    assert json.loads(result.content)["error"]["code"] == "invalid_json"


@pytest.mark.parametrize(
    "raw",
    [
        "[1, 2]",  # not an object
        "{}",  # order_number missing
        '{"order_number": 1000001}',  # wrong type (no silent coercion)
        '{"order_number": "#W1000001", "force": true}',  # unknown argument
    ],
)
def test_schema_violations_are_invalid_arguments(
    registry: ToolRegistry, session: Session, shop: TinyShop, raw: str
) -> None:
    result = registry.execute("get_order", raw, alice(session, shop))
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert result.payload["error"]["message"]


def test_empty_arguments_mean_an_empty_object(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    result = registry.execute("list_orders", "", alice(session, shop))
    assert result.ok and result.payload["shown"] == 6


def test_unexpected_exception_becomes_internal_error(session: Session, shop: TinyShop) -> None:
    class ExplodingTool(TypedTool[ToolArguments]):
        name = "explode"
        description = "Always fails."
        arguments_model = ToolArguments

        def run(self, arguments: ToolArguments, context: ToolContext) -> dict[str, Any]:
            raise RuntimeError("boom")

    tool: Tool[Any] = ExplodingTool()
    result = ToolRegistry([tool]).execute("explode", "{}", alice(session, shop))
    assert result.error_code == ErrorCode.INTERNAL_ERROR
    assert "boom" not in result.content


# --- read tools --------------------------------------------------------------------------------------------------


def test_list_orders_shows_only_the_customers_orders_newest_first(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    payload = call(registry, alice(session, shop), "list_orders")
    numbers = [order["order_number"] for order in payload["orders"]]
    assert numbers == [
        ALICE_SECOND_PENDING, ALICE_PENDING, ALICE_PROCESSING, ALICE_SHIPPED, ALICE_DELIVERED, ALICE_CANCELLED,
    ]  # fmt: skip
    assert BOB_PENDING not in numbers and payload["total_orders"] == 6
    delivered = payload["orders"][4]
    assert delivered["total"] == "$100.00" and delivered["items"] == "2 × Test Mug, 1 × Test Lamp"


def test_list_orders_filters_by_status_and_limit(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    payload = call(registry, alice(session, shop), "list_orders", status="pending", limit=1)
    assert [order["order_number"] for order in payload["orders"]] == [ALICE_SECOND_PENDING]
    assert payload["total_orders"] == 2


def test_get_order_details(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    payload = call(registry, alice(session, shop), "get_order", order_number=ALICE_DELIVERED)
    assert payload["status"] == "delivered"
    assert payload["total_paid"] == "$100.00"
    assert [item["line_total"] for item in payload["items"]] == ["$50.00", "$50.00"]
    assert payload["refundable_amount"] == "$75.00"  # the rejected refund doesn't count
    assert payload["allowed_actions"] == ["request_refund"]
    assert {refund["status"] for refund in payload["refunds"]} == {"approved", "rejected"}


@pytest.mark.parametrize("spelling", ["#W1000001", "w1000001", "W 1000001", "1000001", " #w1000001 "])
def test_order_numbers_are_normalised(registry: ToolRegistry, session: Session, shop: TinyShop, spelling: str) -> None:
    payload = call(registry, alice(session, shop), "get_order", order_number=spelling)
    assert payload["order_number"] == ALICE_PENDING
    assert payload["allowed_actions"] == ["cancel_order", "change_shipping_address"]


def test_another_customers_order_is_not_found_exactly_like_a_missing_one(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    context = alice(session, shop)
    foreign = call(registry, context, "get_order", order_number=BOB_PENDING)
    missing = call(registry, context, "get_order", order_number=MISSING_ORDER)
    assert error_code(foreign) == error_code(missing) == ErrorCode.NOT_FOUND
    foreign_message = foreign["error"]["message"].replace(BOB_PENDING, "N")
    assert foreign_message == missing["error"]["message"].replace(MISSING_ORDER, "N")
    for tool in ("cancel_order", "request_refund", "track_shipment"):
        arguments: dict[str, Any] = {"order_number": BOB_DELIVERED, "reason": "test", "confirmed": True}
        if tool == "track_shipment":
            arguments = {"order_number": BOB_DELIVERED}
        if tool == "cancel_order":
            arguments.pop("reason")
        assert error_code(call(registry, alice(session, shop, "yes"), tool, **arguments)) == ErrorCode.NOT_FOUND


def test_track_shipment_by_order_number_and_by_tracking_number(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    context = alice(session, shop)
    by_order = call(registry, context, "track_shipment", order_number=ALICE_SHIPPED)
    by_tracking = call(registry, context, "track_shipment", tracking_number=ALICE_UPS_TRACKING.lower())
    assert by_order == by_tracking
    shipment = by_order["shipments"][0]
    assert shipment["carrier"] == "UPS" and shipment["status"] == "in_transit" and shipment["eta"] == "2026-11-12"
    assert shipment["latest_event"]["description"] == "Picked up by carrier"
    assert len(shipment["events"]) == 2 and shipment["status_meaning"]


def test_track_shipment_refusals(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    context = alice(session, shop)
    assert error_code(call(registry, context, "track_shipment", tracking_number=BOB_FEDEX_TRACKING)) == "not_found"
    assert error_code(call(registry, context, "track_shipment")) == "invalid_arguments"
    unshipped = call(registry, context, "track_shipment", order_number=ALICE_PENDING)
    assert unshipped["shipments"] == [] and "not shipped" in unshipped["note"]


@pytest.mark.parametrize(
    "text",
    ["yes", "Yes please!", "y", "ok", "Okay, go ahead.", "please do", "Sure", "yes, that's right", "confirm", "👍",
     "Yep, cancel it", "no problem, go ahead"],
)  # fmt: skip
def test_affirmative_replies(text: str) -> None:
    assert is_affirmative(text)


@pytest.mark.parametrize(
    "text",
    ["no", "No thanks", "not yet", "wait", "yes but ship it to my office instead", "Can you cancel it?",
     "what happens if I cancel?", "I want to cancel order #W1000001", "don't", "hmm", "", "yesterday I ordered"],
)  # fmt: skip
def test_non_affirmative_replies(text: str) -> None:
    assert not is_affirmative(text)


def test_write_action_without_confirmed_flag_asks_for_confirmation(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    payload = call(registry, alice(session, shop, "yes"), "cancel_order", order_number=ALICE_PENDING)
    assert error_code(payload) == ErrorCode.CONFIRMATION_REQUIRED
    message = payload["error"]["message"]
    assert "Nothing has been done" in message and ALICE_PENDING in message and "$50.00" in message
    assert payload["error"]["action"].startswith(f"Order {ALICE_PENDING} (1 × Test Lamp; $50.00) will be cancelled")
    assert order_status(session, ALICE_PENDING) == OrderStatus.PENDING
    assert audit_actions(session) == []


@pytest.mark.parametrize("latest", ["What happens if I cancel?", "no", "hmm, let me think", "yes but not yet"])
def test_confirmed_flag_without_customer_yes_is_refused(
    registry: ToolRegistry, session: Session, shop: TinyShop, latest: str
) -> None:
    payload = call(registry, alice(session, shop, latest), "cancel_order", order_number=ALICE_PENDING, confirmed=True)
    assert error_code(payload) == ErrorCode.CONFIRMATION_REQUIRED
    assert "latest message" in payload["error"]["message"]
    assert order_status(session, ALICE_PENDING) == OrderStatus.PENDING


def test_confirmation_needs_a_customer_message(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    messages = [{"role": "assistant", "content": "yes"}]
    context = ToolContext(session=session, customer_id=shop.alice_id, messages=messages)
    payload = call(registry, context, "cancel_order", order_number=ALICE_PENDING, confirmed=True)
    assert error_code(payload) == ErrorCode.CONFIRMATION_REQUIRED


def test_one_yes_authorizes_one_write_action_per_context(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    context = alice(session, shop, "yes")
    assert error_code(call(registry, context, "cancel_order", order_number=ALICE_PENDING, confirmed=True)) is None
    second = call(registry, context, "cancel_order", order_number=ALICE_SECOND_PENDING, confirmed=True)
    assert error_code(second) == ErrorCode.CONFIRMATION_REQUIRED
    assert order_status(session, ALICE_SECOND_PENDING) == OrderStatus.PENDING


def test_a_yes_used_by_an_earlier_write_in_the_transcript_is_spent(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    success = json.dumps({"order_number": ALICE_PENDING, "status": "cancelled"})
    messages = [*chat("yes"), *tool_exchange("cancel_order", {"order_number": ALICE_PENDING}, success)]
    context = ToolContext(session=session, customer_id=shop.alice_id, messages=messages)
    payload = call(registry, context, "cancel_order", order_number=ALICE_SECOND_PENDING, confirmed=True)
    assert error_code(payload) == ErrorCode.CONFIRMATION_REQUIRED
    # A write refused by policy after the yes leaves it unspent.
    refused = json.dumps({"error": {"code": "order_not_cancellable", "message": "already shipped"}})
    messages = [*chat("yes"), *tool_exchange("cancel_order", {"order_number": ALICE_SHIPPED}, refused)]
    context = ToolContext(session=session, customer_id=shop.alice_id, messages=messages)
    payload = call(registry, context, "cancel_order", order_number=ALICE_SECOND_PENDING, confirmed=True)
    assert error_code(payload) is None


def test_a_yes_given_before_the_proposal_does_not_confirm_it(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    # "Want me to look at your orders?" "yes" -> the model then proposes a refund the customer never saw.
    refund = {"order_number": ALICE_DELIVERED, "reason": "Dented lamp"}
    context = alice(session, shop, "yes")
    proposal = call(registry, context, "request_refund", **refund)
    assert error_code(proposal) == ErrorCode.CONFIRMATION_REQUIRED
    assert error_code(call(registry, context, "request_refund", **refund, confirmed=True)) == "confirmation_required"
    # The same, when the proposal is already in the transcript the turn loop passes in.
    messages = [*chat("yes"), *tool_exchange("request_refund", refund, proposal_json(proposal))]
    fresh = ToolContext(session=session, customer_id=shop.alice_id, messages=messages)
    assert error_code(call(registry, fresh, "request_refund", **refund, confirmed=True)) == "confirmation_required"
    # Once the customer answers the proposal, it goes through.
    answered = ToolContext(session=session, customer_id=shop.alice_id, messages=[*messages, *chat("yes, do it")[1:]])
    done = call(registry, answered, "request_refund", **refund, confirmed=True)
    assert error_code(done) is None and done["amount"] == "$75.00"


def proposal_json(payload: dict[str, Any]) -> str:
    return json.dumps(payload)


def test_confirmation_callable_replaces_the_message_check(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    refuse = ToolContext(session=session, customer_id=shop.alice_id, messages=chat("yes"), confirmation=lambda: False)
    assert error_code(call(registry, refuse, "cancel_order", order_number=ALICE_PENDING, confirmed=True)) == (
        ErrorCode.CONFIRMATION_REQUIRED
    )
    accept = ToolContext(session=session, customer_id=shop.alice_id, confirmation=lambda: True)
    assert error_code(call(registry, accept, "cancel_order", order_number=ALICE_PENDING, confirmed=True)) is None


# --- cancel ------------------------------------------------------------------------------------------------------


def test_cancel_pending_order_after_confirmation(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    context = alice(session, shop, "Yes, go ahead")
    payload = call(
        registry, context, "cancel_order", order_number=ALICE_PENDING, reason="ordered twice", confirmed=True
    )
    assert payload["status"] == "cancelled" and "not charged" in payload["message"]
    assert order_status(session, ALICE_PENDING) == OrderStatus.CANCELLED
    event = session.exec(select(AuditEvent)).one()
    assert (event.actor, event.action, event.target_type) == ("bot", "order.cancel", "order")
    assert event.detail["order_number"] == ALICE_PENDING and event.detail["reason"] == "ordered twice"
    assert event.detail["conversation_id"] == shop.alice_conversation_id


@pytest.mark.parametrize("number", [ALICE_PROCESSING, ALICE_SHIPPED, ALICE_DELIVERED, ALICE_CANCELLED])
def test_cancel_refuses_orders_that_are_not_pending(
    registry: ToolRegistry, session: Session, shop: TinyShop, number: str
) -> None:
    before = order_status(session, number)
    payload = call(registry, alice(session, shop, "yes"), "cancel_order", order_number=number, confirmed=True)
    assert error_code(payload) == ErrorCode.ORDER_NOT_CANCELLABLE
    assert "only pending orders can be cancelled" in payload["error"]["message"]
    assert order_status(session, number) == before
    assert audit_actions(session) == []


def test_cancel_policy_is_checked_before_asking_for_confirmation(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    payload = call(registry, alice(session, shop), "cancel_order", order_number=ALICE_SHIPPED)
    assert error_code(payload) == ErrorCode.ORDER_NOT_CANCELLABLE


# --- refund ------------------------------------------------------------------------------------------------------


def refunds_of(session: Session, number: str) -> list[Refund]:
    order = session.exec(select(Order).where(Order.number == number)).one()
    return list(session.exec(select(Refund).where(Refund.order_id == order.id).order_by(Refund.id)))


def test_partial_refund_on_delivered_order(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    context = alice(session, shop, "yes please")
    payload = call(
        registry, context, "request_refund", order_number=ALICE_DELIVERED, amount=20.5, reason="Lamp dented",
        confirmed=True,
    )  # fmt: skip
    assert error_code(payload) is None
    assert payload["amount"] == "$20.50" and payload["status"] == "requested"
    refund = refunds_of(session, ALICE_DELIVERED)[-1]
    assert (refund.amount_cents, refund.reason, refund.status) == (2050, "Lamp dented", "requested")
    event = session.exec(select(AuditEvent)).one()
    assert event.action == "refund.request" and event.detail["amount_cents"] == 2050
    assert event.detail["refund_id"] == refund.id


def test_refund_without_amount_refunds_what_remains_then_nothing_more(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    first = call(registry, alice(session, shop, "yes"), "request_refund", order_number=ALICE_DELIVERED,
                 reason="Return everything", confirmed=True)  # fmt: skip
    assert first["amount"] == "$75.00"
    again = call(registry, alice(session, shop, "yes"), "request_refund", order_number=ALICE_DELIVERED,
                 reason="Once more", confirmed=True)  # fmt: skip
    assert error_code(again) == ErrorCode.REFUND_EXCEEDS_PAID
    assert "refunded in full" in again["error"]["message"]


def test_refund_more_than_paid_is_refused(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    payload = call(registry, alice(session, shop, "yes"), "request_refund", order_number=ALICE_DELIVERED,
                   amount=80, reason="Too much", confirmed=True)  # fmt: skip
    assert error_code(payload) == ErrorCode.REFUND_EXCEEDS_PAID
    assert payload["error"]["refundable_amount"] == "$75.00"
    assert "$100.00 was paid" in payload["error"]["message"] and "$25.00" in payload["error"]["message"]
    assert len(refunds_of(session, ALICE_DELIVERED)) == 2


@pytest.mark.parametrize("number", [ALICE_PENDING, ALICE_PROCESSING, ALICE_SHIPPED, ALICE_CANCELLED])
def test_refund_refuses_orders_that_are_not_delivered(
    registry: ToolRegistry, session: Session, shop: TinyShop, number: str
) -> None:
    payload = call(registry, alice(session, shop, "yes"), "request_refund", order_number=number, reason="Want money",
                   confirmed=True)  # fmt: skip
    assert error_code(payload) == ErrorCode.REFUND_NOT_ALLOWED
    assert "only be requested for delivered orders" in payload["error"]["message"]
    assert refunds_of(session, number) == []


@pytest.mark.parametrize("amount", [0, -5, 10.005, "10"])
def test_refund_amount_must_be_a_positive_money_amount(
    registry: ToolRegistry, session: Session, shop: TinyShop, amount: object
) -> None:
    payload = call(registry, alice(session, shop, "yes"), "request_refund", order_number=ALICE_DELIVERED,
                   amount=amount, reason="Broken", confirmed=True)  # fmt: skip
    assert error_code(payload) == ErrorCode.INVALID_ARGUMENTS


# --- address change ----------------------------------------------------------------------------------------------


def test_change_address_of_pending_order(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    asked = call(registry, alice(session, shop), "change_shipping_address", order_number=ALICE_PENDING, **NEW_ADDRESS)
    assert error_code(asked) == ErrorCode.CONFIRMATION_REQUIRED
    assert "from Test Person, 1 Test St, Portland, OR 97201, US to Test Person, 77 New Rd, Unit 5, Austin, TX " \
           "78701, US" in asked["error"]["action"]  # fmt: skip
    payload = call(registry, alice(session, shop, "correct"), "change_shipping_address", order_number=ALICE_PENDING,
                   confirmed=True, **NEW_ADDRESS)  # fmt: skip
    assert payload["shipping_address"]["city"] == "Austin"
    session.expire_all()
    order = session.exec(select(Order).where(Order.number == ALICE_PENDING)).one()
    assert (order.shipping_line1, order.shipping_line2, order.shipping_city) == ("77 New Rd", "Unit 5", "Austin")
    assert (order.shipping_name, order.shipping_postal_code, order.shipping_country) == ("Test Person", "78701", "US")
    event = session.exec(select(AuditEvent)).one()
    assert event.action == "order.change_address"
    assert event.detail["old_address"]["city"] == "Portland" and event.detail["new_address"]["city"] == "Austin"


@pytest.mark.parametrize("number", [ALICE_PROCESSING, ALICE_SHIPPED, ALICE_DELIVERED])
def test_change_address_refuses_orders_that_are_not_pending(
    registry: ToolRegistry, session: Session, shop: TinyShop, number: str
) -> None:
    payload = call(registry, alice(session, shop, "yes"), "change_shipping_address", order_number=number,
                   confirmed=True, **NEW_ADDRESS)  # fmt: skip
    assert error_code(payload) == ErrorCode.ADDRESS_CHANGE_NOT_ALLOWED
    session.expire_all()
    assert session.exec(select(Order).where(Order.number == number)).one().shipping_city == "Portland"


def test_change_address_validates_the_address(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    bad = {**NEW_ADDRESS, "postal_code": "!!"}
    payload = call(registry, alice(session, shop, "yes"), "change_shipping_address", order_number=ALICE_PENDING,
                   confirmed=True, **bad)  # fmt: skip
    assert error_code(payload) == ErrorCode.INVALID_ARGUMENTS and "postal_code" in payload["error"]["message"]


# --- handoff -----------------------------------------------------------------------------------------------------


def test_transfer_to_human_sets_needs_human(registry: ToolRegistry, session: Session, shop: TinyShop) -> None:
    summary = "Alice wants to return a dented lamp from order #W1000004 but the return window question is unclear."
    result = registry.execute(
        "transfer_to_human", json.dumps({"summary": summary, "reason": "customer asked"}), alice(session, shop)
    )
    assert result.ok and result.handed_off
    assert result.payload["status"] == "needs_human"
    session.expire_all()
    conversation = session.get(Conversation, shop.alice_conversation_id)
    assert conversation is not None and conversation.status == ConversationStatus.NEEDS_HUMAN
    event = session.exec(select(AuditEvent)).one()
    assert event.action == "conversation.handoff" and event.detail["summary"] == summary
    assert event.detail["previous_status"] == "bot"


def test_transfer_to_human_needs_the_customers_own_conversation(
    registry: ToolRegistry, session: Session, shop: TinyShop
) -> None:
    summary = {"summary": "Customer wants a person to help with an order."}
    no_conversation = ToolContext(session=session, customer_id=shop.alice_id)
    assert registry.execute("transfer_to_human", json.dumps(summary), no_conversation).error_code == (
        ErrorCode.NO_CONVERSATION
    )
    foreign = ToolContext(session=session, customer_id=shop.alice_id, conversation_id=shop.bob_conversation_id)
    result = registry.execute("transfer_to_human", json.dumps(summary), foreign)
    assert result.error_code == ErrorCode.NO_CONVERSATION and not result.handed_off
    session.expire_all()
    bob_conversation = session.get(Conversation, shop.bob_conversation_id)
    assert bob_conversation is not None and bob_conversation.status == ConversationStatus.BOT


def test_without_the_demo_shop_the_model_is_offered_only_the_support_tools(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    for live in run_live_app(app_settings(tmp_path, scripted_server, demo_shop=False)):
        client, _ = live.visitor()
        conversation = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "hello"})
        live.wait_for_reply(conversation)
        offered = {tool["function"]["name"] for tool in scripted_server.chat_requests[0].json["tools"]}
        assert offered == {tool.name for tool in support_tools()}
        assert "get_order" not in offered
