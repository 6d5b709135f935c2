"""Fixtures for the app tests: a running scripted OpenAI-compatible server and gateways pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from app.llm import LLMGateway
from app.scripted_llm import ScriptedLLMServer

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
def scripted_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


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
