"""Two real ``memdesk serve`` processes on one PostgreSQL database, as behind a load balancer: a visitor's requests
land on either, and what they see must not depend on which."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.live_app import sse_events
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.serve_process import ServeProcess, scripted_llm_settings, start_serve

MESSAGES_PER_MINUTE = 3
STREAM_TIMEOUT_S = 20.0
ANSWER_PREFIX = "Answer to: "
# Slow enough between streamed chunks that the reply goes out as several live deltas.
CHUNK_DELAY_S = 0.06


def streamed_answer(request: RecordedRequest) -> ScriptedReply:
    text = f"{ANSWER_PREFIX}{request.last_user_text}. Anything else I can help with today?"
    return ScriptedReply(text=text, chunk_delay_s=CHUNK_DELAY_S)


@dataclass
class Workers:
    first: ServeProcess
    second: ServeProcess


@pytest.fixture(scope="module")
def workers(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    name = f"memdesk_{uuid.uuid4().hex[:12]}"
    postgres_server.psql(f"CREATE DATABASE {name};")
    socket_dir = postgres_server.get_uri().split("host=")[-1]
    with ScriptedLLMServer(rule=streamed_answer) as llm, ExitStack() as stack:
        settings = {
            **scripted_llm_settings(llm),
            "MEMDESK_DATABASE_URL": f"postgresql+psycopg://postgres:@/{name}?host={socket_dir}",
            "MEMDESK_VISITOR_MESSAGES_PER_MINUTE": str(MESSAGES_PER_MINUTE),
        }
        served = []
        for label in ("a", "b"):  # one after the other: the first one migrates the database
            process = start_serve(tmp_path_factory.mktemp(f"worker-{label}"), settings)
            stack.callback(process.ensure_stopped)
            served.append(process)
        yield Workers(*served)
        for process in served:
            assert process.stop(timeout_s=15) < 15, process.log()[-4000:]


def visitor(worker: ServeProcess) -> tuple[dict[str, str], str]:
    """A widget session started on ``worker``: its authorization header and a new conversation's public id."""
    token = httpx.post(f"{worker.url}/api/widget/sessions", json={}).json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    response = httpx.post(f"{worker.url}/api/widget/conversations", json={}, headers=headers)
    assert response.status_code == 201, response.text
    return headers, response.json()["id"]


def post(worker: ServeProcess, headers: dict[str, str], conversation: str, text: str) -> httpx.Response:
    url = f"{worker.url}/api/widget/conversations/{conversation}/messages"
    return httpx.post(url, json={"content": text}, headers=headers, timeout=10.0)


def is_turn_end(event: dict[str, Any]) -> bool:
    return event["event"] == "typing" and event["data"] == {"on": False}


def stream_until(
    worker: ServeProcess,
    headers: dict[str, str],
    conversation: str,
    *,
    last_event_id: str | None = None,
    then: Callable[[], None],
) -> list[dict[str, Any]]:
    """Open the conversation's event stream on ``worker``, run ``then`` once it is open, and collect its events up
    to the end of the next turn; the stream is then closed (the client disconnects)."""
    stream_headers = {**headers, **({"Last-Event-ID": last_event_id} if last_event_id else {})}
    url = f"{worker.url}/api/widget/conversations/{conversation}/events"
    # The pool is left last: the stream is closed first, which ends a reader still waiting for events.
    with (
        ThreadPoolExecutor(max_workers=1) as pool,
        httpx.Client(timeout=STREAM_TIMEOUT_S) as client,
        client.stream("GET", url, headers=stream_headers) as response,
    ):
        assert response.status_code == 200

        def collect() -> list[dict[str, Any]]:
            events = []
            for event in sse_events(response):
                events.append(event)
                if is_turn_end(event):
                    return events
            return events

        collected: Future[list[dict[str, Any]]] = pool.submit(collect)  # the stream is subscribed once it answered
        then()
        return collected.result(timeout=STREAM_TIMEOUT_S)


def sequence(event: dict[str, Any]) -> int:
    prefix, _, number = str(event["id"]).partition(":")
    assert prefix == "pg", event
    return int(number)


def assert_one_whole_turn(events: list[dict[str, Any]], customer_text: str) -> None:
    """The events of one turn, each once and in order: the customer's message, typing, the streamed reply (the part
    streamed before the reply was complete), the stored reply, typing off."""
    numbers = [sequence(event) for event in events]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), numbers  # no gap, no repeat
    kinds = [event["event"] for event in events]
    deltas = [event["data"]["text"] for event in events if event["event"] == "message.delta"]
    assert kinds == ["message.created", "typing", *["message.delta"] * len(deltas), "message.created", "typing"]
    assert deltas
    customer, reply = events[0]["data"], events[-2]["data"]
    assert (customer["author"], customer["content"]) == ("customer", customer_text)
    assert reply["author"] == "bot" and reply["content"].startswith(ANSWER_PREFIX + customer_text)
    assert reply["content"].startswith("".join(deltas))


def test_a_reply_to_a_message_posted_on_one_worker_streams_from_another_and_resumes_on_either(
    workers: Workers,
) -> None:
    headers, conversation = visitor(workers.first)

    first_turn = stream_until(
        workers.second,
        headers,
        conversation,
        then=lambda: post(workers.first, headers, conversation, "Where is my order?").raise_for_status(),
    )
    assert_one_whole_turn(first_turn, "Where is my order?")

    # Disconnected: the next turn happens while no stream is open, on the second worker this time.
    post(workers.second, headers, conversation, "Can I change the address?").raise_for_status()
    messages_url = f"{workers.first.url}/api/widget/conversations/{conversation}/messages"

    def answered() -> bool:
        messages = httpx.get(messages_url, headers=headers).json()
        return sum(message["author"] == "bot" for message in messages) == 2

    wait_until(answered)
    second_turn = stream_until(
        workers.first, headers, conversation, last_event_id=first_turn[-1]["id"], then=lambda: None
    )
    assert sequence(second_turn[0]) == sequence(first_turn[-1]) + 1
    assert_one_whole_turn(second_turn, "Can I change the address?")


def test_the_visitor_rate_limit_holds_across_both_workers(workers: Workers) -> None:
    headers, conversation = visitor(workers.first)
    order = [workers.first, workers.second, workers.first]
    statuses = [post(worker, headers, conversation, f"message {n}").status_code for n, worker in enumerate(order)]
    assert statuses == [202] * MESSAGES_PER_MINUTE
    for worker in (workers.second, workers.first):
        refused = post(worker, headers, conversation, "one too many")
        assert refused.status_code == 429, refused.text
        assert 0 < int(refused.headers["Retry-After"]) <= 60
    other_headers, other_conversation = visitor(workers.second)
    assert post(workers.second, other_headers, other_conversation, "hello").status_code == 202


def wait_until(condition: Callable[[], bool], *, timeout_s: float = STREAM_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the second reply")
        time.sleep(0.05)
