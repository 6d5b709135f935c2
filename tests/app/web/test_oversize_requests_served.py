"""Requests far past the size limits get a readable 431, 414 or 413 from a real ``memdesk serve``, over real
sockets, from a client that sends everything before it reads (as curl and httpx do); the server stays up and
stores nothing. A body announced past ``MAX_BODY_BYTES + OVERSIZE_DRAIN_BYTES`` is where it stops listening: it is
answered at once, and the connection closed."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11
import pytest
from sqlalchemy import text

from app.db import create_db_engine
from app.web.limits import MAX_BODY_BYTES, OVERSIZE_DRAIN_BYTES
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.serve_process import ServeProcess, scripted_llm_settings, start_serve

MIB = 1024 * 1024
SOCKET_TIMEOUT_S = 30.0
SESSIONS = "/api/widget/sessions"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with ScriptedLLMServer() as llm:
        process = start_serve(tmp_path_factory.mktemp("oversize"), scripted_llm_settings(llm))
        try:
            yield process
        finally:
            process.stop(timeout_s=30)


def _exchange(served: ServeProcess, *parts: bytes) -> Answer:
    """Send ``parts`` whole, then read one response (parsed by h11, as a client)."""
    address = urlsplit(served.url)
    with socket.create_connection((address.hostname, address.port), timeout=SOCKET_TIMEOUT_S) as connection:
        for part in parts:
            connection.sendall(part)
        reader = h11.Connection(h11.CLIENT)
        reader.send(h11.Request(method="GET", target="/", headers=[("Host", "memdesk")]))  # what it answers
        reader.send(h11.EndOfMessage())
        response: h11.Response | None = None
        body = b""
        while True:
            event = reader.next_event()
            if event is h11.NEED_DATA:
                reader.receive_data(connection.recv(65_536))
            elif isinstance(event, h11.Response):
                response = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                break
    assert response is not None
    headers = {name.decode(): value.decode() for name, value in response.headers}
    return Answer(response.status_code, headers, json.loads(body))


def _post(length_header: bytes, *extra_headers: bytes) -> bytes:
    lines = [b"POST " + SESSIONS.encode() + b" HTTP/1.1", b"Host: memdesk", b"Content-Type: application/json",
             length_header, *extra_headers]  # fmt: skip
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _customers(served: ServeProcess) -> int:
    engine = create_db_engine(f"sqlite:///{served.log_path.parent / 'data' / 'memdesk.db'}")
    try:
        with engine.connect() as connection:
            return int(connection.execute(text("SELECT count(*) FROM customers")).scalar_one())
    finally:
        engine.dispose()


def test_a_one_megabyte_header_is_answered_431(served: ServeProcess) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: memdesk\r\nX-Big: " + b"x" * MIB + b"\r\n\r\n"
    answer = _exchange(served, head)
    assert answer.status == 431 and "headers are too large" in answer.body["detail"]


def test_a_one_megabyte_query_string_is_answered_414(served: ServeProcess) -> None:
    answer = _exchange(served, b"GET /healthz?q=" + b"x" * MIB + b" HTTP/1.1\r\nHost: memdesk\r\n\r\n")
    assert answer.status == 414 and "URL is longer" in answer.body["detail"]


@pytest.mark.parametrize("connection_header", [b"Connection: keep-alive", b"Connection: close"])
def test_a_ten_megabyte_body_is_answered_413_and_nothing_is_stored(
    served: ServeProcess, connection_header: bytes
) -> None:
    body = b'{"name": "' + b"x" * (10 * MIB) + b'"}'
    answer = _exchange(served, _post(b"Content-Length: %d" % len(body), connection_header), body)
    assert answer.status == 413 and f"larger than {MAX_BODY_BYTES} bytes" in answer.body["detail"]
    assert _customers(served) == 0
    assert _exchange(served, b"GET /healthz HTTP/1.1\r\nHost: memdesk\r\n\r\n").status == 200


def test_a_ten_megabyte_chunked_body_is_answered_413(served: ServeProcess) -> None:
    chunk = b"x" * 65_536
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(10 * MIB // len(chunk)))
    answer = _exchange(served, _post(b"Transfer-Encoding: chunked"), b'a\r\n{"name": "\r\n', chunks, b"0\r\n\r\n")
    assert answer.status == 413 and _customers(served) == 0


def test_a_body_announced_past_the_drain_bound_is_answered_at_once_and_the_connection_closed(
    served: ServeProcess,
) -> None:
    announced = MAX_BODY_BYTES + OVERSIZE_DRAIN_BYTES + 1
    answer = _exchange(served, _post(b"Content-Length: %d" % announced))  # the body is never sent
    assert answer.status == 413 and answer.headers["connection"] == "close"
