"""The demo shop: deterministic, big enough, internally consistent, and idempotent to seed."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, inspect
from sqlmodel import Session, SQLModel, select

from app.cli import main
from app.db import create_db_engine, migrate
from app.demo_shop import (
    DEMO_BASE_DATE,
    DEMO_CUSTOMER_EXTERNAL_ID,
    DEMO_SOURCE,
    SeedReport,
    demo_help_documents,
    generate_demo_shop,
    seed_demo,
)
from app.knowledge.search import is_confident, search_knowledge
from app.knowledge.store import delete_documents
from app.knowledge.vector_matrix import EMBEDDING_DIMS
from app.knowledge.vectors import KnowledgeVectors, attach_vectors
from app.models import (
    Customer,
    KnowledgeChunk,
    KnowledgeDocument,
    KnowledgeSource,
    Order,
    OrderItem,
    OrderStatus,
    Product,
    Refund,
    RefundStatus,
    Shipment,
    ShipmentStatus,
)
from memory.embedders import HashingEmbedder

SHOP_TABLES: tuple[type[SQLModel], ...] = (Customer, Product, Order, OrderItem, Shipment, Refund)
ORDER_NUMBER = re.compile(r"^#W\d{7}$")
UPS_TRACKING = re.compile(r"^1Z[A-Z0-9]{16}$")
FEDEX_TRACKING = re.compile(r"^\d{12}$")
E164_FICTIONAL = re.compile(r"^\+1\d{3}55501\d{2}$")


def seeded_engine(directory: Path) -> Engine:
    url = f"sqlite:///{directory / 'demo.db'}"
    migrate(url)
    engine = create_db_engine(url)
    with Session(engine) as session:
        seed_demo(session, vectors=hashing_vectors(engine))
    return engine


def hashing_vectors(engine: Engine) -> KnowledgeVectors:
    """The test embedder: the real hashing one, fast and deterministic (the local model is for the product)."""
    return attach_vectors(engine, HashingEmbedder(EMBEDDING_DIMS))


def dump(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """Every row of the shop tables; public ids are random by design, so they are left out."""
    with Session(engine) as session:
        return {
            table.__name__: [
                row.model_dump(exclude={"public_id"})
                for row in session.exec(select(table).order_by(*inspect(table).primary_key))
            ]
            for table in SHOP_TABLES
        }


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    engine = seeded_engine(tmp_path_factory.mktemp("demo"))
    yield engine
    engine.dispose()


@pytest.fixture
def session(demo: Engine) -> Iterator[Session]:
    with Session(demo) as db_session:
        yield db_session


def test_generation_is_deterministic() -> None:
    assert generate_demo_shop() == generate_demo_shop()
    assert generate_demo_shop(random_seed=1) != generate_demo_shop()


def test_two_seeded_databases_hold_identical_data(demo: Engine, tmp_path: Path) -> None:
    other = seeded_engine(tmp_path)
    try:
        assert dump(other) == dump(demo)
    finally:
        other.dispose()


def test_seeding_twice_adds_nothing(tmp_path: Path) -> None:
    engine = seeded_engine(tmp_path)
    try:
        before = dump(engine)
        with Session(engine) as session:
            chunks = len(session.exec(select(KnowledgeChunk)).all())
            report = seed_demo(session)
            assert len(session.exec(select(KnowledgeChunk)).all()) == chunks
        assert report == SeedReport() and report.total == 0
        assert "already seeded" in report.describe()
        assert dump(engine) == before
    finally:
        engine.dispose()


def test_seeding_fills_gaps_without_duplicating(tmp_path: Path) -> None:
    engine = seeded_engine(tmp_path)
    try:
        with Session(engine) as session:
            source = session.exec(select(KnowledgeSource).where(KnowledgeSource.name == DEMO_SOURCE)).one()
            assert source.id is not None
            delete_documents(session, source.id, ["return-policy.md"])
            session.commit()
            report = seed_demo(session)
            assert report == SeedReport(help_articles=1)
            assert len(session.exec(select(KnowledgeDocument)).all()) == len(demo_help_documents())
    finally:
        engine.dispose()


def test_counts(session: Session) -> None:
    counts = {table.__name__: len(session.exec(select(table)).all()) for table in SHOP_TABLES}
    assert counts["Customer"] >= 200
    assert counts["Order"] >= 500
    assert counts["Product"] >= 30
    assert counts["OrderItem"] >= counts["Order"]
    assert counts["Refund"] >= 20


def test_orders_are_consistent(session: Session) -> None:
    orders = session.exec(select(Order)).all()
    assert all(ORDER_NUMBER.match(order.number) for order in orders)
    assert Counter(order.status for order in orders).keys() == set(OrderStatus)
    assert all(order.placed_at <= DEMO_BASE_DATE and order.placed_at.tzinfo is not None for order in orders)
    items: dict[int, int] = Counter()
    for item in session.exec(select(OrderItem)):
        items[item.order_id] += item.quantity * item.unit_price_cents
    for order in orders:
        assert order.id is not None
        shipping = order.total_cents - items[order.id]
        assert shipping in (0, 599), order.number  # free shipping from $50, else $5.99


def test_shipments_match_their_order(session: Session) -> None:
    rows = session.exec(select(Shipment, Order).join(Order)).all()
    assert {shipment.status for shipment, _ in rows} == set(ShipmentStatus)
    carriers = Counter(shipment.carrier for shipment, _ in rows)
    assert carriers["UPS"] > 50 and carriers["FedEx"] > 50
    allowed = {
        OrderStatus.PROCESSING: {ShipmentStatus.LABEL_CREATED},
        OrderStatus.SHIPPED: {ShipmentStatus.IN_TRANSIT, ShipmentStatus.OUT_FOR_DELIVERY, ShipmentStatus.EXCEPTION},
        OrderStatus.DELIVERED: {ShipmentStatus.DELIVERED},
    }
    for shipment, order in rows:
        pattern = UPS_TRACKING if shipment.carrier == "UPS" else FEDEX_TRACKING
        assert pattern.match(shipment.tracking_number), shipment.tracking_number
        assert shipment.status in allowed[order.status]
        assert shipment.events and shipment.events[0]["status"] == "label_created"
        assert shipment.events[-1]["status"] == shipment.status
        times = [datetime.fromisoformat(event["at"]) for event in shipment.events]
        assert times == sorted(times) and order.placed_at <= times[0] and times[-1] <= DEMO_BASE_DATE
        assert shipment.eta is not None
    delivered_ids = {order.id for order in session.exec(select(Order).where(Order.status == OrderStatus.DELIVERED))}
    assert delivered_ids <= {order.id for _, order in rows}


def test_refunds_only_on_delivered_orders_and_never_above_the_total(session: Session) -> None:
    rows = session.exec(select(Refund, Order).join(Order)).all()
    assert {refund.status for refund, _ in rows} == set(RefundStatus)
    refunded: dict[str, int] = Counter()
    for refund, order in rows:
        assert order.status == OrderStatus.DELIVERED
        assert 0 < refund.amount_cents <= order.total_cents
        assert refund.created_at <= DEMO_BASE_DATE
        if refund.status != RefundStatus.REJECTED:
            refunded[order.number] += refund.amount_cents
    totals = {order.number: order.total_cents for _, order in rows}
    assert all(amount <= totals[number] for number, amount in refunded.items())


def test_customers_are_synthetic_and_unique(session: Session) -> None:
    customers = session.exec(select(Customer)).all()
    emails = [customer.email for customer in customers]
    assert len(set(emails)) == len(emails)
    assert all(email and email.endswith("@example.com") for email in emails)
    assert all(customer.phone and E164_FICTIONAL.match(customer.phone) for customer in customers)
    assert all(customer.created_at < DEMO_BASE_DATE for customer in customers)


def test_demo_customer_has_an_order_in_every_status(session: Session) -> None:
    maya = session.exec(select(Customer).where(Customer.external_id == DEMO_CUSTOMER_EXTERNAL_ID)).one()
    assert maya.name == "Maya Thompson"
    orders = session.exec(select(Order).where(Order.customer_id == maya.id)).all()
    assert {order.status for order in orders} == set(OrderStatus)
    refunds = session.exec(select(Refund).join(Order).where(Order.customer_id == maya.id)).all()
    assert any(refund.status == RefundStatus.APPROVED for refund in refunds)


def test_seed_demo_imports_the_help_center_as_a_knowledge_source(session: Session) -> None:
    source = session.exec(select(KnowledgeSource).where(KnowledgeSource.name == DEMO_SOURCE)).one()
    documents = session.exec(select(KnowledgeDocument).where(KnowledgeDocument.source_id == source.id)).all()
    locators = {document.locator for document in documents}
    assert len(documents) == len(demo_help_documents()) >= 30
    for topic in (
        "return-policy",
        "refund-timing",
        "shipping-times-and-costs",
        "change-shipping-address",
        "cancel-an-order",
        "product-warranty",
        "payment-methods",
        "reset-password",
    ):
        assert f"{topic}.md" in locators  # fmt: skip
    hits = search_knowledge(session, "Our return policy: return most items within 30 days of delivery")
    assert hits[0].title == "Our return policy" and is_confident(hits[0])


def test_every_demo_article_is_real_content_under_its_title() -> None:
    for document in demo_help_documents():
        assert document.markdown.startswith(f"# {document.title}\n\n"), document.locator
        body = document.markdown.split("\n\n", 1)[1]
        assert len(body) >= 250 and not body.startswith(" "), document.locator


def test_base_date_moves_the_whole_shop() -> None:
    later = datetime(2027, 5, 1, 12, tzinfo=UTC)
    shop = generate_demo_shop(base_date=later)
    assert max(order.placed_at for order in shop.orders) <= later
    assert max(order.placed_at for order in shop.orders) > DEMO_BASE_DATE
    with pytest.raises(ValueError, match="timezone-aware"):
        generate_demo_shop(base_date=datetime(2027, 5, 1))


def test_cli_seed_demo_is_idempotent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["seed-demo", "--database-url", url]) == 0
    assert "Seeded the demo shop: 220 customers" in capsys.readouterr().out
    assert main(["seed-demo", "--database-url", url, "--base-date", "2026-11-20T15:00:00+00:00"]) == 0
    assert "already seeded" in capsys.readouterr().out
    engine = create_db_engine(url)
    try:
        with Session(engine) as session:
            assert len(session.exec(select(Order)).all()) == len(generate_demo_shop().orders)
    finally:
        engine.dispose()
