"""One contract, every registered engine: the seam the app relies on."""

from __future__ import annotations

import pytest

from compression import ContextEngine, create_engine, registered_engines
from compression.engine import register_engine
from compression.types import CompressionResult, Usage
from tests.compression.conftest import ConversationBuilder, FakeSummaryLLM, order_payload

ENGINE_NAMES = sorted(registered_engines())


def long_conversation() -> ConversationBuilder:
    builder = ConversationBuilder().user("Hello, order #W1000001 is late").assistant("Let me look.")
    for index in range(30):
        builder.tools(("get_order", {"number": f"#W10000{index:02d}"}, order_payload(f"#W10000{index:02d}")))
        builder.exchange(index)
    return builder.user("Any news?")


def test_builtin_engines_are_registered() -> None:
    assert {"compressor", "truncation"} <= set(ENGINE_NAMES)


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_engine_contract_compress_shrinks_and_returns_a_valid_sequence(name: str) -> None:
    engine = create_engine(name, model="main", context_length=8_000, summary_llm=FakeSummaryLLM())
    assert isinstance(engine, ContextEngine)
    messages = long_conversation().messages
    snapshot = [dict(message) for message in messages]

    engine.update_from_response(Usage(prompt_tokens=7_000, completion_tokens=10))
    assert engine.should_compress()
    assert engine.should_compress_preflight(messages)
    result = engine.compress(messages)

    assert isinstance(result, CompressionResult)
    assert messages == snapshot, "compress must not mutate its input"
    assert result.tokens_after < result.tokens_before
    assert result.messages[0]["role"] == "system"
    assert result.messages[-1] == messages[-1], "the latest customer message stays verbatim"
    assert result.events and result.events[0]["engine"] == name
    open_calls: set[str] = set()
    for message in result.messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls
        else:
            open_calls = {call["id"] for call in message.get("tool_calls") or ()}
    assert engine.compression_count == 1


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_engine_contract_hooks_have_safe_defaults(name: str) -> None:
    engine = create_engine(name, model="main", context_length=8_000)
    engine.on_session_start("conversation-1")
    engine.update_model("bigger", 32_000)
    assert engine.context_length == 32_000
    assert not engine.should_compress(prompt_tokens=100)
    engine.on_session_end("conversation-1")


def test_unknown_engine_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"Unknown context engine 'nope'; registered engines: .*compressor"):
        create_engine("nope")


def test_registering_a_second_engine_under_a_taken_name_is_refused() -> None:
    class Impostor(ContextEngine):
        name = "compressor"

        def update_from_response(self, usage: Usage) -> None: ...

        def should_compress(self, prompt_tokens: int | None = None) -> bool:
            return False

        def compress(self, messages, *, current_tokens=None, focus_topic=None):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    with pytest.raises(ValueError, match="already registered"):
        register_engine(Impostor)
