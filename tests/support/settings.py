"""Settings of the app under test: the scripted LLM's models, a test key and the test environment."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.llm import LLMGateway
from app.settings import Settings
from tests.support.live_app import IDENTITY_SECRET
from tests.support.scripted_llm import ScriptedLLMServer

CHAT_MODEL = "test-chat"
SUMMARY_MODEL = "test-summary"
TEST_API_KEY = "sk-test-gateway-secret-0123456789"
# Generous for a loaded 2-core CI machine; timeout tests pass their own short one.
TEST_TIMEOUT_S = 5.0

GatewayFactory = Callable[..., LLMGateway]


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
