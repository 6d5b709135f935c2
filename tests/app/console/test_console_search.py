"""Staff search across conversations: an order or tracking number, an email or shop id finds the customer's
conversations first, then names and the transcript's words (every word required), with matches marked; private
notes, other rows and erased customers are never found, and a hostile query is plain text; on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from app.console.search import search
from app.db import create_db_engine, upgrade
from app.models import Customer, Message, MessageAuthor, MessageRole, Order, Shipment, StaffRole
from app.privacy import erase_customer
from app.tools.conversation_search import CLOSE_MARK, OPEN_MARK
from tests.support.console_support import console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.rows import add_customer_conversation
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    sqlite = request.param == "sqlite"
    url = f"sqlite:///{tmp_path / 'search.db'}" if sqlite else request.getfixturevalue("postgres_url")
    db_engine = create_db_engine(url)
    upgrade(db_engine)
    yield db_engine
    db_engine.dispose()


def _say(session: Session, conversation_id: int, text: str, **extra: object) -> None:
    role = extra.pop("role", MessageRole.USER)
    author = extra.pop("author", MessageAuthor.CUSTOMER)
    session.add(Message(conversation_id=conversation_id, role=role, author=author, content=text, **extra))


def _seed(session: Session) -> dict[str, int]:
    jane, jane_chat = add_customer_conversation(session, "Jane Doe", email="Jane@Example.com", external_id="shop-1")
    _say(session, jane_chat, "My kettle arrived with a broken lid")
    order = Order(number="#W2378156", customer_id=jane, total_cents=4210, shipping_name="Jane Doe",
                  shipping_line1="1 Main St", shipping_city="Springfield", shipping_postal_code="12345",
                  shipping_country="US")  # fmt: skip
    session.add(order)
    session.flush()
    assert order.id is not None
    session.add(Shipment(order_id=order.id, carrier="UPS", tracking_number="1Z999AA10123456784"))
    _, omar_chat = add_customer_conversation(session, "Omar Haddad")
    _say(session, omar_chat, "The kettle is fine but the lid of the teapot cracked")
    _say(session, omar_chat, "secret-refund-code", role=MessageRole.ASSISTANT, author=MessageAuthor.STAFF, private=True)
    session.commit()
    return {"jane": jane_chat, "omar": omar_chat}


def _found(session: Session, query: str) -> list[tuple[str, str]]:
    return [(result.customer, result.reason) for result in search(session, query)]


def test_identifiers_find_the_customers_conversations_first(engine: Engine) -> None:
    with Session(engine) as session:
        _seed(session)
        assert _found(session, "#W2378156") == [("Jane Doe", "order #W2378156")]
        assert _found(session, "W2378156") == [("Jane Doe", "order #W2378156")]
        assert _found(session, "1Z999AA10123456784") == [("Jane Doe", "tracking number 1Z999AA10123456784")]
        assert _found(session, "jane@example.com") == [("Jane Doe", "customer email")]
        assert _found(session, "shop-1") == [("Jane Doe", "shop customer id")]
        assert _found(session, "haddad") == [("Omar Haddad", "customer name")]


def test_words_find_conversations_holding_all_of_them_with_the_matches_marked(engine: Engine) -> None:
    with Session(engine) as session:
        _seed(session)
        both = search(session, "kettle lid")
        assert {result.customer for result in both} == {"Jane Doe", "Omar Haddad"}
        assert [r.customer for r in search(session, "teapot kettle")] == ["Omar Haddad"]
        [teapot] = search(session, "teapot")
        assert f"{OPEN_MARK}teapot{CLOSE_MARK}" in teapot.snippet and teapot.reason == ""
        assert search(session, "secret-refund-code") == []  # a private note is not searched
        for hostile in ('"', "kettle OR lid*", "NEAR(kettle lid)", "lid) OR (1=1", "\x00\ud800", "%_", "   "):
            search(session, hostile)  # no syntax reaches the database
        assert search(session, "kettle OR nothing-like-it") == []  # OR is a word, and every word is required


def test_an_erased_customer_is_found_by_nothing(engine: Engine) -> None:
    with Session(engine) as session:
        _seed(session)
        jane = session.get(Customer, 1)
        assert jane is not None
        erase_customer(session, None, jane, actor="test")
        session.commit()
        for query in ("#W2378156", "1Z999AA10123456784", "jane@example.com", "Jane", "broken lid"):
            assert all(result.customer != "Jane Doe" for result in search(session, query)), query


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def test_the_search_page_shows_results_escaped_and_needs_a_staff_member(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue("Sorry to hear that.")
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    hostile = "<img src=x onerror=alert(1)> kettle arrived dented"
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": hostile})
    console.wait_for_reply(conversation)
    agent = signed_in(console, StaffRole.AGENT)
    page = agent.get("/console/search", params={"q": "dented kettle"}).text
    assert f'href="/console/conversations/{conversation}"' in page
    assert "<mark>dented</mark>" in page and "<mark>kettle</mark>" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "1 conversation found" in page
    assert 'id="console-search"' in agent.get("/console/overview").text  # the box on every page
    assert agent.get("/console/search", params={"q": "x" * 201}).status_code == 400
    assert console.client().get("/console/search", params={"q": "kettle"}, follow_redirects=False).status_code in (
        303,
        401,
    )
