"""An erased customer leaves nothing behind that the next customer could receive, on SQLite and on PostgreSQL.

The sequence that once leaked: erase customer Z through the admin API, then a new visitor Y arrives. Y must not get
Z's ids, Z's old visitor token must read nothing (neither Z's old conversation nor Y's), and Y's event stream, even
replayed from its very first event id, must hold nothing of Z's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.live_app import LiveApp, run_live_app, sse_events
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

ADMIN_TOKEN = "admin-token-for-erasure-tests-0123456789"
Z_SECRET = "my card ends in 4242 and I live at 9 Elm Row"


@pytest.fixture(params=["sqlite", "postgresql"])
def live(request: pytest.FixtureRequest, tmp_path: Any, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    database_url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    settings = app_settings(tmp_path, scripted_server, admin_token=ADMIN_TOKEN, database_url=database_url)
    yield from run_live_app(settings)


def _events_url(conversation_id: str) -> str:
    return f"/api/widget/conversations/{conversation_id}/events"


def _listen_until_closed(live: LiveApp, token: str, conversation_id: str, opened: threading.Event) -> None:
    with live.client(token).stream("GET", _events_url(conversation_id), timeout=30) as response:
        opened.set()
        for _ in response.iter_lines():
            pass


def test_an_erased_customer_leaves_nothing_for_the_next_visitor(live: LiveApp) -> None:
    z, z_ref = live.visitor()
    z_conversation = live.conversation(z)
    z.post(f"/api/widget/conversations/{z_conversation}/messages", json={"content": Z_SECRET})
    live.wait_for_reply(z_conversation)
    z_customer_key, z_conversation_key = live.customer(z_ref).id, live.conversation_key(z_conversation)
    assert z_customer_key is not None and z_conversation_key is not None

    z_token = z.headers["Authorization"].removeprefix("Bearer ")
    opened = threading.Event()
    z_stream = threading.Thread(target=_listen_until_closed, args=(live, z_token, z_conversation, opened))
    z_stream.start()
    assert opened.wait(5)

    erased = live.client(ADMIN_TOKEN).delete(f"/api/admin/customers/{z_ref}")
    assert erased.status_code == 200 and erased.json()["erased"]["messages"] == 2
    z_stream.join(5)
    assert not z_stream.is_alive(), "erasure ends the erased customer's open event stream"

    y, y_ref = live.visitor()
    y_conversation = live.conversation(y)
    assert (y_ref, y_conversation) != (z_ref, z_conversation)
    y_customer_key, y_conversation_key = live.customer(y_ref).id, live.conversation_key(y_conversation)
    assert y_customer_key is not None and y_conversation_key is not None
    assert y_customer_key > z_customer_key and y_conversation_key > z_conversation_key, "ids are never reused"

    for url in ("/api/widget/conversations", f"/api/widget/conversations/{y_conversation}/messages",
                f"/api/widget/conversations/{z_conversation}/messages", _events_url(y_conversation)):  # fmt: skip
        assert z.get(url).status_code == 401, url

    y.post(f"/api/widget/conversations/{y_conversation}/messages", json={"content": "hello, I am Y"})
    live.wait_for_reply(y_conversation)
    replayed = _replay_from_the_start(live, y, y_conversation)
    assert next(e["data"]["content"] for e in replayed if e["event"] == "message.created") == "hello, I am Y"
    assert all("4242" not in str(event) for event in replayed)
    assert all(e["data"]["conversation_id"] == y_conversation for e in replayed if e["event"] == "message.created")
    assert "4242" not in str(y.get(f"/api/widget/conversations/{y_conversation}/messages").json())


def _replay_from_the_start(live: LiveApp, client: Any, conversation_id: str) -> list[dict[str, Any]]:
    """Every event the stream replays for ``Last-Event-ID: <boot>:0``, up to the end of the last turn."""
    headers = {"Last-Event-ID": f"{live.services.broker.boot}:0"}
    received: list[dict[str, Any]] = []
    with client.stream("GET", _events_url(conversation_id), headers=headers, timeout=10) as response:
        for event in sse_events(response):
            received.append(event)
            if event["event"] == "typing" and event["data"] == {"on": False}:
                break
    return received
