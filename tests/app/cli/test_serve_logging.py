"""``memdesk serve`` logs through one configuration: uvicorn's lines and memdesk's in ``MEMDESK_LOG_FORMAT`` at
``MEMDESK_LOG_LEVEL``, with no token or secret, compaction traces at INFO. A real server process, a real widget
session, the scripted LLM."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.serve_process import ServeProcess, start_serve
from tests.support.settings import CHAT_MODEL, SUMMARY_MODEL, TEST_API_KEY

SUMMARY = """## Customer Goal
- Sort out a late delivery.
## Key Decisions
- Replacement approved.
"""
REPLY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
MESSAGES = 10  # at a 2,048-token window the conversation compacts within these


def _answer(request: RecordedRequest) -> ScriptedReply:
    if request.model == SUMMARY_MODEL:
        return ScriptedReply(text=SUMMARY)
    return ScriptedReply(text="Noted, thank you. " + "I have recorded the details. " * 8)


def _server_settings(server: ScriptedLLMServer, **overrides: str) -> dict[str, str]:
    return {
        "MEMDESK_LLM_BASE_URL": server.base_url,
        "MEMDESK_LLM_API_KEY": TEST_API_KEY,
        "MEMDESK_CHAT_MODEL": CHAT_MODEL,
        "MEMDESK_SUMMARY_MODEL_OVERRIDE": SUMMARY_MODEL,
        "MEMDESK_CONTEXT_LENGTH": "2048",
        "MEMDESK_REPLY_DEBOUNCE_S": "0",
        "MEMDESK_MEMORY_EMBEDDER": "hashing",
        "MEMDESK_ACCESS_LOG": "true",
        **overrides,
    }


def _widget_session(url: str) -> tuple[httpx.Client, str, str]:
    """A visitor's client (its token as a bearer header), the token, and a new conversation's public id."""
    session = httpx.post(f"{url}/api/widget/sessions", json={}, timeout=10.0)
    assert session.status_code == 201, session.text
    token: str = session.json()["token"]
    client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=10.0)
    created = client.post("/api/widget/conversations", json={"title": "Help"})
    assert created.status_code == 201, created.text
    return client, token, created.json()["id"]


def _open_event_stream_with_query_token(url: str, conversation: str, token: str) -> None:
    """What EventSource does: the token as ``?token=``. The stream never ends by itself: read its start, leave."""
    events = f"{url}/api/widget/conversations/{conversation}/events"
    with httpx.stream("GET", events, params={"token": token}, timeout=10.0) as response:
        assert response.status_code == 200
        next(response.iter_bytes())


def _talk_until_replied(client: httpx.Client, conversation: str, count: int) -> None:
    path = f"/api/widget/conversations/{conversation}/messages"
    for number in range(1, count + 1):
        text = f"Message {number}: " + f"details about my delivery problem number {number}. " * 16
        assert client.post(path, json={"content": text}).status_code == 202
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while sum(m["role"] == "assistant" and bool(m["content"]) for m in client.get(path).json()) < number:
            assert time.monotonic() < deadline, f"no reply to message {number}"
            time.sleep(0.05)


def _records(served: ServeProcess) -> list[dict[str, Any]]:
    lines = [line for line in served.log().splitlines() if line.strip()]
    assert lines, "the server wrote nothing"
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"a line that is not JSON: {line!r}") from None
    return records


def test_json_logs_cover_uvicorn_and_memdesk_with_no_token_and_compaction_at_info(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(_answer)
    served = start_serve(tmp_path, _server_settings(scripted_server, MEMDESK_LOG_FORMAT="json"))
    try:
        client, token, conversation = _widget_session(served.url)
        try:
            _open_event_stream_with_query_token(served.url, conversation, token)
            _talk_until_replied(client, conversation, MESSAGES)
        finally:
            client.close()
        served.stop(timeout_s=STOP_TIMEOUT_S)
    finally:
        served.ensure_stopped()

    records = _records(served)
    for record in records:
        assert {"asctime", "level", "name", "request_id", "conversation_id", "message"} <= set(record), record
    log = served.log()
    assert token not in log and token.split(".")[-1] not in log, "the visitor token reached the log"
    assert TEST_API_KEY not in log
    loggers = {record["name"] for record in records}
    assert {"uvicorn.error", "uvicorn.access", "app.cli.serve"} <= loggers
    (stream_line,) = [r["message"] for r in records if r["name"] == "uvicorn.access" and "/events?" in r["message"]]
    assert "?token=[redacted] " in stream_line
    compactions = [r for r in records if r["message"].startswith("context compaction in conversation")]
    assert compactions, "no compaction trace in the log"
    assert {(r["level"], r["name"]) for r in compactions} == {("INFO", "app.turns.turn")}
    assert any(r["message"].startswith("memdesk is running at ") for r in records)


def test_the_log_level_applies_to_uvicorn_and_memdesk_alike(tmp_path: Path, scripted_server: ScriptedLLMServer) -> None:
    served = start_serve(tmp_path, _server_settings(scripted_server, MEMDESK_LOG_LEVEL="WARNING"))
    try:
        assert httpx.get(f"{served.url}/healthz", timeout=10.0).status_code == 200
        assert httpx.get(f"{served.url}/no-such-page", timeout=10.0).status_code == 404
        served.stop(timeout_s=STOP_TIMEOUT_S)
    finally:
        served.ensure_stopped()
    assert "INFO" not in served.log(), served.log()
