"""The embedded model's prompt, as llama-cpp-python's server formats it: no HTML entities, tool results included.

The server used to run with the "chatml-function-calling" handler, whose Jinja environment autoescapes: every
apostrophe in the system prompt reached the model as ``&#39;``, and the model wrote it back into its replies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.llm.local_model import LocalModelServer, model_path

llama_cpp = pytest.importorskip("llama_cpp", reason="the local-model extra is not installed")
from llama_cpp import llama_chat_format  # noqa: E402

TRACKING = "1Z999AA10123456784"
LOOKUP = {"id": "call_1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_number": "1"}'}}
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": 'You can only see this customer\'s own orders. Use "quotes" & <tags> freely.'},
    {"role": "user", "content": "Where's my order #W1234567?"},
    {"role": "assistant", "content": "", "tool_calls": [LOOKUP]},
    {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"status": "shipped", "tracking": TRACKING})},
    {"role": "system", "content": "Now: 2026-12-01 10:00 UTC (Tuesday)."},
]


@pytest.fixture(scope="module")
def embedded_model() -> Iterator[Any]:
    model = llama_cpp.Llama(model_path=str(model_path()), vocab_only=True, verbose=False)
    yield model
    model.close()


def _prompt(model: Any, handler: Any) -> str:
    """The prompt text ``handler`` builds: its completion call is intercepted before any token is generated."""
    prompts: list[str] = []

    def capture(prompt: Any, **_: Any) -> Any:
        prompts.append(prompt if isinstance(prompt, str) else model.detokenize(prompt, special=True).decode())
        raise StopIteration

    original = model.create_completion
    model.create_completion = capture
    try:
        with pytest.raises(StopIteration):
            handler(llama=model, messages=MESSAGES, tools=None)
    finally:
        model.create_completion = original
    return prompts[0]


def test_the_server_is_started_with_the_models_own_chat_template() -> None:
    server = LocalModelServer(port=1, threads=1, context_length=2048, log_path=Path("server.log"))
    assert "--chat_format" not in server.command()


def test_the_embedded_prompt_keeps_apostrophes_and_shows_the_tool_result(embedded_model: Any) -> None:
    handler = embedded_model._chat_handlers["chat_template.default"]
    prompt = _prompt(embedded_model, handler)
    assert "this customer's own orders" in prompt and "Where's my order" in prompt
    assert '"quotes" & <tags>' in prompt and "&#39;" not in prompt and "&#34;" not in prompt
    assert TRACKING in prompt and "<|im_start|>tool" in prompt


def test_the_old_function_calling_handler_escaped_every_message(embedded_model: Any) -> None:
    handler = llama_chat_format.get_chat_completion_handler("chatml-function-calling")
    prompt = _prompt(embedded_model, handler)
    assert "this customer&#39;s own orders" in prompt and TRACKING not in prompt
