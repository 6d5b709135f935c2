"""Fixtures for the app tests: a running scripted OpenAI-compatible server and gateways pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from app.llm import LLMGateway
from app.settings import Settings
from tests.app.live_app import IDENTITY_SECRET, LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer

CHAT_MODEL = "test-chat"
SUMMARY_MODEL = "test-summary"
TEST_API_KEY = "sk-test-gateway-secret-0123456789"
# Generous for a loaded 2-core CI machine; timeout tests pass their own short one.
TEST_TIMEOUT_S = 5.0

GatewayFactory = Callable[..., LLMGateway]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def make_gateway(scripted_server: ScriptedLLMServer) -> Iterator[GatewayFactory]:
    """Builds gateways on the scripted server (no retries unless asked); their sync clients close at teardown."""
    made: list[LLMGateway] = []

    def make(**overrides: Any) -> LLMGateway:
        options: dict[str, Any] = {
            "base_url": scripted_server.base_url,
            "chat_model": CHAT_MODEL,
            "api_key": TEST_API_KEY,
            "summary_model": SUMMARY_MODEL,
            "timeout_s": TEST_TIMEOUT_S,
            "max_retries": 0,
            **overrides,
        }
        gateway = LLMGateway(**options)
        made.append(gateway)
        return gateway

    yield make
    for gateway in made:
        gateway.close()


@pytest.fixture
async def gateway(make_gateway: GatewayFactory, anyio_backend: str) -> AsyncIterator[LLMGateway]:
    chat_gateway = make_gateway()
    yield chat_gateway
    await chat_gateway.aclose()


def app_settings(tmp_path: Any, server: ScriptedLLMServer, **overrides: Any) -> Settings:
    options: dict[str, Any] = {
        "environment": "test",
        "data_dir": tmp_path,
        "llm_base_url": server.base_url,
        "llm_api_key": TEST_API_KEY,
        "chat_model": CHAT_MODEL,
        "summary_model_override": SUMMARY_MODEL,
        "llm_timeout_s": TEST_TIMEOUT_S,
        "llm_max_retries": 0,
        "secret_key": "test-secret-key-0123456789-abcdefghijklmnop",
        "widget_identity_secret": IDENTITY_SECRET,
        "reply_debounce_s": 0.0,
        "memory_enabled": False,  # the memory tests (tests/memory) switch it on with the hashing embedder
        **overrides,
    }
    return Settings(**options)


@pytest.fixture
def live_app(tmp_path: Any, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    """memdesk on real HTTP, its LLM the scripted server."""
    yield from run_live_app(app_settings(tmp_path, scripted_server))
