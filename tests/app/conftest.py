"""Fixtures for the app tests: a running scripted OpenAI-compatible server and gateways pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from app.llm import LLMGateway
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import (
    CHAT_MODEL,
    SUMMARY_MODEL,
    TEST_API_KEY,
    TEST_TIMEOUT_S,
    GatewayFactory,
    app_settings,
)


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


@pytest.fixture
def live_app(tmp_path: Any, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    """memdesk on real HTTP, its LLM the scripted server."""
    yield from run_live_app(app_settings(tmp_path, scripted_server))
