"""The demo shop's tables: products, orders and their items, shipments, refunds.

The shop tables belong to ``app.demo_shop``: they back its tools and the ``memdesk seed-demo`` data, and live here
because the migrations create every table from ``app.models``. Outside the demo shop only ``app.privacy`` reads
them, as they hold customers' data to export and erase. A real shop keeps this data in its own system and plugs in
through config-file HTTP tools instead. The help center is knowledge (``app.knowledge``), whichever shop it serves.
Money is integer cents plus an ISO 4217 currency code; ``Order.total_cents`` is what the customer paid.
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import CURRENCY_LENGTH, DEFAULT_CURRENCY, enum_type, json_type, utc_now

SKU_LENGTH = 32
ORDER_NUMBER_LENGTH = 16
PRODUCT_NAME_LENGTH = 200
ADDRESS_FIELD_LENGTH = 200
POSTAL_CODE_LENGTH = 16
COUNTRY_CODE_LENGTH = 2
CARRIER_LENGTH = 32
TRACKING_NUMBER_LENGTH = 64


class OrderStatus(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"


class ShipmentStatus(StrEnum):
    LABEL_CREATED = "label_created"
    IN_TRANSIT = "in_transit"
    OUT_FOR_DELIVERY = "out_for_delivery"
    DELIVERED = "delivered"
    EXCEPTION = "exception"


class RefundStatus(StrEnum):
    REQUESTED = "requested"
    APPROVED = "approved"
    REJECTED = "rejected"


class Product(SQLModel, table=True):
    __tablename__ = "products"

    id: int | None = Field(default=None, primary_key=True)
    sku: str = Field(max_length=SKU_LENGTH, unique=True)
    name: str = Field(max_length=PRODUCT_NAME_LENGTH)
    price_cents: int
    currency: str = Field(default=DEFAULT_CURRENCY, max_length=CURRENCY_LENGTH)


class ShippingAddress(SQLModel):
    """Where an order goes; also the shape of an address change."""

    shipping_name: str = Field(max_length=ADDRESS_FIELD_LENGTH)
    shipping_line1: str = Field(max_length=ADDRESS_FIELD_LENGTH)
    shipping_line2: str | None = Field(default=None, max_length=ADDRESS_FIELD_LENGTH)
    shipping_city: str = Field(max_length=ADDRESS_FIELD_LENGTH)
    shipping_region: str | None = Field(default=None, max_length=ADDRESS_FIELD_LENGTH)
    shipping_postal_code: str = Field(max_length=POSTAL_CODE_LENGTH)
    shipping_country: str = Field(max_length=COUNTRY_CODE_LENGTH)  # ISO 3166-1 alpha-2


class OrderBase(ShippingAddress):
    number: str = Field(max_length=ORDER_NUMBER_LENGTH, unique=True)  # like "#W2378156"
    status: OrderStatus = Field(default=OrderStatus.PENDING, sa_type=enum_type(OrderStatus))
    placed_at: datetime = Field(default_factory=utc_now)
    total_cents: int
    currency: str = Field(default=DEFAULT_CURRENCY, max_length=CURRENCY_LENGTH)


class Order(OrderBase, table=True):
    __tablename__ = "orders"

    id: int | None = Field(default=None, primary_key=True)
    customer_id: int = Field(foreign_key="customers.id", index=True)


class OrderItem(SQLModel, table=True):
    __tablename__ = "order_items"

    id: int | None = Field(default=None, primary_key=True)
    order_id: int = Field(foreign_key="orders.id", index=True, ondelete="CASCADE")
    product_id: int = Field(foreign_key="products.id")
    quantity: int
    unit_price_cents: int


class Shipment(SQLModel, table=True):
    __tablename__ = "shipments"

    id: int | None = Field(default=None, primary_key=True)
    order_id: int = Field(foreign_key="orders.id", index=True, ondelete="CASCADE")
    carrier: str = Field(max_length=CARRIER_LENGTH)
    tracking_number: str = Field(max_length=TRACKING_NUMBER_LENGTH, unique=True)
    status: ShipmentStatus = Field(default=ShipmentStatus.LABEL_CREATED, sa_type=enum_type(ShipmentStatus))
    # Carrier scan events, oldest first: {"at": ISO 8601, "status": ..., "location": ..., "description": ...}
    events: list[dict[str, Any]] = Field(default_factory=list, sa_type=json_type())
    eta: date | None = None


class Refund(SQLModel, table=True):
    __tablename__ = "refunds"

    id: int | None = Field(default=None, primary_key=True)
    order_id: int = Field(foreign_key="orders.id", index=True, ondelete="CASCADE")
    amount_cents: int
    reason: str = Field(sa_type=sa.Text)
    status: RefundStatus = Field(default=RefundStatus.REQUESTED, sa_type=enum_type(RefundStatus))
    created_at: datetime = Field(default_factory=utc_now)
