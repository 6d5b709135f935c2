"""Visitors see messages named by random public ids (never the integer keys, which would tell how many messages
the desk stores), in the API and the live events alike; paging after a message and resuming a stream work with
them."""

from __future__ import annotations

import re
from typing import Any

import httpx

from app.web.widget_api import MAX_PUBLIC_ID_CHARS
from tests.support.live_app import LiveApp, sse_events

MESSAGE_ID = re.compile(r"msg_[A-Za-z0-9_-]{20,36}")
READ_TIMEOUT = httpx.Timeout(10.0, read=5.0)


def _messages_path(conversation: str) -> str:
    return f"/api/widget/conversations/{conversation}/messages"


def _replied(live: LiveApp, client: httpx.Client, conversation: str, text: str, replies: int) -> dict[str, Any]:
    """Post ``text``, wait for the reply; the POST's answer."""
    posted = client.post(_messages_path(conversation), json={"content": text})
    assert posted.status_code == 202, posted.text
    live.wait_for_reply(conversation, count=replies)
    answer: dict[str, Any] = posted.json()
    return answer


def test_message_ids_are_random_public_ids_in_answers_lists_and_events(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation = live_app.conversation(client)
    posted = [_replied(live_app, client, conversation, text, n) for n, text in enumerate(("hello", "again"), 1)]
    listed = client.get(_messages_path(conversation)).json()
    with client.stream("GET", f"/api/widget/conversations/{conversation}/events", headers={"Last-Event-ID":
                       f"{live_app.services.broker.boot}:0"}, timeout=READ_TIMEOUT) as response:  # fmt: skip
        created = []
        for event in sse_events(response):
            if event["event"] == "message.created":
                created.append(event["data"])
            if len(created) == len(listed):
                break
    stored = [m for m in live_app.transcript(conversation) if m.role.value in ("user", "assistant") and m.content]
    assert [m["id"] for m in listed] == [m["id"] for m in created] == [m.public_id for m in stored]
    assert {m["id"] for m in posted} <= {m["id"] for m in listed}
    assert all(isinstance(m["id"], str) and MESSAGE_ID.fullmatch(m["id"]) for m in listed), listed
    internal = {str(m.id) for m in live_app.transcript(conversation)}
    assert not internal & {m["id"] for m in listed}


def test_paging_after_a_message_id_returns_the_later_messages_in_order(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation = live_app.conversation(client)
    for n, text in enumerate(("one", "two"), 1):
        _replied(live_app, client, conversation, text, n)
    everything = client.get(_messages_path(conversation)).json()
    assert [m["content"] for m in everything if m["author"] == "customer"] == ["one", "two"]
    for position, message in enumerate(everything):
        later = client.get(_messages_path(conversation), params={"after": message["id"]})
        assert later.status_code == 200 and later.json() == everything[position + 1 :]


def test_a_cursor_naming_no_message_of_the_conversation_is_not_found(live_app: LiveApp) -> None:
    alice, _ = live_app.visitor()
    bob, _ = live_app.visitor()
    alices, bobs = live_app.conversation(alice), live_app.conversation(bob)
    alices_message = alice.post(_messages_path(alices), json={"content": "my order"}).json()["id"]
    for cursor in (alices_message, "msg_doesNotExist00000000", "1"):
        response = bob.get(_messages_path(bobs), params={"after": cursor})
        assert response.status_code == 404 and "No message" in response.json()["detail"], response.text
    too_long = bob.get(_messages_path(bobs), params={"after": "x" * (MAX_PUBLIC_ID_CHARS + 1)})
    assert too_long.status_code == 422 and {"loc", "msg", "type"} <= set(too_long.json()["detail"][0])
    assert "my order" not in str(bob.get(_messages_path(bobs)).json())


def test_the_api_document_names_messages_by_string_ids(live_app: LiveApp) -> None:
    document = live_app.client().get("/openapi.json").json()
    assert document["components"]["schemas"]["MessagePublic"]["properties"]["id"]["type"] == "string"
    parameters = document["paths"]["/api/widget/conversations/{conversation_id}/messages"]["get"]["parameters"]
    assert {p["name"] for p in parameters} == {"conversation_id", "after"}
