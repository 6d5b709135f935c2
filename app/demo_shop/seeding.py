"""Writing the generated demo shop into the database, idempotently.

Every demo row has a natural key (customer ``external_id``, product ``sku``, order ``number``); ``seed_demo`` inserts
only the rows whose key is missing, so running it twice changes nothing and running it on a partly seeded database
fills the gaps. An order is inserted together with its items, shipments and refunds, or not at all. The shop rows are
committed in one transaction; then the help-center articles (``app.demo_shop.help_documents``) are imported as the
knowledge source ``demo-help-center``, where an unchanged article is left as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime

from sqlmodel import Session, SQLModel, col, select

from app.demo_shop.catalog import CatalogProduct
from app.demo_shop.generator import DEMO_BASE_DATE, DEMO_RANDOM_SEED, DemoCustomer, DemoOrder, generate_demo_shop
from app.demo_shop.help_documents import DEMO_SOURCE, demo_help_documents
from app.knowledge.importer import import_documents
from app.knowledge.vectors import KnowledgeVectors
from app.models import Customer, Order, OrderItem, Product, Refund, Shipment


@dataclass(frozen=True)
class SeedReport:
    """How many rows of each kind ``seed_demo`` inserted, and help articles it imported (zero everywhere on a repeated
    run)."""

    customers: int = 0
    products: int = 0
    orders: int = 0
    order_items: int = 0
    shipments: int = 0
    refunds: int = 0
    help_articles: int = 0

    @property
    def total(self) -> int:
        return sum(getattr(self, field.name) for field in fields(self))

    def describe(self) -> str:
        if self.total == 0:
            return "The demo shop is already seeded; nothing was added."
        counts = ", ".join(f"{getattr(self, field.name)} {field.name.replace('_', ' ')}" for field in fields(self))
        return f"Seeded the demo shop: {counts}."


def seed_demo(
    session: Session,
    *,
    base_date: datetime = DEMO_BASE_DATE,
    random_seed: int = DEMO_RANDOM_SEED,
    vectors: KnowledgeVectors | None = None,
) -> SeedReport:
    """Insert the demo shop's missing rows and commit, then import its help center; see the module docstring.

    ``vectors`` embeds the articles' chunks; None uses those of the session's engine (the settings' embedder)."""
    shop = generate_demo_shop(base_date=base_date, random_seed=random_seed)
    customer_ids, customers_added = _insert_customers(session, shop.customers)
    product_ids, products_added = _insert_products(session, shop.products)
    order_counts = _insert_orders(session, shop.orders, customer_ids=customer_ids, product_ids=product_ids)
    session.commit()
    imported = import_documents(session, DEMO_SOURCE, demo_help_documents(), vectors=vectors)
    orders, items, shipments, refunds = order_counts
    return SeedReport(
        customers=customers_added,
        products=products_added,
        orders=orders,
        order_items=items,
        shipments=shipments,
        refunds=refunds,
        help_articles=len(imported.added) + len(imported.updated),
    )


def _insert_customers(session: Session, customers: Iterable[DemoCustomer]) -> tuple[dict[str, int], int]:
    wanted = list(customers)
    keys = [customer.external_id for customer in wanted]
    existing = set(session.exec(select(Customer.external_id).where(col(Customer.external_id).in_(keys))))
    new = [
        Customer(
            external_id=customer.external_id,
            name=customer.name,
            email=customer.email,
            phone=customer.phone,
            created_at=customer.created_at,
        )
        for customer in wanted
        if customer.external_id not in existing
    ]
    session.add_all(new)
    session.flush()
    rows = session.exec(select(Customer.external_id, Customer.id).where(col(Customer.external_id).in_(keys)))
    return {external_id: id_ for external_id, id_ in rows if external_id and id_}, len(new)


def _insert_products(session: Session, products: Iterable[CatalogProduct]) -> tuple[dict[str, int], int]:
    wanted = list(products)
    skus = [product.sku for product in wanted]
    existing = set(session.exec(select(Product.sku).where(col(Product.sku).in_(skus))))
    new = [
        Product(sku=product.sku, name=product.name, price_cents=product.price_cents)
        for product in wanted
        if product.sku not in existing
    ]
    session.add_all(new)
    session.flush()
    rows = session.exec(select(Product.sku, Product.id).where(col(Product.sku).in_(skus)))
    return {sku: id_ for sku, id_ in rows if id_}, len(new)


def _order_row(order: DemoOrder, customer_id: int) -> Order:
    address = order.address
    return Order(
        number=order.number,
        customer_id=customer_id,
        status=order.status,
        placed_at=order.placed_at,
        total_cents=order.total_cents,
        shipping_name=address.name,
        shipping_line1=address.line1,
        shipping_line2=address.line2,
        shipping_city=address.city,
        shipping_region=address.region,
        shipping_postal_code=address.postal_code,
        shipping_country=address.country,
    )


def _order_children(order: DemoOrder, order_id: int, product_ids: dict[str, int]) -> list[SQLModel]:
    """The items, shipments and refunds of one order."""
    items = [
        OrderItem(
            order_id=order_id,
            product_id=product_ids[item.sku],
            quantity=item.quantity,
            unit_price_cents=item.unit_price_cents,
        )
        for item in order.items
    ]
    shipments = [
        Shipment(
            order_id=order_id,
            carrier=shipment.carrier,
            tracking_number=shipment.tracking_number,
            status=shipment.status,
            events=list(shipment.events),
            eta=shipment.eta,
        )
        for shipment in order.shipments
    ]
    refunds = [
        Refund(
            order_id=order_id,
            amount_cents=refund.amount_cents,
            reason=refund.reason,
            status=refund.status,
            created_at=refund.created_at,
        )
        for refund in order.refunds
    ]
    return [*items, *shipments, *refunds]


def _insert_orders(
    session: Session,
    orders: Iterable[DemoOrder],
    *,
    customer_ids: dict[str, int],
    product_ids: dict[str, int],
) -> tuple[int, int, int, int]:
    wanted = list(orders)
    numbers = [order.number for order in wanted]
    existing = set(session.exec(select(Order.number).where(col(Order.number).in_(numbers))))
    pending = [order for order in wanted if order.number not in existing]
    rows = [_order_row(order, customer_ids[order.customer_external_id]) for order in pending]
    session.add_all(rows)
    session.flush()
    children: list[SQLModel] = []
    for order, row in zip(pending, rows, strict=True):
        assert row.id is not None  # set by the flush above
        children += _order_children(order, row.id, product_ids)
    session.add_all(children)
    session.flush()
    counts = [sum(isinstance(child, kind) for child in children) for kind in (OrderItem, Shipment, Refund)]
    return len(rows), counts[0], counts[1], counts[2]
