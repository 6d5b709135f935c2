"""The widget's files, the demo shop page, staff names on widget messages, and SQLite transactions in widget routes.

The widget's behaviour in a browser is tested in ``tests/e2e``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from sqlmodel import Session
from starlette.requests import HTTPConnection

from app.db import get_session
from app.identity import shop_identity_hmac
from app.live.messages import message_event
from app.models import Conversation, Message, MessageAuthor, MessageRole, StaffMember
from app.web.widget_pages import STATIC_DIR
from tests.support.live_app import IDENTITY_SECRET, LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

# Ways of turning text into markup or code; the widget builds DOM nodes instead.
FORBIDDEN_IN_WIDGET = ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function")
SETTINGS_PATTERN = re.compile(r"window\.memdeskSettings = (.*?);</script>")


def widget_settings(html: str) -> dict[str, Any]:
    found = SETTINGS_PATTERN.search(html)
    assert found is not None, "the demo page sets no window.memdeskSettings"
    settings: dict[str, Any] = json.loads(found.group(1))
    return settings


def test_the_widget_script_and_stylesheet_are_served_with_their_types(live_app: LiveApp) -> None:
    client = live_app.client()
    script = client.get("/widget.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert script.headers["x-content-type-options"] == "nosniff"
    assert "max-age=" in script.headers["cache-control"]
    assert "attachShadow" in script.text
    stylesheet = client.get("/widget.css")
    assert stylesheet.status_code == 200 and stylesheet.headers["content-type"].startswith("text/css")


@pytest.mark.parametrize("construct", FORBIDDEN_IN_WIDGET)
def test_the_widget_never_turns_text_into_markup_or_code(construct: str) -> None:
    assert construct not in (STATIC_DIR / "widget.js").read_text(encoding="utf-8")


def test_the_demo_page_embeds_the_widget_with_one_script_tag(live_app: LiveApp) -> None:
    response = live_app.client().get("/demo")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    html = response.text
    tags = re.findall(r"<script src=\"([^\"]+)\" data-memdesk-site=\"([^\"]+)\" async></script>", html)
    assert tags == [(f"{live_app.url}/widget.js", "memdesk-demo")]
    settings = widget_settings(html)
    assert "customerId" not in settings and settings["locale"] == "en"
    assert "What to try: sign in as Maya Thompson and ask about one of her orders" in " ".join(html.split())


def test_a_demo_customer_gets_the_hash_the_shop_server_computes_and_never_the_secret(live_app: LiveApp) -> None:
    html = live_app.client().get("/demo", params={"customer": "demo-cust-0001", "lang": "de"}).text
    settings = widget_settings(html)
    assert settings["customerId"] == "demo-cust-0001"
    assert settings["customerHash"] == shop_identity_hmac(IDENTITY_SECRET, "demo-cust-0001")
    assert settings["locale"] == "de"
    assert IDENTITY_SECRET not in html
    assert "memdesk seed-demo" in html  # the test database is not seeded: the page says how to load the customer


def test_without_an_identity_secret_the_demo_says_why_the_customer_will_be_refused(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    for live in run_live_app(app_settings(tmp_path, scripted_server, widget_identity_secret=None)):
        html = live.client().get("/demo", params={"customer": "demo-cust-0002"}).text
        assert widget_settings(html)["customerHash"] is None
        assert "MEMDESK_WIDGET_IDENTITY_SECRET is not set" in html


@pytest.mark.parametrize("customer", ["<script>alert(1)</script>", "real-customer-42", "demo-cust-1", ""])
def test_the_demo_vouches_only_for_demo_customer_ids(live_app: LiveApp, customer: str) -> None:
    assert live_app.client().get("/demo", params={"customer": customer}).status_code == 422


def test_in_production_the_demo_vouches_for_nobody(tmp_path: Any, scripted_server: ScriptedLLMServer) -> None:
    for live in run_live_app(app_settings(tmp_path, scripted_server, environment="production")):
        client = live.client()
        refused = client.get("/demo", params={"customer": "demo-cust-0001"})
        assert refused.status_code == 403 and "only outside production" in refused.json()["detail"]
        guest = client.get("/demo")
        assert guest.status_code == 200 and "customer=demo-cust" not in guest.text
        assert "customerHash" not in widget_settings(guest.text)


def test_without_the_demo_shop_there_is_no_demo_page_and_the_front_door_leads_nowhere_else(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    settings = app_settings(tmp_path, scripted_server, environment="development", demo_shop=False)
    for live in run_live_app(settings):
        client = live.client()
        assert client.get("/demo").status_code == 404
        assert client.get("/demo", params={"customer": "demo-cust-0001"}).status_code == 404
        front = client.get("/", follow_redirects=False)
        assert front.status_code == 200 and "memdesk is running" in front.text
        assert client.get("/widget.js").status_code == 200


def test_the_demo_page_escapes_what_it_shows_and_what_it_hands_to_the_widget(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    shop_name = '</script><script>alert("shop")</script><b>'
    for live in run_live_app(app_settings(tmp_path, scripted_server, shop_name=shop_name)):
        html = live.client().get("/demo").text
        assert "<script>alert(" not in html and "<b>" not in html
        assert widget_settings(html)["title"] == f"{shop_name} support"


def test_staff_messages_carry_the_staff_members_name_and_private_notes_stay_hidden(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    key = live_app.conversation_key(conversation_id)
    with live_app.db() as session:
        member = StaffMember(email="sam@example.com", name="Sam Rivera", password_hash="not-used")
        session.add(member)
        session.flush()
        reply = Message(conversation_id=key, role=MessageRole.ASSISTANT, author=MessageAuthor.STAFF,
                        staff_id=member.id, content="Hi, Sam here.")  # fmt: skip
        note = Message(conversation_id=key, role=MessageRole.ASSISTANT, author=MessageAuthor.STAFF,
                       staff_id=member.id, private=True, content="Internal: check the refund")  # fmt: skip
        session.add_all([reply, note])
        session.commit()
        conversation = session.get(Conversation, key)
        assert conversation is not None
        assert message_event(reply, conversation, staff_name="Sam Rivera")["staff_name"] == "Sam Rivera"
        assert message_event(reply, conversation)["staff_name"] is None

    messages = client.get(f"/api/widget/conversations/{conversation_id}/messages").json()
    assert [(m["author"], m["content"], m["staff_name"]) for m in messages] == [
        ("staff", "Hi, Sam here.", "Sam Rivera")
    ]


@pytest.fixture
def open_transactions(live_app: LiveApp) -> Iterator[list[str]]:
    """Paths whose handler returned with its database transaction still open."""
    left_open: list[str] = []

    def checking_session(connection: HTTPConnection) -> Iterator[Session]:
        with Session(live_app.services.db, expire_on_commit=False) as session:
            try:
                yield session
            finally:  # also when the handler raised (a 404 is an exception thrown in here)
                if session.in_transaction():
                    left_open.append(connection.url.path)

    live_app.app.dependency_overrides[get_session] = checking_session
    yield left_open
    live_app.app.dependency_overrides.pop(get_session)


def test_widget_routes_end_their_transaction_before_the_response(
    live_app: LiveApp, open_transactions: list[str]
) -> None:
    # On SQLite a transaction holds the write lock; one left for the session's teardown (which needs the event
    # loop) would stall a turn that waits for that lock on the event loop, until the busy timeout fails it.
    client, _ = live_app.visitor()
    live_app.visitor("demo-cust-0009")
    live_app.visitor("demo-cust-0009")
    conversation_id = live_app.conversation(client)
    other, _ = live_app.visitor()
    assert client.get("/api/widget/conversations").status_code == 200
    assert client.get(f"/api/widget/conversations/{conversation_id}/messages").status_code == 200
    assert other.get(f"/api/widget/conversations/{conversation_id}/messages").status_code == 404
    assert live_app.client().get("/demo", params={"customer": "demo-cust-0009"}).status_code == 200
    assert open_transactions == []
