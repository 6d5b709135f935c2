"""LLMGateway over real HTTP: the real openai client against the scripted OpenAI-compatible server."""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from app.llm import (
    EMBEDDED_BASE_URL_TEMPLATE,
    ChatResponse,
    LLMConnectionError,
    LLMError,
    LLMGateway,
    LLMMalformedResponseError,
    LLMRateLimitError,
    LLMStatusError,
    LLMTimeoutError,
    UsageLedger,
)
from app.settings import ModelPrice, Settings
from compression.types import Completion, Usage
from tests.support.scripted_llm import Fault, ScriptedLLMServer, ScriptedReply, ScriptedToolCall, ScriptedUsage
from tests.support.servers import free_port
from tests.support.settings import CHAT_MODEL, SUMMARY_MODEL, TEST_API_KEY, GatewayFactory

pytestmark = pytest.mark.anyio

USER_MESSAGES = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Where is my order #W2378156?"},
]
LONG_TEXT = "Your order #W2378156 left the warehouse yesterday and should arrive by Friday. " * 3


# --- chat ------------------------------------------------------------------------------------------------------


async def test_chat_returns_plain_text_with_usage_model_and_request_id(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text="It ships today.", usage=ScriptedUsage(42, 7), model="test-chat-0613"))

    response = await gateway.chat(USER_MESSAGES, tools=None, stream=False)

    assert response == ChatResponse(
        content="It ships today.",
        tool_calls=[],
        finish_reason="stop",
        usage=Usage(42, 7),
        model="test-chat-0613",
        request_id="req_scripted_1",
    )
    request = scripted_server.last_request
    assert request.model == CHAT_MODEL
    assert request.stream is False
    assert request.authorization == f"Bearer {TEST_API_KEY}"


async def test_chat_streams_text_fragments_to_on_delta_and_assembles_them(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text=LONG_TEXT, usage=ScriptedUsage(30, 50), stream_chunk_chars=5))
    fragments: list[str] = []

    response = await gateway.chat(USER_MESSAGES, tools=None, stream=True, on_delta=fragments.append)

    assert response.content == LONG_TEXT
    assert len(fragments) > 10
    assert "".join(fragments) == LONG_TEXT
    assert response.finish_reason == "stop"
    assert response.usage == Usage(30, 50)
    assert response.request_id == "req_scripted_1"
    request = scripted_server.last_request
    assert request.stream is True
    assert request.include_usage is True


async def test_chat_awaits_an_async_on_delta_callback(gateway: LLMGateway, scripted_server: ScriptedLLMServer) -> None:
    scripted_server.enqueue(ScriptedReply(text="Hello there, how can I help?", stream_chunk_chars=4))
    fragments: list[str] = []

    async def push_to_widget(fragment: str) -> None:
        await anyio.sleep(0)
        fragments.append(fragment)

    response = await gateway.chat(USER_MESSAGES, stream=True, on_delta=push_to_widget)

    assert "".join(fragments) == response.content == "Hello there, how can I help?"


async def test_chat_without_streaming_gives_on_delta_the_whole_text_once(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue("One answer.")
    fragments: list[str] = []

    await gateway.chat(USER_MESSAGES, stream=False, on_delta=fragments.append)

    assert fragments == ["One answer."]


@pytest.mark.parametrize("interleaved", [False, True], ids=["sequential", "interleaved"])
async def test_chat_reassembles_streamed_parallel_tool_calls_by_index(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer, interleaved: bool
) -> None:
    lookup = ScriptedToolCall("lookup_order", json.dumps({"order_id": "#W2378156", "fields": ["status"]}), "call_a")
    track = ScriptedToolCall("track_shipment", json.dumps({"tracking": "1Z999AA10123456784"}), "call_b")
    scripted_server.enqueue(
        ScriptedReply.with_tool_calls(lookup, track, stream_chunk_chars=4, interleave_tool_calls=interleaved)
    )
    fragments: list[str] = []

    response = await gateway.chat(USER_MESSAGES, stream=True, on_delta=fragments.append)

    assert [(call.id, call.name, json.loads(call.arguments)) for call in response.tool_calls] == [
        ("call_a", "lookup_order", {"order_id": "#W2378156", "fields": ["status"]}),
        ("call_b", "track_shipment", {"tracking": "1Z999AA10123456784"}),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.content is None
    assert fragments == []
    assert response.to_message()["tool_calls"][1] == {
        "id": "call_b",
        "type": "function",
        "function": {"name": "track_shipment", "arguments": track.arguments},
    }


async def test_chat_returns_non_streamed_tool_calls_with_text(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer
) -> None:
    call = ScriptedToolCall("lookup_order", '{"order_id": "#W1"}', "call_1")
    scripted_server.enqueue(ScriptedReply.with_tool_calls(call, text="Let me check."))

    response = await gateway.chat(USER_MESSAGES, stream=False)

    assert response.content == "Let me check."
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_1", "lookup_order", '{"order_id": "#W1"}')
    ]
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_chat_keeps_tool_arguments_that_are_not_json_raw(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer, stream: bool
) -> None:
    broken = '{"order_id": "#W1", '
    scripted_server.enqueue(ScriptedReply.with_tool_calls(ScriptedToolCall("lookup_order", broken)))

    response = await gateway.chat(USER_MESSAGES, stream=stream)

    assert response.tool_calls[0].arguments == broken
    assert response.tool_calls[0].id


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_chat_marks_a_length_cut_reply_as_truncated(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer, stream: bool
) -> None:
    scripted_server.enqueue(ScriptedReply(text="Your refund of $42.10 will", finish_reason="length"))

    response = await gateway.chat(USER_MESSAGES, stream=stream)

    assert response.finish_reason == "length"
    assert response.truncated


async def test_chat_sends_tools_and_only_the_message_keys_the_api_accepts(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer
) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "Find an order by id.",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
        }
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Where is it?", "created_at": datetime(2026, 11, 30, 9, tzinfo=UTC), "id": 17},
        {"role": "assistant", "content": "Checking.", "tool_calls": []},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
    ]

    await gateway.chat(messages, tools=tools, stream=False)

    sent = scripted_server.last_request
    assert sent.tools == tools
    assert sent.messages == [
        {"role": "user", "content": "Where is it?"},
        {"role": "assistant", "content": "Checking."},
        messages[2],
        messages[3],
    ]


async def test_chat_without_tools_sends_no_tools_key(gateway: LLMGateway, scripted_server: ScriptedLLMServer) -> None:
    await gateway.chat(USER_MESSAGES, tools=None, stream=True)

    assert "tools" not in scripted_server.last_request.json


async def test_chat_tolerates_choice_less_chunks_before_the_answer(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text="Fine.", stream_chunk_chars=2))

    response = await gateway.chat(USER_MESSAGES, stream=True)

    # The final usage chunk has no choices; it must not reset or hide the answer.
    assert response.content == "Fine."
    assert response.usage is not None


# --- complete (SummaryLLM) -------------------------------------------------------------------------------------


def test_complete_sends_the_summary_override_model_and_max_tokens(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text="## Decisions\n- refund $42.10", usage=ScriptedUsage(900, 40)))

    with make_gateway() as gateway:
        completion = gateway.complete(USER_MESSAGES, model=SUMMARY_MODEL, max_tokens=512)

    assert completion == Completion(text="## Decisions\n- refund $42.10", model=SUMMARY_MODEL, usage=Usage(900, 40))
    request = scripted_server.last_request
    assert (request.model, request.max_tokens, request.stream) == (SUMMARY_MODEL, 512, False)


def test_complete_sends_the_main_chat_model_when_the_compressor_falls_back(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    with make_gateway() as gateway:
        gateway.complete(USER_MESSAGES, model=CHAT_MODEL, max_tokens=256)

    assert (scripted_server.last_request.model, scripted_server.last_request.max_tokens) == (CHAT_MODEL, 256)


def test_complete_routes_the_summary_model_to_its_own_endpoint(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    with ScriptedLLMServer() as summary_server:
        gateway = make_gateway(summary_base_url=summary_server.base_url, summary_api_key="sk-summary-key-987654")

        gateway.complete(USER_MESSAGES, model=SUMMARY_MODEL, max_tokens=300)
        gateway.complete(USER_MESSAGES, model=CHAT_MODEL, max_tokens=200)

        assert [(r.model, r.max_tokens, r.authorization) for r in summary_server.chat_requests] == [
            (SUMMARY_MODEL, 300, "Bearer sk-summary-key-987654")
        ]
        assert gateway.summary_endpoint == summary_server.base_url
    assert [(r.model, r.authorization) for r in scripted_server.chat_requests] == [
        (CHAT_MODEL, f"Bearer {TEST_API_KEY}")
    ]


def test_complete_returns_empty_text_instead_of_raising(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text=None))

    completion = make_gateway().complete(USER_MESSAGES, model=SUMMARY_MODEL, max_tokens=64)

    assert completion.text == ""


# --- usage ledger ----------------------------------------------------------------------------------------------


async def test_usage_and_cost_are_recorded_per_model(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    prices = {
        CHAT_MODEL: ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0),
        SUMMARY_MODEL: ModelPrice(input_per_mtok=0.5, output_per_mtok=1.0),
    }
    scripted_server.enqueue(
        ScriptedReply(text="a", usage=ScriptedUsage(1000, 100)),
        ScriptedReply(text="b", usage=ScriptedUsage(2000, 300)),
        ScriptedReply(text="summary", usage=ScriptedUsage(10_000, 500)),
    )
    async with make_gateway(prices=prices) as gateway:
        await gateway.chat(USER_MESSAGES, stream=False)
        await gateway.chat(USER_MESSAGES, stream=True)
        await anyio.to_thread.run_sync(
            functools.partial(gateway.complete, USER_MESSAGES, model=SUMMARY_MODEL, max_tokens=100)
        )

    chat = gateway.ledger.get(CHAT_MODEL)
    summary = gateway.ledger.get(SUMMARY_MODEL)
    assert (chat.requests, chat.prompt_tokens, chat.completion_tokens) == (2, 3000, 400)
    assert chat.cost_usd == pytest.approx((3000 * 2.0 + 400 * 8.0) / 1_000_000)
    assert (summary.requests, summary.total_tokens) == (1, 10_500)
    assert summary.cost_usd == pytest.approx((10_000 * 0.5 + 500 * 1.0) / 1_000_000)
    assert gateway.ledger.total_cost_usd == pytest.approx(chat.cost_usd + summary.cost_usd)
    assert set(gateway.ledger.snapshot()) == {CHAT_MODEL, SUMMARY_MODEL}


async def test_estimated_usage_is_recorded_when_the_server_does_not_script_it(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer
) -> None:
    response = await gateway.chat(USER_MESSAGES, stream=False)

    assert response.usage is not None and response.usage.prompt_tokens > 0
    assert gateway.ledger.get(CHAT_MODEL).prompt_tokens == response.usage.prompt_tokens


def test_ledger_is_shared_and_unpriced_models_cost_nothing() -> None:
    ledger = UsageLedger({"priced": ModelPrice(input_per_mtok=1.0)})

    ledger.record("free", Usage(500, 500))
    ledger.record("priced", Usage(1_000_000, 0))
    ledger.record("free", None)
    ledger.record_failure("free")

    free = ledger.get("free")
    assert (free.requests, free.failures, free.total_tokens, free.cost_usd) == (2, 1, 1000, 0.0)
    assert ledger.get("priced").cost_usd == pytest.approx(1.0)


# --- failures --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailureCase:
    reply: ScriptedReply | None  # None: nothing listens on the port
    error: type[LLMError]
    status: int | None = None
    retryable: bool = False
    timeout_s: float | None = None


FAILURES = {
    "connection-refused": FailureCase(None, LLMConnectionError, retryable=True),
    "timeout": FailureCase(ScriptedReply(text="late", delay_s=3.0), LLMTimeoutError, retryable=True, timeout_s=0.3),
    "http-500": FailureCase(ScriptedReply.http_error(500), LLMStatusError, 500, retryable=True),
    "http-503": FailureCase(ScriptedReply.http_error(503, "Overloaded."), LLMStatusError, 503, retryable=True),
    "http-429": FailureCase(ScriptedReply.http_error(429), LLMRateLimitError, 429, retryable=True),
    "http-400": FailureCase(ScriptedReply.http_error(400, "Unknown parameter."), LLMStatusError, 400),
    "malformed-json": FailureCase(ScriptedReply.failing(Fault.MALFORMED_JSON), LLMMalformedResponseError),
    "dropped-connection": FailureCase(ScriptedReply.failing(Fault.DROP_CONNECTION), LLMConnectionError, retryable=True),
    "dropped-mid-response": FailureCase(
        ScriptedReply.failing(Fault.DROP_MID_RESPONSE, text=LONG_TEXT), LLMConnectionError, retryable=True
    ),
    "empty-choices": FailureCase(ScriptedReply.failing(Fault.EMPTY_CHOICES), LLMMalformedResponseError),
}


@pytest.mark.parametrize("call", ["chat", "chat-stream", "complete"])
@pytest.mark.parametrize("case", FAILURES.values(), ids=FAILURES.keys())
async def test_failures_raise_the_matching_error_with_context(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer, case: FailureCase, call: str
) -> None:
    base_url = scripted_server.base_url if case.reply else f"http://127.0.0.1:{free_port()}/v1"
    if case.reply:
        scripted_server.enqueue(case.reply)
    options = {"base_url": base_url} | ({"timeout_s": case.timeout_s} if case.timeout_s else {})
    model = SUMMARY_MODEL if call == "complete" else CHAT_MODEL

    async with make_gateway(**options) as gateway:
        with pytest.raises(LLMError) as raised:
            if call == "complete":
                complete = functools.partial(gateway.complete, USER_MESSAGES, model=model, max_tokens=64)
                await anyio.to_thread.run_sync(complete)
            else:
                await gateway.chat(USER_MESSAGES, stream=call == "chat-stream")

    error = raised.value
    assert type(error) is case.error
    assert (error.model, error.endpoint, error.retryable) == (model, base_url, case.retryable)
    assert model in str(error) and base_url in str(error)
    if case.status is not None:
        assert isinstance(error, LLMStatusError)
        assert error.status_code == case.status
        assert error.request_id == "req_scripted_1"
    assert gateway.ledger.get(model).failures == 1
    assert gateway.ledger.get(model).requests == 0


async def test_a_stream_dropped_midway_raises_after_the_fragments_already_delivered(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply.failing(Fault.DROP_MID_RESPONSE, text=LONG_TEXT, stream_chunk_chars=8))
    fragments: list[str] = []

    with pytest.raises(LLMConnectionError) as raised:
        await gateway.chat(USER_MESSAGES, stream=True, on_delta=fragments.append)

    assert fragments and LONG_TEXT.startswith("".join(fragments))
    assert raised.value.request_id == "req_scripted_1"


async def test_transient_errors_are_retried_within_the_retry_budget(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(
        ScriptedReply.http_error(503, retry_after_s=0.01),
        ScriptedReply.http_error(429, retry_after_s=0.01),
        "Third time lucky.",
    )

    async with make_gateway(max_retries=2) as gateway:
        response = await gateway.chat(USER_MESSAGES, stream=False)

    assert response.content == "Third time lucky."
    assert len(scripted_server.chat_requests) == 3
    assert gateway.ledger.get(CHAT_MODEL).requests == 1


def test_bad_requests_are_not_retried(make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer) -> None:
    scripted_server.enqueue(ScriptedReply.http_error(400, retry_after_s=0.01), "never sent")

    with make_gateway(max_retries=2) as gateway, pytest.raises(LLMStatusError):
        gateway.complete(USER_MESSAGES, model=CHAT_MODEL, max_tokens=10)

    assert len(scripted_server.chat_requests) == 1


async def test_the_api_key_never_appears_in_errors_logs_or_repr(
    gateway: LLMGateway, scripted_server: ScriptedLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    scripted_server.enqueue(ScriptedReply.http_error(401, f"Incorrect API key provided: {TEST_API_KEY}."))

    with caplog.at_level(logging.DEBUG), pytest.raises(LLMStatusError) as raised:
        await gateway.chat(USER_MESSAGES, stream=False)

    assert raised.value.status_code == 401
    assert "MEMDESK_LLM_API_KEY" in str(raised.value)
    assert TEST_API_KEY not in str(raised.value)
    assert TEST_API_KEY not in caplog.text
    assert TEST_API_KEY not in repr(gateway)


def test_endpoint_credentials_are_not_shown(scripted_server: ScriptedLLMServer) -> None:
    url = scripted_server.base_url.replace("http://", "http://user:hunter2-password@")

    with LLMGateway(base_url=url, chat_model=CHAT_MODEL) as gateway:
        assert "hunter2" not in repr(gateway)
        assert gateway.chat_endpoint == scripted_server.base_url


# --- construction ----------------------------------------------------------------------------------------------


def test_from_settings_uses_the_configured_timeout_retries_and_models(scripted_server: ScriptedLLMServer) -> None:
    settings = Settings(
        _env_file=None,
        llm_base_url=scripted_server.base_url,
        chat_model="chat-from-settings",
        summary_model_override="summary-from-settings",
        llm_timeout_s=12.5,
        llm_max_retries=1,
        model_prices={"summary-from-settings": ModelPrice(input_per_mtok=1.0)},
    )

    with LLMGateway.from_settings(settings) as gateway:
        gateway.complete(USER_MESSAGES, model="summary-from-settings", max_tokens=32)

    assert (gateway.chat_model, gateway.summary_model) == ("chat-from-settings", "summary-from-settings")
    assert (gateway.timeout_s, gateway.max_retries) == (12.5, 1)
    # The SDK announces its read timeout; it must be ours, not its 10-minute default.
    assert scripted_server.last_request.headers["x-stainless-read-timeout"] == "12.5"
    assert gateway.ledger.get("summary-from-settings").cost_usd > 0


def test_from_settings_without_a_base_url_targets_the_embedded_model_server() -> None:
    settings = Settings(_env_file=None, llm_base_url=None, local_model_port=8799)

    with LLMGateway.from_settings(settings) as gateway:
        assert gateway.chat_endpoint == EMBEDDED_BASE_URL_TEMPLATE.format(port=8799)
        assert gateway.summary_endpoint == gateway.chat_endpoint


@pytest.mark.parametrize("options", [{"timeout_s": 0}, {"max_retries": -1}])
def test_invalid_policy_is_refused(options: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        LLMGateway(base_url="http://127.0.0.1:1/v1", chat_model=CHAT_MODEL, **options)  # type: ignore[arg-type]
