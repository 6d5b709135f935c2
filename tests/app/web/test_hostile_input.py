"""Hostile and odd input gets a clear 4xx, never a 5xx, and nothing of it is stored.

Each case here once answered 500 (and dropped the keep-alive connection): integers past 2^63, non-ASCII tokens and
HMACs, unpaired surrogates, non-finite numbers, NUL characters.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.web.limits import MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_URL_BYTES
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

ADMIN_TOKEN = "admin-token-for-hostile-tests-0123456789"
HUGE = str(2**64)


@pytest.fixture
def live(tmp_path: Any, scripted_server: ScriptedLLMServer) -> Any:
    yield from run_live_app(app_settings(tmp_path, scripted_server, admin_token=ADMIN_TOKEN))


@pytest.fixture
def visitor(live: LiveApp) -> tuple[httpx.Client, str]:
    client, _ = live.visitor()
    return client, live.conversation(client)


def _json(client: httpx.Client, method: str, url: str, raw: str) -> httpx.Response:
    return client.request(method, url, content=raw.encode(), headers={"Content-Type": "application/json"})


def _assert_validation_error(response: httpx.Response) -> None:
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, list) and detail and {"loc", "msg", "type"} <= set(detail[0])


@pytest.mark.parametrize(
    "url",
    [
        f"/api/widget/conversations/{HUGE}/messages",
        f"/api/widget/conversations/{HUGE}/events",
        f"/api/widget/conversations/-{HUGE}/messages",
    ],
)
def test_huge_ids_in_paths_are_not_found(visitor: tuple[httpx.Client, str], url: str) -> None:
    client, _ = visitor
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("after", [HUGE, "-1", "1e3", "NaN", "msg_\u00e9"])
def test_cursors_naming_no_message_are_not_found(visitor: tuple[httpx.Client, str], after: str) -> None:
    client, conversation = visitor
    assert client.get(f"/api/widget/conversations/{conversation}/messages", params={"after": after}).status_code == 404


def test_an_oversized_cursor_is_a_validation_error(visitor: tuple[httpx.Client, str]) -> None:
    client, conversation = visitor
    _assert_validation_error(client.get(f"/api/widget/conversations/{conversation}/messages?after=msg_{'x' * 80}"))


def test_huge_ids_on_the_admin_api_are_not_found(live: LiveApp) -> None:
    admin = live.client(ADMIN_TOKEN)
    assert admin.get(f"/api/admin/customers/{HUGE}/export").status_code == 404
    assert admin.delete(f"/api/admin/customers/{HUGE}").status_code == 404


@pytest.mark.parametrize("token", ["é" * 20, "cus_ü.1700000000.ab", "ｃｕｓ_x.１７.ab"])
def test_non_ascii_tokens_are_rejected_with_401(live: LiveApp, visitor: tuple[httpx.Client, str], token: str) -> None:
    _, conversation = visitor
    as_header = {"Authorization": b"Bearer " + token.encode("utf-8")}
    assert live.client().get("/api/widget/conversations", headers=as_header).status_code == 401
    events = f"/api/widget/conversations/{conversation}/events"
    assert live.client().get(events, params={"token": token}).status_code == 401
    assert live.client().delete("/api/admin/customers/cus_x", headers=as_header).status_code == 401


def test_a_non_ascii_identity_hmac_is_rejected_with_401(live: LiveApp) -> None:
    response = live.client().post("/api/widget/sessions", json={"external_id": "cust-1", "identity_hmac": "é" * 64})
    assert response.status_code == 401


@pytest.mark.parametrize(
    "body",
    [
        '{"external_id": "cust-\\ud800", "identity_hmac": "00"}',
        '{"name": "\\udfff"}',
        '{"email": "a\\ud83d@example.com"}',
    ],
)
def test_unpaired_surrogates_in_session_fields_are_422(live: LiveApp, body: str) -> None:
    _assert_validation_error(_json(live.client(), "POST", "/api/widget/sessions", body))


def test_unpaired_surrogates_in_messages_and_titles_are_422_and_not_stored(
    live: LiveApp, visitor: tuple[httpx.Client, str]
) -> None:
    client, conversation = visitor
    _assert_validation_error(_json(client, "POST", "/api/widget/conversations", '{"title": "\\ud800"}'))
    url = f"/api/widget/conversations/{conversation}/messages"
    _assert_validation_error(_json(client, "POST", url, '{"content": "hi \\ud800 there"}'))
    assert live.transcript(conversation) == []
    ok = _json(client, "POST", url, '{"content": "a real pair \\ud83d\\ude00"}')
    assert ok.status_code == 202 and ok.json()["content"] == "a real pair 😀"


@pytest.mark.parametrize(
    "raw",
    ['{"content": NaN}', '{"content": "hi", "extra": Infinity}', '{"content": -Infinity}', '{"content": 1e999}',
     '{"content": "hi", "n": ' + "9" * 5000 + "}"],
)  # fmt: skip
def test_non_finite_and_oversized_numbers_are_422(live: LiveApp, visitor: tuple[httpx.Client, str], raw: str) -> None:
    client, conversation = visitor
    _assert_validation_error(_json(client, "POST", f"/api/widget/conversations/{conversation}/messages", raw))
    assert live.transcript(conversation) == []


def test_a_body_that_is_not_utf8_is_422(visitor: tuple[httpx.Client, str]) -> None:
    client, conversation = visitor
    response = client.post(
        f"/api/widget/conversations/{conversation}/messages",
        content=b'{"content": "\xff\xfe"}',
        headers={"Content-Type": "application/json"},
    )
    _assert_validation_error(response)


def test_nul_and_control_characters_are_stripped_from_text_and_a_message_of_only_nul_is_refused(
    live: LiveApp, visitor: tuple[httpx.Client, str], scripted_server: ScriptedLLMServer
) -> None:
    client, conversation = visitor
    url = f"/api/widget/conversations/{conversation}/messages"
    _assert_validation_error(client.post(url, json={"content": "\x00"}))
    _assert_validation_error(client.post(url, json={"content": "\x00\x07 \x1b"}))
    assert live.transcript(conversation) == [] and scripted_server.chat_requests == []
    stored = client.post(url, json={"content": "line one\r\nline\x00 two\ttabbed\x1b[31m"})
    assert stored.status_code == 202 and stored.json()["content"] == "line one\nline two\ttabbed[31m"
    titled = client.post("/api/widget/conversations", json={"title": "Help\x00 me"})
    assert titled.status_code == 201 and titled.json()["title"] == "Help me"
    named = live.client().post("/api/widget/sessions", json={"name": "Ja\x00ne"})
    assert named.status_code == 201 and live.customer(named.json()["customer_id"]).name == "Jane"
    refused = live.client().post("/api/widget/sessions", json={"external_id": "cust\x00-1", "identity_hmac": "00"})
    _assert_validation_error(refused)


def test_the_keep_alive_connection_survives_hostile_requests(visitor: tuple[httpx.Client, str]) -> None:
    client, conversation = visitor
    url = f"/api/widget/conversations/{conversation}/messages"
    with httpx.Client(base_url=str(client.base_url), headers=client.headers, timeout=10) as one_connection:
        ports = set()
        for raw in ('{"content": NaN}', '{"content": "\\ud800"}', '{"content": "\\u0000"}'):
            response = _json(one_connection, "POST", url, raw)
            assert response.status_code == 422
            ports.add(response.extensions["network_stream"].get_extra_info("client_addr"))
        assert len(ports) == 1, "every answer came on the same kept-alive connection"


def test_request_size_limits_answer_414_431_and_413(live: LiveApp, visitor: tuple[httpx.Client, str]) -> None:
    client, conversation = visitor
    assert client.get("/api/widget/conversations", params={"q": "x" * MAX_URL_BYTES}).status_code == 414
    assert client.get("/api/widget/conversations", headers={"X-Big": "x" * MAX_HEADER_BYTES}).status_code == 431
    many = {f"X-H{i}": "1" for i in range(120)}
    assert client.get("/api/widget/conversations", headers=many).status_code == 431
    big = '{"content": "' + "x" * MAX_BODY_BYTES + '"}'
    assert _json(client, "POST", f"/api/widget/conversations/{conversation}/messages", big).status_code == 413

    def chunks() -> Any:
        yield b'{"content": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 1):
            yield b"x" * 1024
        yield b'"}'

    chunked = client.post(
        f"/api/widget/conversations/{conversation}/messages",
        content=chunks(),
        headers={"Content-Type": "application/json"},
    )
    assert chunked.status_code == 413
    assert live.transcript(conversation) == []


def test_options_lists_every_method_of_a_path_and_405_says_which_are_allowed(live: LiveApp) -> None:
    client = live.client()
    options = client.options("/api/widget/conversations")
    assert options.status_code == 204 and options.headers["allow"] == "GET, OPTIONS, POST"
    assert client.options("/api/nowhere").status_code == 404
    wrong = client.put("/api/widget/conversations", json={})
    assert wrong.status_code == 405 and wrong.headers["allow"] == "GET, OPTIONS, POST"
