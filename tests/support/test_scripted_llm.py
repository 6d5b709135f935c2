"""The scripted OpenAI-compatible server, checked with the real openai client and with raw HTTP (httpx)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import pytest

from tests.support.scripted_llm import (
    DEFAULT_MODELS,
    Fault,
    RecordedRequest,
    ScriptedLLMServer,
    ScriptedReply,
    ScriptedToolCall,
    ScriptedUsage,
    estimate_prompt_tokens,
    estimate_tokens,
    iter_stream_payloads,
)

MESSAGES = [{"role": "user", "content": "Where is my parcel?"}]
CLIENT_TIMEOUT_S = 5.0


def client_for(server: ScriptedLLMServer, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=server.base_url, api_key="sk-scripted", timeout=CLIENT_TIMEOUT_S, max_retries=0, **options
    )


def post_chat(server: ScriptedLLMServer, **body: Any) -> httpx.Response:
    payload = {"model": "raw-model", "messages": MESSAGES, **body}
    return httpx.post(f"{server.base_url}/chat/completions", json=payload, timeout=CLIENT_TIMEOUT_S)


def stream_chunks(response: httpx.Response) -> list[dict[str, Any]]:
    payloads = list(iter_stream_payloads(response.content))
    assert payloads[-1] == "[DONE]"
    return [json.loads(payload) for payload in payloads[:-1]]


def test_base_url_points_at_v1_on_loopback(scripted_server: ScriptedLLMServer) -> None:
    assert scripted_server.base_url == f"http://127.0.0.1:{scripted_server.port}/v1"


def test_a_stopped_server_has_no_port() -> None:
    server = ScriptedLLMServer()

    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    server.start().stop()
    assert not server.running


def test_models_endpoint_lists_the_configured_models(scripted_server: ScriptedLLMServer) -> None:
    with client_for(scripted_server) as client:
        models = client.models.list()

    assert [model.id for model in models.data] == list(DEFAULT_MODELS)


def test_script_is_consumed_in_order_then_the_rule_then_the_default(scripted_server: ScriptedLLMServer) -> None:
    scripted_server.enqueue("first", ScriptedReply(text="second"))
    scripted_server.set_rule(lambda request: "ruled" if "rule" in request.last_user_text else None)

    def ask(text: str) -> str | None:
        with client_for(scripted_server) as client:
            completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
        return completion.choices[0].message.content

    answers = [ask("rule me"), ask("rule me"), ask("rule me"), ask("hello")]

    assert answers == ["first", "second", "ruled", "Scripted reply to: hello"]
    assert scripted_server.pending == 0


def test_a_rule_that_raises_answers_500_instead_of_hanging_up(scripted_server: ScriptedLLMServer) -> None:
    def broken_rule(request: RecordedRequest) -> str:
        raise KeyError("missing fixture")

    scripted_server.set_rule(broken_rule)

    response = post_chat(scripted_server)

    assert response.status_code == 500
    assert "KeyError" in response.json()["error"]["message"]


def test_every_request_is_recorded_with_body_and_headers(scripted_server: ScriptedLLMServer) -> None:
    with client_for(scripted_server) as client:
        client.chat.completions.create(model="gpt-test", messages=MESSAGES, max_tokens=77)

    request = scripted_server.last_request
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert (request.model, request.max_tokens, request.messages) == ("gpt-test", 77, MESSAGES)
    assert request.authorization == "Bearer sk-scripted"
    assert scripted_server.chat_requests == [request]


def test_usage_is_estimated_from_characters_unless_scripted(scripted_server: ScriptedLLMServer) -> None:
    scripted_server.enqueue("twelve chars", ScriptedReply(text="x", usage=ScriptedUsage(1234, 56)))

    with client_for(scripted_server) as client:
        estimated = client.chat.completions.create(model="m", messages=MESSAGES).usage
        scripted = client.chat.completions.create(model="m", messages=MESSAGES).usage

    assert estimated is not None and scripted is not None
    assert (estimated.prompt_tokens, estimated.completion_tokens) == (estimate_prompt_tokens(MESSAGES), 3)
    assert estimate_prompt_tokens(MESSAGES) == estimate_tokens("Where is my parcel?") == 5
    assert (scripted.prompt_tokens, scripted.completion_tokens, scripted.total_tokens) == (1234, 56, 1290)


@pytest.mark.parametrize("include_usage", [False, True])
def test_stream_ends_with_a_usage_chunk_only_when_asked(
    scripted_server: ScriptedLLMServer, include_usage: bool
) -> None:
    scripted_server.enqueue(ScriptedReply(text="Parcel is on its way.", usage=ScriptedUsage(9, 6)))

    response = post_chat(scripted_server, stream=True, stream_options={"include_usage": include_usage})

    assert response.headers["content-type"].startswith("text/event-stream")
    chunks = stream_chunks(response)
    text = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks if chunk["choices"])
    assert text == "Parcel is on its way."
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finish == ["stop"]
    if include_usage:
        assert chunks[-1]["choices"] == []
        assert chunks[-1]["usage"] == {"prompt_tokens": 9, "completion_tokens": 6, "total_tokens": 15}
    else:
        assert all("usage" not in chunk for chunk in chunks)


def test_streamed_tool_calls_arrive_as_a_head_and_several_argument_fragments(
    scripted_server: ScriptedLLMServer,
) -> None:
    arguments = json.dumps({"order_id": "#W2378156"})
    scripted_server.enqueue(
        ScriptedReply.with_tool_calls(
            ScriptedToolCall("lookup_order", arguments, "call_x"), ScriptedToolCall("list_refunds", "{}")
        )
    )

    chunks = stream_chunks(post_chat(scripted_server, stream=True))

    deltas = [d for c in chunks if c["choices"] for d in c["choices"][0]["delta"].get("tool_calls") or ()]
    first = [d for d in deltas if d["index"] == 0]
    assert first[0] == {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "lookup_order", "arguments": ""},
    }
    assert len(first) >= 4
    assert "".join(d["function"]["arguments"] for d in first) == arguments
    assert [d["function"]["name"] for d in deltas if "id" in d] == ["lookup_order", "list_refunds"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize("status", [400, 429, 500, 503])
def test_error_replies_carry_an_openai_style_body(scripted_server: ScriptedLLMServer, status: int) -> None:
    scripted_server.enqueue(ScriptedReply.http_error(status, "Scripted failure.", retry_after_s=0.25))

    response = post_chat(scripted_server, stream=True)

    assert response.status_code == status
    error = response.json()["error"]
    assert error["message"] == "Scripted failure."
    assert {"type", "param", "code"} <= error.keys()
    assert response.headers["retry-after-ms"] == "250"
    assert response.headers["x-request-id"].startswith("req_scripted_")


@pytest.mark.parametrize("stream", [False, True])
def test_the_openai_client_sees_each_fault(scripted_server: ScriptedLLMServer, stream: bool) -> None:
    scripted_server.enqueue(
        ScriptedReply.failing(Fault.DROP_CONNECTION),
        ScriptedReply.failing(Fault.DROP_MID_RESPONSE, text="a long enough reply " * 4),
        ScriptedReply.failing(Fault.MALFORMED_JSON),
        ScriptedReply.failing(Fault.EMPTY_CHOICES),
    )

    def outcome() -> str:
        try:
            with client_for(scripted_server) as client:
                result = client.chat.completions.create(model="m", messages=MESSAGES, stream=stream)
                chunks = list(result) if isinstance(result, openai.Stream) else [result]
        except Exception as exc:  # the classes are the point of this test
            return type(exc).__name__
        return f"choices={sum(len(chunk.choices) for chunk in chunks)}"

    assert [outcome() for _ in range(4)] == ["APIConnectionError", "APIConnectionError", "JSONDecodeError", "choices=0"]


def test_a_delayed_reply_is_abandoned_when_the_server_stops() -> None:
    server = ScriptedLLMServer(script=[ScriptedReply(text="too late", delay_s=60)]).start()
    outcome: list[str] = []

    def ask() -> None:
        try:
            post_chat(server)
            outcome.append("answered")
        except httpx.HTTPError as exc:
            outcome.append(type(exc).__name__)

    caller = threading.Thread(target=ask)
    caller.start()
    while not server.requests:
        threading.Event().wait(0.01)
    server.stop()
    caller.join()

    assert outcome == ["RemoteProtocolError"]


def test_concurrent_requests_are_served_in_parallel(scripted_server: ScriptedLLMServer) -> None:
    scripted_server.set_rule(lambda request: f"echo {request.last_user_text}")

    def ask(number: int) -> str | None:
        with client_for(scripted_server) as client:
            messages = [{"role": "user", "content": str(number)}]
            return client.chat.completions.create(model="m", messages=messages).choices[0].message.content

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(ask, range(40)))

    assert answers == [f"echo {number}" for number in range(40)]
    assert len(scripted_server.chat_requests) == 40


def test_bad_requests_and_unknown_routes_get_error_bodies(scripted_server: ScriptedLLMServer) -> None:
    not_json = httpx.post(f"{scripted_server.base_url}/chat/completions", content=b"{nope", timeout=5)
    unknown = httpx.get(f"{scripted_server.base_url}/nothing-here", timeout=5)

    assert (not_json.status_code, unknown.status_code) == (400, 404)
    assert "error" in not_json.json() and "error" in unknown.json()
    assert scripted_server.requests[0].body is None


def test_reset_forgets_script_rule_and_requests(scripted_server: ScriptedLLMServer) -> None:
    scripted_server.enqueue("consumed", "left over")
    scripted_server.set_rule(lambda request: "ruled")
    post_chat(scripted_server)

    scripted_server.reset()

    assert (scripted_server.pending, scripted_server.requests) == (0, [])
    assert post_chat(scripted_server).json()["choices"][0]["message"]["content"].startswith("Scripted reply to:")


@pytest.mark.parametrize("options", [{"status": 700}, {"delay_s": -1.0}, {"stream_chunk_chars": 0}])
def test_invalid_replies_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ScriptedReply(**options)
