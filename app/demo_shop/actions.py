"""Demo-shop write actions: cancel an order, request a refund, change the shipping address.

Each one is a ``requires_confirmation`` tool: ``describe_action`` applies the shop's policy first (so the model never
asks a customer to confirm something the shop would refuse) and describes the effect; the registry then demands
``confirmed: true`` plus an explicit yes from the customer before ``run`` is called. ``run`` re-checks the policy
(the order may have moved on since), writes the change and its audit event, and commits both together.

Policy: only pending orders can be cancelled or re-addressed; refunds only on delivered orders, and never more than
was paid minus refunds already requested or approved.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import Field, field_validator

from app.console.audit import record_audit_event
from app.demo_shop.tools import (
    ORDER_NUMBER_DESCRIPTION,
    address_of,
    find_customer_order,
    format_money,
    items_summary,
    one_line_address,
    refundable_cents,
)
from app.models import Order, OrderStatus, Refund, RefundStatus, ShippingAddress, utc_now
from app.tools.registry import ErrorCode, ToolContext, ToolError
from app.tools.typed import ConfirmableArguments, TypedTool

CENTS_PER_UNIT = 100
MAX_REASON_LENGTH = 500
ADDRESS_FIELD_MAX = 200

CANCEL_HINTS = {
    OrderStatus.PROCESSING: "The warehouse is already packing it. The customer can refuse the delivery, or return "
    "it within 30 days of delivery.",
    OrderStatus.SHIPPED: "It is already with the carrier. The customer can refuse the delivery, or return it within "
    "30 days of delivery.",
    OrderStatus.DELIVERED: "It has been delivered; the customer can return it within 30 days of delivery "
    "(request_refund).",
    OrderStatus.CANCELLED: "It is already cancelled; nothing more to do.",
}
REFUND_HINTS = {
    OrderStatus.PENDING: "A pending order can be cancelled instead (cancel_order).",
    OrderStatus.PROCESSING: "It has not shipped yet; the customer can refuse the delivery or wait until it arrives.",
    OrderStatus.SHIPPED: "It is on its way; a refund can be requested once it has been delivered.",
    OrderStatus.CANCELLED: "A cancelled order is never charged, so there is nothing to refund.",
}


def _order_status_refusal(code: ErrorCode, order: Order, rule: str, hints: dict[OrderStatus, str]) -> ToolError:
    hint = hints.get(order.status, "")
    return ToolError(code, f"Order {order.number} is {order.status}; {rule} {hint}".strip())


# --- cancel ------------------------------------------------------------------------------------------------------


class CancelOrderArguments(ConfirmableArguments):
    order_number: str = Field(min_length=1, max_length=32, description=ORDER_NUMBER_DESCRIPTION)
    reason: str | None = Field(default=None, max_length=MAX_REASON_LENGTH, description="Why, in the customer's words.")


class CancelOrderTool(TypedTool[CancelOrderArguments]):
    name = "cancel_order"
    description = (
        "Cancel one of the current customer's orders. Only pending orders can be cancelled. Requires the "
        "customer's explicit confirmation."
    )
    arguments_model = CancelOrderArguments
    requires_confirmation = True

    def _cancellable_order(self, arguments: CancelOrderArguments, context: ToolContext) -> Order:
        order = find_customer_order(context.session, context.customer_id, arguments.order_number)
        if order.status != OrderStatus.PENDING:
            raise _order_status_refusal(
                ErrorCode.ORDER_NOT_CANCELLABLE, order, "only pending orders can be cancelled.", CANCEL_HINTS
            )
        return order

    def describe_action(self, arguments: CancelOrderArguments, context: ToolContext) -> str:
        order = self._cancellable_order(arguments, context)
        items = items_summary(context.session, order)
        total = format_money(order.total_cents, order.currency)
        return f"Order {order.number} ({items}; {total}) will be cancelled and its payment authorization released."

    def run(self, arguments: CancelOrderArguments, context: ToolContext) -> dict[str, Any]:
        order = self._cancellable_order(arguments, context)
        assert order.id is not None
        order.status = OrderStatus.CANCELLED
        context.session.add(order)
        record_audit_event(
            context.session,
            actor=context.actor,
            action="order.cancel",
            target_type="order",
            target_id=order.id,
            detail={
                "order_number": order.number,
                "customer_id": context.customer_id,
                "conversation_id": context.conversation_id,
                "reason": arguments.reason,
            },
        )
        context.session.commit()
        return {
            "order_number": order.number,
            "status": str(order.status),
            "message": f"Order {order.number} is cancelled. The payment authorization is released by the "
            "customer's bank within 3-5 business days; the customer is not charged.",
        }


# --- refund ------------------------------------------------------------------------------------------------------


class RequestRefundArguments(ConfirmableArguments):
    order_number: str = Field(min_length=1, max_length=32, description=ORDER_NUMBER_DESCRIPTION)
    reason: str = Field(min_length=3, max_length=MAX_REASON_LENGTH, description="Why the customer wants a refund.")
    amount: float | None = Field(
        default=None,
        gt=0,
        description="Amount to refund in the order's currency, e.g. 42.10. Leave it out to refund everything that "
        "can still be refunded.",
    )


def amount_to_cents(amount: float) -> int:
    try:
        decimal = Decimal(str(amount))
    except InvalidOperation as exc:  # pragma: no cover - pydantic already guarantees a finite number
        raise ToolError(ErrorCode.INVALID_ARGUMENTS, f"{amount} is not a valid amount.") from exc
    cents = decimal * CENTS_PER_UNIT
    if cents != cents.to_integral_value():
        raise ToolError(ErrorCode.INVALID_ARGUMENTS, f"The amount {amount} has more than two decimals; use e.g. 42.10.")
    return int(cents)


class RequestRefundTool(TypedTool[RequestRefundArguments]):
    name = "request_refund"
    description = (
        "Request a refund on one of the current customer's delivered orders, for part or all of what is still "
        "refundable. Requires the customer's explicit confirmation. The refund is then reviewed by the shop."
    )
    arguments_model = RequestRefundArguments
    requires_confirmation = True

    def _checked(self, arguments: RequestRefundArguments, context: ToolContext) -> tuple[Order, int]:
        session = context.session
        order = find_customer_order(session, context.customer_id, arguments.order_number)
        if order.status != OrderStatus.DELIVERED:
            rule = "refunds can only be requested for delivered orders."
            raise _order_status_refusal(ErrorCode.REFUND_NOT_ALLOWED, order, rule, REFUND_HINTS)
        remaining = refundable_cents(session, order)
        paid = format_money(order.total_cents, order.currency)
        if remaining == 0:
            raise ToolError(
                ErrorCode.REFUND_EXCEEDS_PAID,
                f"Order {order.number} ({paid} paid) has already been refunded in full, counting refunds that are "
                "requested or approved. Nothing more can be refunded.",
            )
        amount = remaining if arguments.amount is None else amount_to_cents(arguments.amount)
        if amount > remaining:
            raise ToolError(
                ErrorCode.REFUND_EXCEEDS_PAID,
                f"{format_money(amount, order.currency)} is more than can be refunded on order {order.number}: "
                f"{paid} was paid and {format_money(order.total_cents - remaining, order.currency)} is already "
                f"refunded or requested, so at most {format_money(remaining, order.currency)} can be refunded.",
                refundable_amount=format_money(remaining, order.currency),
            )
        return order, amount

    def describe_action(self, arguments: RequestRefundArguments, context: ToolContext) -> str:
        order, amount = self._checked(arguments, context)
        return (
            f"A refund of {format_money(amount, order.currency)} on order {order.number} will be requested "
            f"(reason: {arguments.reason})."
        )

    def run(self, arguments: RequestRefundArguments, context: ToolContext) -> dict[str, Any]:
        order, amount = self._checked(arguments, context)
        assert order.id is not None
        refund = Refund(order_id=order.id, amount_cents=amount, reason=arguments.reason, status=RefundStatus.REQUESTED)
        context.session.add(refund)
        context.session.flush()
        record_audit_event(
            context.session,
            actor=context.actor,
            action="refund.request",
            target_type="order",
            target_id=order.id,
            detail={
                "order_number": order.number,
                "refund_id": refund.id,
                "amount_cents": amount,
                "currency": order.currency,
                "reason": arguments.reason,
                "customer_id": context.customer_id,
                "conversation_id": context.conversation_id,
            },
        )
        context.session.commit()
        return {
            "order_number": order.number,
            "refund_id": refund.id,
            "amount": format_money(amount, order.currency),
            "status": RefundStatus.REQUESTED.value,
            "message": "The refund is requested. Once approved it reaches the original payment method within "
            "5-10 business days (cards) or 3-5 business days (PayPal).",
        }


# --- address change ----------------------------------------------------------------------------------------------


class ChangeAddressArguments(ConfirmableArguments):
    order_number: str = Field(min_length=1, max_length=32, description=ORDER_NUMBER_DESCRIPTION)
    name: str | None = Field(
        default=None, min_length=1, max_length=ADDRESS_FIELD_MAX, description="Recipient; omit to keep the current."
    )
    line1: str = Field(min_length=3, max_length=ADDRESS_FIELD_MAX, description="Street address.")
    line2: str | None = Field(default=None, max_length=ADDRESS_FIELD_MAX, description="Apartment, suite, unit…")
    city: str = Field(min_length=1, max_length=ADDRESS_FIELD_MAX)
    region: str | None = Field(default=None, max_length=ADDRESS_FIELD_MAX, description="State, e.g. CA.")
    postal_code: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9 -]{1,14}$", description="ZIP or postal code.")
    country: str = Field(default="US", pattern=r"^[A-Za-z]{2}$", description="ISO country code, e.g. US.")

    @field_validator("name", "line1", "line2", "city", "region", "postal_code")
    @classmethod
    def _strip(cls, value: str | None) -> str | None:
        return value.strip() if isinstance(value, str) else value


class ChangeShippingAddressTool(TypedTool[ChangeAddressArguments]):
    name = "change_shipping_address"
    description = (
        "Change the shipping address of one of the current customer's orders. Only pending orders can be "
        "changed. Requires the customer's explicit confirmation."
    )
    arguments_model = ChangeAddressArguments
    requires_confirmation = True

    def _changeable_order(self, arguments: ChangeAddressArguments, context: ToolContext) -> Order:
        order = find_customer_order(context.session, context.customer_id, arguments.order_number)
        if order.status != OrderStatus.PENDING:
            hint = (
                "The address is already on the parcel's label; the customer can ask the carrier to redirect it."
                if order.status in (OrderStatus.PROCESSING, OrderStatus.SHIPPED)
                else ""
            )
            raise ToolError(
                ErrorCode.ADDRESS_CHANGE_NOT_ALLOWED,
                f"Order {order.number} is {order.status}; the address can only be changed while an order is "
                f"pending. {hint}".strip(),
            )
        return order

    @staticmethod
    def _new_address(arguments: ChangeAddressArguments, order: Order) -> ShippingAddress:
        return ShippingAddress(
            shipping_name=arguments.name or order.shipping_name,
            shipping_line1=arguments.line1,
            shipping_line2=arguments.line2 or None,
            shipping_city=arguments.city,
            shipping_region=arguments.region or None,
            shipping_postal_code=arguments.postal_code.upper(),
            shipping_country=arguments.country.upper(),
        )

    def describe_action(self, arguments: ChangeAddressArguments, context: ToolContext) -> str:
        order = self._changeable_order(arguments, context)
        old = one_line_address(order)
        new = one_line_address(self._new_address(arguments, order))
        return f"The shipping address of order {order.number} will change from {old} to {new}."

    def run(self, arguments: ChangeAddressArguments, context: ToolContext) -> dict[str, Any]:
        order = self._changeable_order(arguments, context)
        assert order.id is not None
        old = address_of(order)
        new = self._new_address(arguments, order)
        order.sqlmodel_update(new.model_dump())
        context.session.add(order)
        record_audit_event(
            context.session,
            actor=context.actor,
            action="order.change_address",
            target_type="order",
            target_id=order.id,
            detail={
                "order_number": order.number,
                "old_address": old,
                "new_address": address_of(new),
                "customer_id": context.customer_id,
                "conversation_id": context.conversation_id,
                "changed_at": utc_now().isoformat(),
            },
        )
        context.session.commit()
        return {
            "order_number": order.number,
            "shipping_address": address_of(new),
            "message": f"The order will ship to {one_line_address(new)}.",
        }
