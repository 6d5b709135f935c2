"""End to end with the real embedded model: llama-cpp-python's server running SmolLM2-135M as a child process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.local_model import LocalModelServer
from app.models import MessageAuthor
from app.settings import EMBEDDED_CHAT_MODEL, Settings
from tests.app.live_app import LiveApp, free_port, run_live_app

pytest.importorskip("llama_cpp", reason="the local-model extra is not installed")


@pytest.fixture(scope="module")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModelServer]:
    log = tmp_path_factory.mktemp("local-model") / "server.log"
    with LocalModelServer(port=free_port(), threads=2, context_length=8192, log_path=Path(log)) as server:
        yield server


def test_a_reply_from_the_real_local_model_arrives_over_the_real_protocol(
    tmp_path: Any, local_model: LocalModelServer
) -> None:
    settings = Settings(
        environment="test",
        data_dir=tmp_path,
        llm_base_url=local_model.base_url,
        chat_model=EMBEDDED_CHAT_MODEL,
        context_length=8192,
        max_reply_tokens=48,
        reply_debounce_s=0.0,
        secret_key="test-secret-key-0123456789-abcdefghijklmnop",
    )
    live: LiveApp
    for live in run_live_app(settings):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        response = client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "Hello!"})
        assert response.status_code == 202
        replies = live.wait_for_reply(conversation_id, timeout=180)
        # Wording is the tiny model's business; what matters is that its answer came back through the whole loop.
        bot_replies = [m for m in replies if m.author == MessageAuthor.BOT]
        assert bot_replies and (bot_replies[-1].content or "").strip()
        assert bot_replies[-1].prompt_tokens is None or bot_replies[-1].prompt_tokens > 0
