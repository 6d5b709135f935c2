"""Deterministic generation of the demo shop, as plain values (no database involved).

``generate_demo_shop`` draws everything from one seeded ``random.Random`` and dates everything relative to a fixed
``base_date``, so the same arguments always produce exactly the same shop. Orders are dated up to
``ORDER_HISTORY_DAYS`` before the base date; their status follows their age (recent orders are pending or
processing, older ones delivered), and shipments, carrier scans, ETAs and refunds are consistent with that status.
Customer ``demo-cust-0001`` (Maya Thompson) always has one order in each status, and a delivered order with a
partial refund, so demos and manual tests have a known customer to log in as.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

from app.demo_shop.catalog import (
    CITIES,
    FIRST_NAMES,
    LAST_NAMES,
    PRODUCTS,
    REFUND_REASONS,
    SHIPMENT_EXCEPTIONS,
    STREET_NAMES,
    STREET_SUFFIXES,
    WAREHOUSES,
    CatalogProduct,
    City,
)
from app.models import OrderStatus, RefundStatus, ShipmentStatus

T = TypeVar("T")

DEMO_BASE_DATE = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
DEMO_RANDOM_SEED = 20261120
CUSTOMER_COUNT = 220
ORDER_COUNT = 600
ORDER_HISTORY_DAYS = 240
DEMO_CUSTOMER_EXTERNAL_ID = "demo-cust-0001"
DEMO_CUSTOMER_NAME = ("Maya", "Thompson")

FREE_SHIPPING_THRESHOLD_CENTS = 5_000
STANDARD_SHIPPING_CENTS = 599
SPLIT_SHIPMENT_PROBABILITY = 0.15
REFUND_PROBABILITY = 0.12
SECOND_ADDRESS_LINE_PROBABILITY = 0.3
GIFT_ADDRESS_PROBABILITY = 0.1  # shipped to someone else than the customer
LABEL_BEFORE_PACKING_PROBABILITY = 0.5  # a processing order already has its shipping label
FULL_REFUND_PROBABILITY = 0.25

STATUS_WEIGHTS: tuple[tuple[OrderStatus, int], ...] = (
    (OrderStatus.DELIVERED, 64),
    (OrderStatus.SHIPPED, 13),
    (OrderStatus.PROCESSING, 8),
    (OrderStatus.PENDING, 7),
    (OrderStatus.CANCELLED, 8),
)
SHIPPED_STATUS_WEIGHTS: tuple[tuple[ShipmentStatus, int], ...] = (
    (ShipmentStatus.IN_TRANSIT, 70),
    (ShipmentStatus.OUT_FOR_DELIVERY, 15),
    (ShipmentStatus.EXCEPTION, 15),
)
REFUND_STATUS_WEIGHTS: tuple[tuple[RefundStatus, int], ...] = (
    (RefundStatus.APPROVED, 60),
    (RefundStatus.REQUESTED, 25),
    (RefundStatus.REJECTED, 15),
)
# Curated orders of the demo customer, oldest first; the first one gets a partial refund.
DEMO_CUSTOMER_ORDERS: tuple[OrderStatus, ...] = (
    OrderStatus.DELIVERED,
    OrderStatus.CANCELLED,
    OrderStatus.DELIVERED,
    OrderStatus.SHIPPED,
    OrderStatus.PROCESSING,
    OrderStatus.PENDING,
)


@dataclass(frozen=True)
class DemoAddress:
    name: str
    line1: str
    line2: str | None
    city: str
    region: str
    postal_code: str
    country: str = "US"


@dataclass(frozen=True)
class DemoCustomer:
    external_id: str
    name: str
    email: str
    phone: str
    created_at: datetime
    address: DemoAddress


@dataclass(frozen=True)
class DemoItem:
    sku: str
    quantity: int
    unit_price_cents: int


@dataclass(frozen=True)
class DemoShipment:
    carrier: str
    tracking_number: str
    status: ShipmentStatus
    events: tuple[dict[str, Any], ...]
    eta: date | None


@dataclass(frozen=True)
class DemoRefund:
    amount_cents: int
    reason: str
    status: RefundStatus
    created_at: datetime


@dataclass(frozen=True)
class DemoOrder:
    number: str
    customer_external_id: str
    status: OrderStatus
    placed_at: datetime
    address: DemoAddress
    items: tuple[DemoItem, ...]
    total_cents: int
    shipments: tuple[DemoShipment, ...]
    refunds: tuple[DemoRefund, ...]


@dataclass(frozen=True)
class DemoShop:
    products: tuple[CatalogProduct, ...]
    customers: tuple[DemoCustomer, ...]
    orders: tuple[DemoOrder, ...]  # oldest first


def generate_demo_shop(*, base_date: datetime = DEMO_BASE_DATE, random_seed: int = DEMO_RANDOM_SEED) -> DemoShop:
    """The whole demo shop; the same arguments always give the same result."""
    if base_date.utcoffset() is None:
        raise ValueError("base_date must be timezone-aware, for example datetime(2026, 11, 20, tzinfo=UTC).")
    return _ShopGenerator(random.Random(random_seed), base_date.astimezone(UTC)).shop()


def _weighted(rng: random.Random, weights: tuple[tuple[T, int], ...]) -> T:
    return rng.choices([value for value, _ in weights], weights=[weight for _, weight in weights])[0]


def _place(city: City) -> str:
    return f"{city.name}, {city.region}"


class _ShopGenerator:
    def __init__(self, rng: random.Random, base: datetime) -> None:
        self.rng = rng
        self.base = base
        self.emails: set[str] = set()
        self.order_numbers: set[str] = set()
        self.tracking_numbers: set[str] = set()

    def shop(self) -> DemoShop:
        customers = [self.customer(number) for number in range(1, CUSTOMER_COUNT + 1)]
        orders = [
            self.demo_customer_order(customers[0], status, index) for index, status in enumerate(DEMO_CUSTOMER_ORDERS)
        ]
        while len(orders) < ORDER_COUNT:
            customer = self.rng.choice(customers)
            orders.append(self.order(customer, _weighted(self.rng, STATUS_WEIGHTS)))
        orders.sort(key=lambda order: (order.placed_at, order.number))
        return DemoShop(products=PRODUCTS, customers=tuple(customers), orders=tuple(orders))

    # --- customers ---------------------------------------------------------------------------------------------

    def customer(self, number: int) -> DemoCustomer:
        rng = self.rng
        first, last = DEMO_CUSTOMER_NAME if number == 1 else (rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES))
        email = f"{first}.{last}@example.com".lower()
        if email in self.emails:
            email = f"{first}.{last}{number}@example.com".lower()
        self.emails.add(email)
        city = rng.choice(CITIES)
        address = self.address(f"{first} {last}", city)
        joined_ago = timedelta(days=rng.randint(ORDER_HISTORY_DAYS + 10, 1100), minutes=rng.randrange(24 * 60))
        return DemoCustomer(
            external_id=f"demo-cust-{number:04d}",
            name=f"{first} {last}",
            email=email,
            phone=f"+1{city.area_code}55501{rng.randrange(100):02d}",
            created_at=self.base - joined_ago,
            address=address,
        )

    def address(self, name: str, city: City) -> DemoAddress:
        rng = self.rng
        line2 = None
        if rng.random() < SECOND_ADDRESS_LINE_PROBABILITY:
            line2 = f"Apt {rng.randint(1, 40)}{rng.choice('ABCD')}"
        return DemoAddress(
            name=name,
            line1=f"{rng.randint(10, 9899)} {rng.choice(STREET_NAMES)} {rng.choice(STREET_SUFFIXES)}",
            line2=line2,
            city=city.name,
            region=city.region,
            postal_code=f"{city.postal_prefix}{rng.randrange(100):02d}",
        )

    # --- orders ------------------------------------------------------------------------------------------------

    def demo_customer_order(self, customer: DemoCustomer, status: OrderStatus, index: int) -> DemoOrder:
        # Older curated orders first, all within the history window, each in its status's natural age range.
        age = self.age(status)
        if status in (OrderStatus.DELIVERED, OrderStatus.CANCELLED):
            age = timedelta(days=90 - 20 * index, hours=self.rng.randint(0, 23))
        return self.order(customer, status, age=age, force_refund=index == 0)

    def order(
        self,
        customer: DemoCustomer,
        status: OrderStatus,
        *,
        age: timedelta | None = None,
        force_refund: bool = False,
    ) -> DemoOrder:
        rng = self.rng
        placed_at = self.base - (age if age is not None else self.age(status))
        items = self.items()
        subtotal = sum(item.quantity * item.unit_price_cents for item in items)
        shipping = 0 if subtotal >= FREE_SHIPPING_THRESHOLD_CENTS else STANDARD_SHIPPING_CENTS
        total = subtotal + shipping
        address = customer.address
        if rng.random() < GIFT_ADDRESS_PROBABILITY:
            other = f"{rng.choice(FIRST_NAMES)} {customer.name.split()[-1]}"
            address = self.address(other, rng.choice(CITIES))
        shipments = self.shipments(status, placed_at, address, parcels=2 if self.is_split(status, items) else 1)
        refunds: tuple[DemoRefund, ...] = ()
        if status is OrderStatus.DELIVERED and (force_refund or rng.random() < REFUND_PROBABILITY):
            delivered_at = datetime.fromisoformat(shipments[-1].events[-1]["at"])
            refunds = (self.refund(items, total, delivered_at, partial=force_refund),)
        return DemoOrder(
            number=self.order_number(),
            customer_external_id=customer.external_id,
            status=status,
            placed_at=placed_at,
            address=address,
            items=items,
            total_cents=total,
            shipments=shipments,
            refunds=refunds,
        )

    def age(self, status: OrderStatus) -> timedelta:
        rng = self.rng
        if status is OrderStatus.PENDING:
            return timedelta(minutes=rng.randint(5, 18 * 60))
        if status is OrderStatus.PROCESSING:
            return timedelta(hours=rng.randint(20, 60))
        if status is OrderStatus.SHIPPED:
            return timedelta(hours=rng.randint(48, 170))
        if status is OrderStatus.DELIVERED:
            return timedelta(days=rng.randint(6, ORDER_HISTORY_DAYS), minutes=rng.randrange(24 * 60))
        return timedelta(days=rng.randint(1, ORDER_HISTORY_DAYS), minutes=rng.randrange(24 * 60))

    def order_number(self) -> str:
        while True:
            number = f"#W{self.rng.randrange(1_000_000, 10_000_000)}"
            if number not in self.order_numbers:
                self.order_numbers.add(number)
                return number

    def items(self) -> tuple[DemoItem, ...]:
        rng = self.rng
        count = rng.choices((1, 2, 3, 4), weights=(45, 30, 17, 8))[0]
        products = rng.sample(PRODUCTS, count)
        return tuple(
            DemoItem(product.sku, rng.choices((1, 2, 3), weights=(75, 20, 5))[0], product.price_cents)
            for product in products
        )

    def is_split(self, status: OrderStatus, items: tuple[DemoItem, ...]) -> bool:
        shipped = status in (OrderStatus.SHIPPED, OrderStatus.DELIVERED)
        return shipped and len(items) > 1 and self.rng.random() < SPLIT_SHIPMENT_PROBABILITY

    def refund(self, items: tuple[DemoItem, ...], total: int, delivered_at: datetime, *, partial: bool) -> DemoRefund:
        rng = self.rng
        full = not partial and rng.random() < FULL_REFUND_PROBABILITY
        amount = total if full else min(total, rng.choice(items).unit_price_cents)
        created_at = min(delivered_at + timedelta(days=rng.randint(1, 20)), self.base - timedelta(hours=1))
        status = RefundStatus.APPROVED if partial else _weighted(rng, REFUND_STATUS_WEIGHTS)
        return DemoRefund(amount, rng.choice(REFUND_REASONS), status, created_at)

    # --- shipments ---------------------------------------------------------------------------------------------

    def shipments(
        self, status: OrderStatus, placed_at: datetime, address: DemoAddress, *, parcels: int
    ) -> tuple[DemoShipment, ...]:
        rng = self.rng
        if status in (OrderStatus.PENDING, OrderStatus.CANCELLED):
            return ()
        if status is OrderStatus.PROCESSING:
            if rng.random() >= LABEL_BEFORE_PACKING_PROBABILITY:
                return ()
            return (self.shipment(ShipmentStatus.LABEL_CREATED, placed_at, address),)
        if status is OrderStatus.DELIVERED:
            return tuple(self.shipment(ShipmentStatus.DELIVERED, placed_at, address) for _ in range(parcels))
        first = _weighted(rng, SHIPPED_STATUS_WEIGHTS)
        rest = [ShipmentStatus.IN_TRANSIT] * (parcels - 1)
        return tuple(self.shipment(state, placed_at, address) for state in [first, *rest])

    def shipment(self, status: ShipmentStatus, placed_at: datetime, address: DemoAddress) -> DemoShipment:
        rng = self.rng
        carrier = "UPS" if rng.random() < 0.55 else "FedEx"
        origin = rng.choice(WAREHOUSES)
        hub = _place(rng.choice(CITIES))
        destination = f"{address.city}, {address.region}"
        timeline: list[tuple[int, ShipmentStatus, str, str]] = [
            (rng.randint(4, 30), ShipmentStatus.LABEL_CREATED, origin, "Shipping label created"),
            (rng.randint(6, 20), ShipmentStatus.IN_TRANSIT, origin, "Picked up by carrier"),
            (rng.randint(10, 30), ShipmentStatus.IN_TRANSIT, hub, "Departed carrier facility"),
            (rng.randint(10, 30), ShipmentStatus.IN_TRANSIT, destination, "Arrived at destination facility"),
            (rng.randint(6, 14), ShipmentStatus.OUT_FOR_DELIVERY, destination, "Out for delivery"),
            (rng.randint(2, 9), ShipmentStatus.DELIVERED, destination, "Delivered, left at front door"),
        ]
        keep = {
            ShipmentStatus.LABEL_CREATED: 1,
            ShipmentStatus.IN_TRANSIT: rng.randint(2, 4),
            ShipmentStatus.OUT_FOR_DELIVERY: 5,
            ShipmentStatus.DELIVERED: 6,
            ShipmentStatus.EXCEPTION: 4,
        }[status]
        steps = timeline[:keep]
        if status is ShipmentStatus.EXCEPTION:
            steps.append((rng.randint(2, 10), ShipmentStatus.EXCEPTION, destination, rng.choice(SHIPMENT_EXCEPTIONS)))
        events = self.dated_events(placed_at, steps)
        return DemoShipment(
            carrier=carrier,
            tracking_number=self.tracking_number(carrier),
            status=status,
            events=events,
            eta=self.eta(status, events),
        )

    def dated_events(
        self, placed_at: datetime, steps: list[tuple[int, ShipmentStatus, str, str]]
    ) -> tuple[dict[str, Any], ...]:
        # Hours between scans; squeezed proportionally when the scans would run past the base date.
        offsets: list[int] = []
        elapsed = 0
        for hours, *_ in steps:
            elapsed += hours
            offsets.append(elapsed)
        available = (self.base - timedelta(hours=1) - placed_at) / timedelta(hours=1)
        scale = min(1.0, available / offsets[-1]) if offsets[-1] else 1.0
        return tuple(
            {
                "at": (placed_at + timedelta(hours=offset * scale)).replace(microsecond=0).isoformat(),
                "status": state.value,
                "location": location,
                "description": description,
            }
            for offset, (_, state, location, description) in zip(offsets, steps, strict=True)
        )

    def eta(self, status: ShipmentStatus, events: tuple[dict[str, Any], ...]) -> date:
        if status is ShipmentStatus.DELIVERED:
            return datetime.fromisoformat(events[-1]["at"]).date()
        days_left = {
            ShipmentStatus.OUT_FOR_DELIVERY: (0, 0),
            ShipmentStatus.IN_TRANSIT: (1, 4),
            ShipmentStatus.EXCEPTION: (2, 5),
            ShipmentStatus.LABEL_CREATED: (3, 6),
        }[status]
        return self.base.date() + timedelta(days=self.rng.randint(*days_left))

    def tracking_number(self, carrier: str) -> str:
        rng = self.rng
        while True:
            if carrier == "UPS":
                shipper = "".join(rng.choices(string.ascii_uppercase + string.digits, k=6))
                service = rng.choice(("01", "02", "03"))
                number = f"1Z{shipper}{service}{rng.randrange(10**8):08d}"
            else:
                number = str(rng.randrange(10**11, 10**12))
            if number not in self.tracking_numbers:
                self.tracking_numbers.add(number)
                return number
