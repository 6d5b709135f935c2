"""Read-only demo-shop tools (list orders, order details, shipment tracking) and the helpers all shop tools share.

Every lookup is scoped to ``context.customer_id``: an order number that belongs to another customer gets exactly
the same "not found" answer as one that doesn't exist, so a customer can't probe other customers' orders.
Payloads are written for the model: money as formatted strings ("$42.10"), dates in ISO 8601, and the actions the
order still allows, so the model doesn't offer what the shop will refuse.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import Field, model_validator
from sqlmodel import Session, col, func, select

from app.models import (
    Order,
    OrderItem,
    OrderStatus,
    Product,
    Refund,
    RefundStatus,
    Shipment,
    ShipmentStatus,
    ShippingAddress,
)
from app.tools.references import ReferencePattern
from app.tools.registry import ErrorCode, ToolContext, ToolError
from app.tools.typed import ToolArguments, TypedTool

MAX_LIST_LIMIT = 20
DEFAULT_LIST_LIMIT = 10
ORDER_NUMBER_DESCRIPTION = "The order number, like #W2378156."
CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}
# Refunds that count against what can still be refunded on an order.
COUNTED_REFUND_STATUSES = (RefundStatus.REQUESTED, RefundStatus.APPROVED)

_ORDER_NUMBER = re.compile(r"#?\s*W?\s*(\d{7})", re.IGNORECASE)
# How customers write these numbers in a message: "#W2378156", "W2378156", "#2378156", "order 2378156". Stricter
# than ``_ORDER_NUMBER``: any seven digits in a sentence (a phone number, a postcode) are not an order.
ORDER_REFERENCE = ReferencePattern(
    re.compile(
        r"(?<![\w#])#?\s?W\s?(\d{7})\b|(?<![\w#])#(\d{7})\b|\border\s*(?:number|no\.?|nr\.?|#)?\s*:?\s*(\d{7})\b",
        re.IGNORECASE,
    ),
    argument="order_number",
    template="#W{}",
)
# "My order" means the one order a customer placed within this many days, and only when there is one.
RECENT_ORDER_DAYS = 30

SHIPMENT_STATUS_MEANINGS = {
    ShipmentStatus.LABEL_CREATED: "The label is printed; the carrier has not picked the parcel up yet.",
    ShipmentStatus.IN_TRANSIT: "The parcel is moving through the carrier's network.",
    ShipmentStatus.OUT_FOR_DELIVERY: "The parcel is on the delivery vehicle and should arrive today.",
    ShipmentStatus.DELIVERED: "The carrier confirmed delivery.",
    ShipmentStatus.EXCEPTION: "Something held the parcel up; see the latest event. Most exceptions clear in 1-3 "
    "business days.",
}
NOT_SHIPPED_NOTES = {
    OrderStatus.PENDING: "This order has not shipped yet; it is waiting to be processed.",
    OrderStatus.PROCESSING: "This order is being packed and has no tracking number yet.",
    OrderStatus.CANCELLED: "This order was cancelled and will not ship.",
}


# --- shared helpers ----------------------------------------------------------------------------------------------


def format_money(cents: int, currency: str) -> str:
    sign = "-" if cents < 0 else ""
    whole, fraction = divmod(abs(cents), 100)
    amount = f"{whole:,}.{fraction:02d}"
    symbol = CURRENCY_SYMBOLS.get(currency)
    return f"{sign}{symbol}{amount}" if symbol else f"{sign}{amount} {currency}"


def normalize_order_number(raw: str) -> str | None:
    """``#W2378156`` from ``#W2378156``, ``w2378156`` or ``2378156``; None when it can't be an order number."""
    match = _ORDER_NUMBER.fullmatch(raw.strip())
    return f"#W{match.group(1)}" if match else None


def order_not_found(raw: str) -> ToolError:
    shown = normalize_order_number(raw) or raw.strip()
    return ToolError(
        ErrorCode.NOT_FOUND,
        f"No order {shown} was found for this customer. Order numbers look like #W1234567; check the number "
        "with the customer, or use list_orders to see their orders.",
    )


def find_customer_order(session: Session, customer_id: int, raw_number: str) -> Order:
    number = normalize_order_number(raw_number)
    order = None
    if number is not None:
        order = session.exec(
            select(Order).where(Order.number == number, Order.customer_id == customer_id)
        ).one_or_none()
    if order is None:
        raise order_not_found(raw_number)
    return order


def counted_refunds_cents(session: Session, order_id: int) -> int:
    total = session.exec(
        select(func.coalesce(func.sum(Refund.amount_cents), 0)).where(
            Refund.order_id == order_id, col(Refund.status).in_(COUNTED_REFUND_STATUSES)
        )
    ).one()
    return int(total)


def refundable_cents(session: Session, order: Order) -> int:
    """What can still be refunded: the amount paid minus refunds already requested or approved."""
    assert order.id is not None
    return max(0, order.total_cents - counted_refunds_cents(session, order.id))


def allowed_actions(order: Order) -> list[str]:
    if order.status == OrderStatus.PENDING:
        return ["cancel_order", "change_shipping_address"]
    if order.status == OrderStatus.DELIVERED:
        return ["request_refund"]
    return []


def address_of(address: ShippingAddress) -> dict[str, str | None]:
    """An order's (or a proposed) shipping address, with short keys for the model."""
    return {
        "name": address.shipping_name,
        "line1": address.shipping_line1,
        "line2": address.shipping_line2,
        "city": address.shipping_city,
        "region": address.shipping_region,
        "postal_code": address.shipping_postal_code,
        "country": address.shipping_country,
    }


def one_line_address(address: ShippingAddress) -> str:
    parts = (
        address.shipping_name,
        address.shipping_line1,
        address.shipping_line2,
        address.shipping_city,
        address.shipping_region,
    )
    place = ", ".join(part for part in parts if part)
    return f"{place} {address.shipping_postal_code}, {address.shipping_country}"


def item_rows(session: Session, order_ids: Sequence[int]) -> list[tuple[OrderItem, Product]]:
    if not order_ids:
        return []
    statement = (
        select(OrderItem, Product)
        .join(Product, col(Product.id) == OrderItem.product_id)
        .where(col(OrderItem.order_id).in_(order_ids))
        .order_by(col(OrderItem.id))
    )
    return [(item, product) for item, product in session.exec(statement)]


def items_summary(session: Session, order: Order) -> str:
    assert order.id is not None
    return ", ".join(f"{item.quantity} × {product.name}" for item, product in item_rows(session, [order.id]))


def shipment_payload(shipment: Shipment, *, with_events: bool) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "carrier": shipment.carrier,
        "tracking_number": shipment.tracking_number,
        "status": str(shipment.status),
        "eta": shipment.eta.isoformat() if shipment.eta else None,
    }
    if with_events:
        payload["status_meaning"] = SHIPMENT_STATUS_MEANINGS[shipment.status]
        payload["latest_event"] = shipment.events[-1] if shipment.events else None
        payload["events"] = shipment.events
    return payload


def order_shipments(session: Session, order: Order) -> list[Shipment]:
    return list(session.exec(select(Shipment).where(Shipment.order_id == order.id).order_by(col(Shipment.id))))


# --- tools -------------------------------------------------------------------------------------------------------


class ListOrdersArguments(ToolArguments):
    status: Literal["pending", "processing", "shipped", "delivered", "cancelled"] | None = Field(
        default=None, description="Only list orders in this status."
    )
    limit: int = Field(
        default=DEFAULT_LIST_LIMIT, ge=1, le=MAX_LIST_LIMIT, description="How many orders to list, newest first."
    )


class ListOrdersTool(TypedTool[ListOrdersArguments]):
    name = "list_orders"
    description = (
        "List the current customer's orders, newest first, with status, date, total and items. Use it when the "
        "customer doesn't know their order number."
    )
    arguments_model = ListOrdersArguments

    def run(self, arguments: ListOrdersArguments, context: ToolContext) -> dict[str, Any]:
        session = context.session
        conditions = [Order.customer_id == context.customer_id]
        if arguments.status is not None:
            conditions.append(Order.status == OrderStatus(arguments.status))
        total = session.exec(select(func.count()).select_from(Order).where(*conditions)).one()
        orders = list(
            session.exec(
                select(Order)
                .where(*conditions)
                .order_by(col(Order.placed_at).desc(), col(Order.id).desc())
                .limit(arguments.limit)
            )
        )
        items: dict[int, list[str]] = {}
        for item, product in item_rows(session, [order.id for order in orders if order.id is not None]):
            items.setdefault(item.order_id, []).append(f"{item.quantity} × {product.name}")
        return {
            "orders": [
                {
                    "order_number": order.number,
                    "status": str(order.status),
                    "placed_on": order.placed_at.date().isoformat(),
                    "total": format_money(order.total_cents, order.currency),
                    "items": ", ".join(items.get(order.id or 0, [])),
                }
                for order in orders
            ],
            "shown": len(orders),
            "total_orders": int(total),
        }


class OrderNumberArguments(ToolArguments):
    order_number: str = Field(min_length=1, max_length=32, description=ORDER_NUMBER_DESCRIPTION)


class GetOrderTool(TypedTool[OrderNumberArguments]):
    name = "get_order"
    description = (
        "Details of one of the current customer's orders: status, items, prices, shipping address, shipments, "
        "refunds, how much can still be refunded, and which actions the order still allows."
    )
    arguments_model = OrderNumberArguments
    reference_patterns = (ORDER_REFERENCE,)

    def single_recent_order(self, context: ToolContext) -> str | None:
        since = datetime.now(UTC) - timedelta(days=RECENT_ORDER_DAYS)
        conditions = (Order.customer_id == context.customer_id, col(Order.placed_at) >= since)
        # Two rows at most answer "exactly one?" in one query.
        numbers = list(context.session.exec(select(Order.number).where(*conditions).limit(2)))
        return numbers[0] if len(numbers) == 1 else None

    def run(self, arguments: OrderNumberArguments, context: ToolContext) -> dict[str, Any]:
        session = context.session
        order = find_customer_order(session, context.customer_id, arguments.order_number)
        assert order.id is not None
        refunds = session.exec(select(Refund).where(Refund.order_id == order.id).order_by(col(Refund.id)))
        payload: dict[str, Any] = {
            "order_number": order.number,
            "status": str(order.status),
            "placed_at": order.placed_at.isoformat(),
            "total_paid": format_money(order.total_cents, order.currency),
            "items": [
                {
                    "sku": product.sku,
                    "name": product.name,
                    "quantity": item.quantity,
                    "unit_price": format_money(item.unit_price_cents, order.currency),
                    "line_total": format_money(item.quantity * item.unit_price_cents, order.currency),
                }
                for item, product in item_rows(session, [order.id])
            ],
            "shipping_address": address_of(order),
            "shipments": [shipment_payload(s, with_events=False) for s in order_shipments(session, order)],
            "refunds": [
                {
                    "amount": format_money(refund.amount_cents, order.currency),
                    "status": str(refund.status),
                    "reason": refund.reason,
                    "requested_on": refund.created_at.date().isoformat(),
                }
                for refund in refunds
            ],
            "allowed_actions": allowed_actions(order),
        }
        if order.status == OrderStatus.DELIVERED:
            payload["refundable_amount"] = format_money(refundable_cents(session, order), order.currency)
        return payload


class TrackShipmentArguments(ToolArguments):
    order_number: str | None = Field(default=None, max_length=32, description=ORDER_NUMBER_DESCRIPTION)
    tracking_number: str | None = Field(
        default=None, max_length=64, description="A carrier tracking number (UPS: 1Z…, FedEx: 12 digits)."
    )

    @model_validator(mode="after")
    def _one_of_them(self) -> TrackShipmentArguments:
        if not (self.order_number or self.tracking_number):
            raise ValueError("give the order_number or the tracking_number")
        return self


class TrackShipmentTool(TypedTool[TrackShipmentArguments]):
    name = "track_shipment"
    description = (
        "Track the shipments of one of the current customer's orders, by order number or tracking number: "
        "carrier, status, estimated delivery date and the carrier's scan events."
    )
    arguments_model = TrackShipmentArguments

    def run(self, arguments: TrackShipmentArguments, context: ToolContext) -> dict[str, Any]:
        session = context.session
        if arguments.order_number:
            order = find_customer_order(session, context.customer_id, arguments.order_number)
            shipments = order_shipments(session, order)
        else:
            tracking = (arguments.tracking_number or "").replace(" ", "").upper()
            row = session.exec(
                select(Shipment, Order)
                .join(Order, col(Order.id) == Shipment.order_id)
                .where(Shipment.tracking_number == tracking, Order.customer_id == context.customer_id)
            ).one_or_none()
            if row is None:
                raise ToolError(
                    ErrorCode.NOT_FOUND,
                    f"No shipment with tracking number {tracking} was found for this customer. Check the number, "
                    "or track by order number instead.",
                )
            shipment, order = row
            shipments = [shipment]
        payload: dict[str, Any] = {
            "order_number": order.number,
            "order_status": str(order.status),
            "shipments": [shipment_payload(shipment, with_events=True) for shipment in shipments],
        }
        if not shipments:
            payload["note"] = NOT_SHIPPED_NOTES.get(order.status, "This order has no shipment on record.")
        return payload
