"""What an operator relies on: liveness without I/O, readiness that names what is down, Prometheus metrics, API docs
that work offline, a front door, request ids, and logs with no secret in them."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from sqlalchemy import create_engine

from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.servers import free_port
from tests.support.settings import app_settings

METRICS_TOKEN = "metrics-token-for-tests-0123456789"


def test_liveness_needs_no_database_and_readiness_names_the_database_when_it_is_down(live_app: LiveApp) -> None:
    ready = live_app.client().get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready", "checks": {"database": "ok", "llm": "ok"}}
    healthy_db = live_app.services.db
    live_app.services.db = create_engine(f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/none")
    try:
        assert live_app.client().get("/healthz").json()["status"] == "ok"
        down = live_app.client().get("/readyz")
    finally:
        live_app.services.db = healthy_db
    assert down.status_code == 503 and down.json()["checks"]["database"] == "unreachable"


def test_readiness_names_an_unreachable_llm_endpoint(tmp_path: Any, scripted_server: ScriptedLLMServer) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    for live in run_live_app(app_settings(tmp_path, scripted_server, llm_base_url=dead)):
        response = live.client().get("/readyz")
        assert response.status_code == 503 and response.json()["checks"]["llm"].startswith("unreachable at")
        assert live.client().get("/healthz").status_code == 200


def test_metrics_count_turns_llm_usage_by_purpose_and_need_the_token_when_set(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    for live in run_live_app(app_settings(tmp_path, scripted_server, metrics_token=METRICS_TOKEN)):
        client, _ = live.visitor()
        conversation = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "hello"})
        live.wait_for_reply(conversation)
        assert live.client().get("/metrics").status_code == 401
        assert live.client("wrong-token").get("/metrics").status_code == 401
        scraped = live.client(METRICS_TOKEN).get("/metrics")
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
        lines = scraped.text.splitlines()
        assert 'memdesk_turns_total{outcome="answered"} 1.0' in lines
        assert 'memdesk_llm_requests_total{model="test-chat",purpose="chat"} 1.0' in lines
        assert any(line.startswith("memdesk_turn_seconds_count 1.0") for line in lines)
        assert any(line.startswith("memdesk_sse_connections") for line in lines)


def test_the_api_docs_work_offline_from_local_assets(live_app: LiveApp) -> None:
    client = live_app.client()
    for page, asset in (("/docs", "/docs-assets/swagger-ui-bundle.js"), ("/redoc", "/docs-assets/redoc.standalone.js")):
        html = client.get(page)
        assert html.status_code == 200 and asset in html.text
        assert "cdn" not in html.text.lower() and "googleapis" not in html.text
        script = client.get(asset)
        assert script.status_code == 200 and len(script.content) > 100_000
    assert client.get("/docs-assets/swagger-ui.css").status_code == 200


@pytest.mark.parametrize(("environment", "expected"), [("development", 307), ("test", 200)])
def test_the_front_door_leads_a_developer_to_the_demo_and_otherwise_says_the_server_runs(
    tmp_path: Any, scripted_server: ScriptedLLMServer, environment: str, expected: int
) -> None:
    for live in run_live_app(app_settings(tmp_path, scripted_server, environment=environment)):
        response = live.client().get("/", follow_redirects=False)
        assert response.status_code == expected
        if expected == 307:
            assert response.headers["location"] == "/demo"
        else:
            assert "memdesk is running" in response.text
        icon = live.client().get("/favicon.ico")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"


def test_every_response_carries_a_request_id_and_a_sane_client_id_is_kept(live_app: LiveApp) -> None:
    made_up = live_app.client().get("/healthz").headers["x-request-id"]
    assert len(made_up) == 16
    kept = live_app.client().get("/healthz", headers={"X-Request-ID": "lb-1234.abc"}).headers["x-request-id"]
    assert kept == "lb-1234.abc"
    hostile = "bad id\u00e9".encode("latin-1")
    replaced = live_app.client().get("/healthz", headers={"X-Request-ID": hostile}).headers["x-request-id"]
    assert len(replaced) == 16 and " " not in replaced


LOGGING_PROBE = """
import logging, sys
from app.infra.logs import configure_logging, conversation_id, request_id
from app.settings import Settings
settings = Settings(environment="test", log_format=sys.argv[1], secret_key="the-server-secret-key-0123456789",
                    llm_api_key="sk-live-api-key-0123456789")
configure_logging(settings)
request_id.set("req-7")
conversation_id.set("42")
token = "cus_abc." + "1700000000." + "ab" * 32
logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/1.1" %d', "127.0.0.1", "GET",
    "/api/widget/conversations/cnv_x/events?token=" + token + "&since=1", 200)
logging.getLogger("app.turns.turn").info("context compaction in conversation 42: key sk-live-api-key-0123456789")
logging.getLogger("app.llm").warning("upstream said Authorization: Bearer sk-other-0123456789")
"""


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_logs_carry_time_level_logger_and_ids_and_never_a_secret_or_token(log_format: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOGGING_PROBE, log_format], capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 3, done.stderr
    for secret in ("1700000000.abab", "sk-live-api-key", "sk-other", "the-server-secret"):
        assert secret not in done.stderr
    assert "[redacted]" in lines[0] and "since=1" in lines[0]
    assert "context compaction in conversation 42" in lines[1]
    if log_format == "json":
        records = [json.loads(line) for line in lines]
        assert {"asctime", "level", "name", "request_id", "conversation_id", "message"} <= set(records[1])
        assert records[1]["level"] == "INFO" and records[1]["name"] == "app.turns.turn"
        assert records[1]["request_id"] == "req-7" and records[1]["conversation_id"] == "42"
    else:
        assert " INFO app.turns.turn [request=req-7 conversation=42] " in lines[1]
        assert lines[2].split(" ")[2] == "WARNING"
