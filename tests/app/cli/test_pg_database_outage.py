"""The database going away under a real ``memdesk serve --workers 2`` on PostgreSQL: every request it cannot serve
is a 503 with ``Retry-After`` (never a 500), ``/readyz`` says so, nothing a client was told is stored goes missing,
and once the database is back everything works again, the first requests after a restart included.

The PostgreSQL server here is one of its own (``tests.support.database_outage``): it is stopped and restarted for
real, with ``pg_ctl``, which no other test's server should suffer.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.support.database_outage import OutagePostgres
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.serve_process import ServeProcess, scripted_llm_settings, start_serve

ADMIN_TOKEN = "outage-admin-token-0123456789abcdef"
REPLY_PREFIX = "Scripted reply to: "
REQUEST_TIMEOUT_S = 15.0
VISITORS = 6
IDLE_RESTART_REQUESTS = 12
READERS = 4
# Messages and reads before the restart, and after it, so the burst covers the whole outage on both sides.
BURST_BEFORE_RESTART_S = 2.0
BURST_AFTER_RESTART_S = 4.0
# A turn the restart cut short is answered by turn recovery, within its interval (60 s by default).
REPLY_TIMEOUT_S = 90.0
POLL_S = 0.1
# Two workers each build the whole app: on a machine whose two cores are shared, that can take minutes.
TWO_WORKERS_START_S = 240.0
# The most a client waits when told to come back later: the test honours Retry-After up to this.
MAX_CLIENT_WAIT_S = 2.0


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OutagePostgres]:
    pytest.importorskip("pgserver")
    server = OutagePostgres.start(tmp_path_factory.mktemp("outage-pgdata"))
    yield server
    server.close()


@pytest.fixture(scope="module")
def served(database: OutagePostgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with ScriptedLLMServer() as llm:
        settings = {
            **scripted_llm_settings(llm),
            "MEMDESK_DATABASE_URL": database.url(),
            "MEMDESK_WORKERS": "2",
            "MEMDESK_ADMIN_TOKEN": ADMIN_TOKEN,
            "MEMDESK_VISITOR_MESSAGES_PER_MINUTE": "1000",
        }
        process = start_serve(tmp_path_factory.mktemp("outage-serve"), settings, timeout_s=TWO_WORKERS_START_S)
        try:
            yield process
            assert process.stop(timeout_s=20) < 20, process.log()[-4000:]
        finally:
            process.ensure_stopped()


@dataclass
class Visitor:
    url: str
    headers: dict[str, str]
    conversation: str

    @classmethod
    def start(cls, url: str) -> Visitor:
        token = httpx.post(f"{url}/api/widget/sessions", json={}, timeout=REQUEST_TIMEOUT_S).json()["token"]
        headers = {"Authorization": f"Bearer {token}"}
        response = httpx.post(f"{url}/api/widget/conversations", json={}, headers=headers, timeout=REQUEST_TIMEOUT_S)
        assert response.status_code == 201, response.text
        return cls(url, headers, response.json()["id"])

    @property
    def messages_url(self) -> str:
        return f"{self.url}/api/widget/conversations/{self.conversation}/messages"

    def post(self, text: str) -> httpx.Response:
        # A new connection each time (no client kept), so the kernel spreads the requests over both workers.
        return httpx.post(self.messages_url, json={"content": text}, headers=self.headers, timeout=REQUEST_TIMEOUT_S)

    def read(self) -> httpx.Response:
        return httpx.get(self.messages_url, headers=self.headers, timeout=REQUEST_TIMEOUT_S)


def assert_unavailable(response: httpx.Response, *, html: bool = False) -> None:
    assert response.status_code == 503, (response.status_code, response.text[:500])
    assert int(response.headers["Retry-After"]) > 0
    if html:
        assert response.headers["content-type"].startswith("text/html")
        assert "database is unavailable" in response.text
    else:
        assert "database is unavailable" in response.json()["detail"]


def test_a_stopped_database_is_a_503_with_retry_after_on_every_face_and_readyz_says_so(
    served: ServeProcess, database: OutagePostgres
) -> None:
    visitor = Visitor.start(served.url)
    assert httpx.get(f"{served.url}/readyz", timeout=REQUEST_TIMEOUT_S).status_code == 200
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    database.stop()
    try:
        assert_unavailable(visitor.post("Written while the database is down"))
        assert_unavailable(visitor.read())
        assert_unavailable(httpx.get(f"{visitor.messages_url[: -len('/messages')]}/events", headers=visitor.headers))
        assert_unavailable(httpx.get(f"{served.url}/api/widget/conversations", headers=visitor.headers))
        assert_unavailable(httpx.post(f"{served.url}/api/widget/sessions", json={}))
        assert_unavailable(httpx.get(f"{served.url}/api/admin/customers/cus_unknown/export", headers=admin))
        assert_unavailable(httpx.post(f"{served.url}/console/login", data={"email": "a@b.c"}), html=True)
        ready = httpx.get(f"{served.url}/readyz", timeout=REQUEST_TIMEOUT_S)
        assert ready.status_code == 503 and ready.json()["checks"]["database"] == "unreachable", ready.text
    finally:
        database.resume()

    assert httpx.get(f"{served.url}/readyz", timeout=REQUEST_TIMEOUT_S).status_code == 200
    assert visitor.post("Written once the database is back").status_code == 202
    customer_texts = [m["content"] for m in visitor.read().json() if m["author"] == "customer"]
    assert customer_texts == ["Written once the database is back"]  # the refused message was not stored
    assert " 500 " not in served.log() and "Internal Server Error" not in served.log()


def test_after_a_restart_while_the_workers_were_idle_their_first_requests_succeed(
    served: ServeProcess, database: OutagePostgres
) -> None:
    # Every pooled connection died with the restart; the pool must replace them before use, not fail a request on
    # each (with many more requests than pooled connections, both workers meet their dead ones).
    visitors = [Visitor.start(served.url) for _ in range(IDLE_RESTART_REQUESTS)]
    for visitor in visitors:
        assert visitor.read().status_code == 200
    database.restart()
    statuses = Counter(visitor.read().status_code for visitor in visitors for _ in range(2))
    assert statuses == Counter({200: 2 * IDLE_RESTART_REQUESTS}), statuses


@dataclass
class Tally:
    """What the clients saw during the burst (statuses by kind of request)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    missing_retry_after: int = 0
    accepted: dict[str, list[int]] = field(default_factory=dict)  # conversation -> accepted message ids

    def count(self, kind: str, response: httpx.Response) -> None:
        with self.lock:
            self.statuses[(kind, response.status_code)] += 1
            if response.status_code == 503 and "Retry-After" not in response.headers:
                self.missing_retry_after += 1

    def total(self, kind: str | None = None, status: int | None = None) -> int:
        return sum(
            n for (k, s), n in self.statuses.items() if (kind is None or k == kind) and (status is None or s == status)
        )


def honour_retry_after(response: httpx.Response) -> None:
    time.sleep(min(float(response.headers.get("Retry-After", "1")), MAX_CLIENT_WAIT_S))


def chat(visitor: Visitor, tally: Tally, stop: threading.Event) -> None:
    """Like the widget: each message is sent until the server has it (a 503 keeps it, and the list is checked before
    it is sent again), then its reply is awaited by reading the messages."""
    accepted = tally.accepted.setdefault(visitor.conversation, [])
    number = 0
    while not stop.is_set():
        number += 1
        text = f"Message {number} of {visitor.conversation}"
        while True:
            response = visitor.post(text)
            tally.count("post", response)
            if response.status_code == 202:
                accepted.append(response.json()["id"])
                break
            assert response.status_code == 503, response.text
            honour_retry_after(response)
            listed = visitor.read()
            tally.count("read", listed)
            if listed.status_code == 200 and any(m["content"] == text for m in listed.json()):
                break  # stored after all: not sent twice
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while time.monotonic() < deadline:
            listed = visitor.read()
            tally.count("read", listed)
            if listed.status_code == 200 and any(m["content"] == REPLY_PREFIX + text for m in listed.json()):
                break
            if listed.status_code == 503:
                honour_retry_after(listed)
            time.sleep(POLL_S)
        else:
            raise AssertionError(f"no reply to {text!r}")


def read_only(visitor: Visitor, tally: Tally, stop: threading.Event) -> None:
    conversations_url = f"{visitor.url}/api/widget/conversations"
    while not stop.is_set():
        response = httpx.get(conversations_url, headers=visitor.headers, timeout=REQUEST_TIMEOUT_S)
        tally.count("read", response)
        if response.status_code == 200:
            response = visitor.read()
            tally.count("read", response)
        if response.status_code == 503:
            honour_retry_after(response)


def transcript(visitor: Visitor) -> list[dict[str, Any]]:
    response = visitor.read()
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()
    return messages


def test_a_postgresql_restart_during_a_burst_of_posts_and_reads_answers_503s_not_500s_and_loses_nothing(
    served: ServeProcess, database: OutagePostgres
) -> None:
    chatting = [Visitor.start(served.url) for _ in range(VISITORS)]
    reading = [Visitor.start(served.url) for _ in range(READERS)]
    tally, stop = Tally(), threading.Event()
    with ThreadPoolExecutor(max_workers=VISITORS + READERS) as pool:
        running = [pool.submit(chat, visitor, tally, stop) for visitor in chatting]
        running += [pool.submit(read_only, visitor, tally, stop) for visitor in reading]
        time.sleep(BURST_BEFORE_RESTART_S)
        restart_s = database.restart()
        time.sleep(BURST_AFTER_RESTART_S)
        stop.set()
        for future in running:
            future.result(timeout=REPLY_TIMEOUT_S + 30)

    figures = {
        "restart_s": round(restart_s, 2),
        "posts": tally.total("post"),
        "posts_accepted": tally.total("post", 202),
        "reads": tally.total("read"),
        "responses_503": tally.total(status=503),
        "responses_500": tally.total(status=500),
        "503_without_retry_after": tally.missing_retry_after,
    }
    print(f"\nPostgreSQL restart under load (2 workers): {figures}")
    assert tally.total(status=500) == 0, tally.statuses
    assert set(status for _, status in tally.statuses) <= {200, 202, 503}, tally.statuses
    assert tally.missing_retry_after == 0
    for visitor in chatting:
        messages = transcript(visitor)
        customer = [m for m in messages if m["author"] == "customer"]
        replies = Counter(m["content"] for m in messages if m["author"] == "bot")
        texts = [m["content"] for m in customer]
        assert len(texts) == len(set(texts)), texts  # no message stored twice
        assert set(tally.accepted[visitor.conversation]) <= {m["id"] for m in customer}  # every accepted one kept
        assert all(replies[REPLY_PREFIX + text] == 1 for text in texts), (texts, replies)  # each answered once
