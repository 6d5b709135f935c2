"""Customer isolation, identity verification and bad input on the widget API."""

from __future__ import annotations

from typing import Any

import pytest

from app.identity import VisitorTokens, shop_identity_hmac
from app.models import Conversation, ConversationStatus
from tests.support.live_app import IDENTITY_SECRET, LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings


def test_a_customer_cannot_read_post_to_or_stream_another_customers_conversation(live_app: LiveApp) -> None:
    alice, _ = live_app.visitor()
    bob, _ = live_app.visitor()
    conversation_id = live_app.conversation(alice)
    alice.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "my secret order"})

    base = f"/api/widget/conversations/{conversation_id}"
    assert bob.get(f"{base}/messages").status_code == 404
    assert bob.post(f"{base}/messages", json={"content": "hijack"}).status_code == 404
    assert bob.get(f"{base}/events").status_code == 404
    assert bob.get("/api/widget/conversations").json() == []
    missing = bob.get("/api/widget/conversations/cnv_doesNotExist000000000/messages")
    assert missing.status_code == 404 and missing.json() == bob.get(f"{base}/messages").json()
    contents = [m.content for m in live_app.transcript(conversation_id)]
    assert contents[:1] == ["my secret order"] and "hijack" not in contents


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer not-a-token"},
        {"Authorization": "Bearer cus_x.1700000000.deadbeef"},
        {"Authorization": f"Bearer {VisitorTokens('another-servers-secret').issue('cus_someone')}"},
    ],
    ids=["missing", "malformed", "bad-signature", "foreign-secret"],
)
def test_missing_or_forged_visitor_tokens_are_rejected(live_app: LiveApp, headers: dict[str, str]) -> None:
    response = live_app.client().get("/api/widget/conversations", headers=headers)
    assert response.status_code == 401
    assert "widget session" in response.json()["detail"]


def test_a_token_for_one_customer_cannot_be_edited_into_another(live_app: LiveApp) -> None:
    alice, _ = live_app.visitor()
    _, bob_id = live_app.visitor()
    token = alice.headers["Authorization"].removeprefix("Bearer ")
    _, issued, signature = token.split(".")
    forged = f"{bob_id}.{issued}.{signature}"
    response = live_app.client(forged).get("/api/widget/conversations")
    assert response.status_code == 401


def test_shop_identity_is_linked_only_with_a_valid_hmac(live_app: LiveApp) -> None:
    client = live_app.client()
    good = {"external_id": "cust-9", "identity_hmac": shop_identity_hmac(IDENTITY_SECRET, "cust-9")}
    first = client.post("/api/widget/sessions", json=good).json()
    again = client.post("/api/widget/sessions", json=good).json()
    assert first["verified"] and first["customer_id"] == again["customer_id"]
    forged = {"external_id": "cust-9", "identity_hmac": shop_identity_hmac("guessed-secret", "cust-9")}
    response = client.post("/api/widget/sessions", json=forged)
    assert response.status_code == 401 and "could not be verified" in response.json()["detail"]
    assert client.post("/api/widget/sessions", json={"external_id": "cust-9"}).status_code == 401


def test_shop_identity_is_refused_when_no_identity_secret_is_configured(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    for live in run_live_app(app_settings(tmp_path, scripted_server, widget_identity_secret=None)):
        response = live.client().post("/api/widget/sessions", json={"external_id": "x", "identity_hmac": "00"})
        assert response.status_code == 401 and "MEMDESK_WIDGET_IDENTITY_SECRET" in response.json()["detail"]


def test_bad_messages_get_clear_4xx_errors_and_nothing_is_stored(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    url = f"/api/widget/conversations/{conversation_id}/messages"
    empty = client.post(url, json={"content": "   "})
    assert empty.status_code == 422
    assert empty.json()["detail"][0]["loc"] == ["body", "content"] and "empty" in empty.json()["detail"][0]["msg"]
    too_long = client.post(url, json={"content": "x" * 8_001})
    assert too_long.status_code == 413 and "at most 8000 characters" in too_long.json()["detail"]
    assert client.post(url, content=b"{not json", headers={"Content-Type": "application/json"}).status_code == 422
    assert client.post(url, json={"text": "wrong field"}).status_code == 422
    assert live_app.transcript(conversation_id) == []


def test_closed_conversations_refuse_new_messages(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    with live_app.db() as session:
        conversation = session.get(Conversation, live_app.conversation_key(conversation_id))
        assert conversation is not None
        conversation.status = ConversationStatus.CLOSED
        session.add(conversation)
        session.commit()
    response = client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "hi"})
    assert response.status_code == 409 and "start a new one" in response.json()["detail"]


def test_visitors_are_rate_limited_per_minute(tmp_path: Any, scripted_server: ScriptedLLMServer) -> None:
    for live in run_live_app(app_settings(tmp_path, scripted_server, visitor_messages_per_minute=3)):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        url = f"/api/widget/conversations/{conversation_id}/messages"
        statuses = [client.post(url, json={"content": f"m{i}"}).status_code for i in range(4)]
        assert statuses == [202, 202, 202, 429]
        limited = client.post(url, json={"content": "again"})
        assert int(limited.headers["Retry-After"]) >= 1 and "too quickly" in limited.json()["detail"]
        other, _ = live.visitor()
        other_conversation = live.conversation(other)
        ok = other.post(f"/api/widget/conversations/{other_conversation}/messages", json={"content": "hi"})
        assert ok.status_code == 202
        live.wait_for_reply(conversation_id)


def test_the_widget_api_answers_cross_origin_requests_from_shop_pages(live_app: LiveApp) -> None:
    preflight = live_app.client().options(
        "/api/widget/sessions",
        headers={
            "Origin": "https://shop.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] in ("*", "https://shop.example")
    started = live_app.client().post("/api/widget/sessions", json={}, headers={"Origin": "https://shop.example"})
    assert started.status_code == 201 and "access-control-allow-origin" in started.headers
    assert "access-control-allow-credentials" not in started.headers
