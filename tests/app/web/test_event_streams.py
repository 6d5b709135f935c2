"""The widget's live event stream over real HTTP: what EventSource needs of it, resuming after a lost connection,
and that a stream's end, whoever ends it, releases what the server held for it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx

from tests.support.live_app import LiveApp, run_live_app, sse_events
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

READ_TIMEOUT = httpx.Timeout(10.0, read=5.0)


def _events_path(conversation: str) -> str:
    return f"/api/widget/conversations/{conversation}/events"


def _open_streams(live: LiveApp) -> float:
    """The ``memdesk_sse_connections`` gauge, as Prometheus scrapes it."""
    (line,) = [line for line in live.client().get("/metrics").text.splitlines() if line.startswith("memdesk_sse_")]
    return float(line.split()[-1])


def _until_reply(events: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events up to the assistant's stored reply."""
    seen = []
    for event in events:
        seen.append(event)
        if event["event"] == "message.created" and event["data"]["role"] == "assistant":
            return seen
    raise AssertionError(f"the stream ended before the reply: {seen}")


def test_eventsource_gets_an_unbuffered_uncached_stream_with_its_token_in_the_url(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation = live_app.conversation(client)
    token = client.headers["Authorization"].removeprefix("Bearer ")
    with live_app.client().stream("GET", _events_path(conversation), params={"token": token}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        assert next(response.iter_bytes()) == b"retry: 2000\n\n"  # how long EventSource waits to reconnect


def test_a_reconnecting_client_gets_exactly_the_events_after_its_last_event_id(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation = live_app.conversation(client)
    client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "hello"})
    live_app.wait_for_reply(conversation)
    boot = live_app.services.broker.boot
    after_the_question = {"Last-Event-ID": f"{boot}:1"}
    with client.stream("GET", _events_path(conversation), headers=after_the_question, timeout=READ_TIMEOUT) as response:
        resumed = _until_reply(sse_events(response))
    assert [event["id"] for event in resumed] == [f"{boot}:{n}" for n in range(2, len(resumed) + 2)]
    assert resumed[0]["event"] == "typing" and resumed[-1]["data"]["content"]


def test_an_id_the_server_cannot_resume_from_gets_one_resync_event(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation = live_app.conversation(client)
    stale = {"Last-Event-ID": "0badc0de:7"}  # from a server process that is gone
    with client.stream("GET", _events_path(conversation), headers=stale, timeout=READ_TIMEOUT) as response:
        first = next(sse_events(response))
    assert first["event"] == "resync" and "reload" in first["data"]["reason"]


def test_a_client_that_goes_away_ends_its_subscription_and_is_no_longer_counted(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation = live_app.conversation(client)
    key = live_app.conversation_key(conversation)
    assert key is not None
    broker = live_app.services.broker
    with client.stream("GET", _events_path(conversation)) as response:
        chunks = response.iter_bytes()  # kept: a dropped iterator closes the response
        next(chunks)
        assert broker.subscriber_count(key) == 1 and _open_streams(live_app) == 1
    live_app.wait_for(lambda: broker.subscriber_count(key) == 0, what="the subscription to end")
    live_app.wait_for(lambda: _open_streams(live_app) == 0, what="the gauge to go down")


def test_stopping_the_server_ends_open_streams_and_their_subscriptions(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    server = run_live_app(app_settings(tmp_path, scripted_server))
    live = next(server)
    client, _ = live.visitor()
    conversation = live.conversation(client)
    key = live.conversation_key(conversation)
    assert key is not None
    opened, ended = threading.Event(), threading.Event()
    # Not one of the app's clients, which it closes before it stops: only the server may end this stream.
    reader_client = httpx.Client(base_url=live.url, headers=client.headers, timeout=httpx.Timeout(60.0))

    def read_until_the_end() -> None:
        try:
            with reader_client.stream("GET", _events_path(conversation)) as response:
                opened.set()
                for _ in response.iter_bytes():
                    pass
        except httpx.TransportError:
            pass  # the server closed the connection under it
        ended.set()

    reader = threading.Thread(target=read_until_the_end, daemon=True)
    reader.start()
    assert opened.wait(10.0)
    for _ in server:  # the rest of the generator: uvicorn's graceful shutdown, then the lifespan's
        pass
    reader.join(10.0)
    reader_client.close()
    assert ended.is_set(), "a stream outlived the server"
    assert live.services.broker.subscriber_count(key) == 0
