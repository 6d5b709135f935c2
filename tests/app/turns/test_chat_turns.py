"""The agent turn loop over real HTTP: customer message -> LLM with tools -> persisted, streamed reply."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import httpx
import pytest

from app.models import Conversation, ConversationStatus, MessageAuthor, MessageRole, OrderStatus
from app.turns.turn import FALLBACK_REPLY, MAX_TOOL_ROUNDS
from tests.support.live_app import LiveApp, add_customer_with_order, run_live_app, sse_events
from tests.support.scripted_llm import Fault, ScriptedLLMServer, ScriptedReply, ScriptedToolCall
from tests.support.servers import free_port
from tests.support.settings import CHAT_MODEL, app_settings


def test_tool_call_result_and_final_answer_are_persisted_in_order(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    add_customer_with_order(live_app, external_id="shop-42", number="#W1234567")
    client, _ = live_app.visitor("shop-42")
    conversation_id = live_app.conversation(client)
    scripted_server.enqueue(
        ScriptedReply.with_tool_calls(ScriptedToolCall("get_order", json.dumps({"order_number": "#W1234567"}))),
        "Your order #W1234567 has shipped.",
    )

    posted = client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "Where is it?"})
    assert posted.status_code == 202 and posted.json()["content"] == "Where is it?"
    live_app.wait_for_reply(conversation_id)

    transcript = live_app.transcript(conversation_id)
    assert [(m.role, m.author) for m in transcript] == [
        (MessageRole.USER, MessageAuthor.CUSTOMER),
        (MessageRole.ASSISTANT, MessageAuthor.BOT),
        (MessageRole.TOOL, MessageAuthor.SYSTEM),
        (MessageRole.ASSISTANT, MessageAuthor.BOT),
    ]
    call = transcript[1].tool_calls[0] if transcript[1].tool_calls else {}
    assert call["function"]["name"] == "get_order" and transcript[2].tool_call_id == call["id"]
    assert "#W1234567" in (transcript[2].content or "") and "error" not in json.loads(transcript[2].content or "{}")
    assert transcript[3].content == "Your order #W1234567 has shipped."
    assert transcript[3].prompt_tokens and transcript[3].prompt_tokens > 0

    second_request = scripted_server.chat_requests[1]
    assert second_request.model == CHAT_MODEL and second_request.stream
    assert [m["role"] for m in second_request.messages] == ["system", "user", "assistant", "tool", "system"]
    assert all("created_at" not in m and "id" not in m for m in second_request.messages)
    assert {tool["function"]["name"] for tool in second_request.tools or []} >= {"get_order", "transfer_to_human"}

    visible = client.get(f"/api/widget/conversations/{conversation_id}/messages").json()
    assert [m["content"] for m in visible] == ["Where is it?", "Your order #W1234567 has shipped."]


def test_tool_policy_refusal_goes_back_to_the_model_as_a_structured_error(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    add_customer_with_order(live_app, external_id="shop-7", number="#W7654321", status=OrderStatus.SHIPPED)
    client, _ = live_app.visitor("shop-7")
    conversation_id = live_app.conversation(client)
    cancel = json.dumps({"order_number": "#W7654321", "confirmed": True})
    scripted_server.enqueue(ScriptedReply.with_tool_calls(ScriptedToolCall("cancel_order", cancel)), "It has shipped.")
    client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "yes, cancel it"})
    live_app.wait_for_reply(conversation_id)

    tool_message = next(m for m in live_app.transcript(conversation_id) if m.role == MessageRole.TOOL)
    error = json.loads(tool_message.content or "{}")["error"]
    assert error["code"] == "order_not_cancellable"
    tool_result = scripted_server.chat_requests[1].messages[-2]  # the turn context comes last
    assert tool_result["role"] == "tool" and "order_not_cancellable" in tool_result["content"]
    with live_app.db() as session:
        conversation = session.get(Conversation, live_app.conversation_key(conversation_id))
        assert conversation is not None and conversation.status == ConversationStatus.BOT


def test_reply_streams_events_in_order_and_a_client_can_resume(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    slow = ScriptedReply(text="Hello there, how can I help you today?", stream_chunk_chars=6, chunk_delay_s=0.04)
    scripted_server.enqueue(slow)
    received: list[dict[str, Any]] = []
    opened = threading.Event()

    def listen() -> None:
        with client.stream("GET", f"/api/widget/conversations/{conversation_id}/events", timeout=10) as response:
            opened.set()
            for event in sse_events(response):
                received.append(event)
                if event["event"] == "typing" and event["data"] == {"on": False}:
                    return

    listener = threading.Thread(target=listen)
    listener.start()
    assert opened.wait(5)
    time.sleep(0.1)
    client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "hi"})
    listener.join(10)

    kinds = [event["event"] for event in received]
    assert kinds[0] == "message.created" and received[0]["data"]["content"] == "hi"
    assert kinds[1] == "typing" and received[1]["data"] == {"on": True}
    deltas = [e["data"]["text"] for e in received if e["event"] == "message.delta"]
    # Fragments are batched per DELTA_FLUSH_S, so a reply streamed over ~0.3 s arrives in pieces; what is left when
    # the reply completes comes with the stored reply, which replaces the draft.
    assert deltas and "Hello there, how can I help you today?".startswith("".join(deltas))
    final = next(e for e in received if e["event"] == "message.created" and e["data"]["role"] == "assistant")
    assert final["data"]["content"] == "Hello there, how can I help you today?"
    assert kinds[-1] == "typing"
    sequences = [int(e["id"].split(":")[1]) for e in received]
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)

    # Reconnect with the id of the second event: everything after it comes back, in order.
    resumed: list[dict[str, Any]] = []
    headers = {"Last-Event-ID": received[1]["id"]}
    url = f"/api/widget/conversations/{conversation_id}/events"
    with client.stream("GET", url, headers=headers, timeout=10) as response:
        for event in sse_events(response):
            resumed.append(event)
            if len(resumed) == len(received) - 2:
                break
    assert [e["id"] for e in resumed] == [e["id"] for e in received[2:]]


def test_resuming_from_an_unknown_event_id_asks_the_client_to_resync(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    url = f"/api/widget/conversations/{conversation_id}/events"
    with client.stream("GET", url, headers={"Last-Event-ID": "oldboot:5"}, timeout=10) as response:
        first = next(sse_events(response))
    assert first["event"] == "resync"


FAILURES = {
    "http_500": ScriptedReply.http_error(500, "upstream exploded"),
    "http_503": ScriptedReply.http_error(503),
    "http_429": ScriptedReply.http_error(429),
    "timeout": ScriptedReply(text="too late", delay_s=3.0),
    "malformed_json": ScriptedReply.failing(Fault.MALFORMED_JSON),
    "dropped_connection": ScriptedReply.failing(Fault.DROP_CONNECTION),
    "dropped_mid_stream": ScriptedReply.failing(Fault.DROP_MID_RESPONSE, text="partial answer " * 20),
    "empty_choices": ScriptedReply.failing(Fault.EMPTY_CHOICES),
    "empty_answer": ScriptedReply(text=""),
}


def _assert_failed_gracefully(live: LiveApp, conversation_id: str, text: str) -> None:
    replies = live.wait_for_reply(conversation_id)
    transcript = live.transcript(conversation_id)
    assert transcript[0].content == text and transcript[0].author == MessageAuthor.CUSTOMER
    assert replies[-1].content == FALLBACK_REPLY and replies[-1].author == MessageAuthor.SYSTEM
    with live.db() as session:
        conversation = session.get(Conversation, live.conversation_key(conversation_id))
        assert conversation is not None and conversation.status == ConversationStatus.NEEDS_HUMAN


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_llm_failure_keeps_the_message_answers_with_a_fallback_and_asks_for_a_human(
    tmp_path: Any, scripted_server: ScriptedLLMServer, caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    settings = app_settings(tmp_path, scripted_server, llm_timeout_s=0.5)
    caplog.set_level(logging.ERROR, logger="app.turns.turn")
    for live in run_live_app(settings):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        scripted_server.enqueue(FAILURES[failure])
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "help me"})
        _assert_failed_gracefully(live, conversation_id, "help me")
        assert any("Turn failed" in r.getMessage() and "request id" in r.getMessage() for r in caplog.records)
        listed = client.get(f"/api/widget/conversations/{conversation_id}/messages").json()
        assert [m["content"] for m in listed] == ["help me", FALLBACK_REPLY]


def test_unreachable_llm_endpoint_fails_gracefully(tmp_path: Any, scripted_server: ScriptedLLMServer) -> None:
    settings = app_settings(tmp_path, scripted_server, llm_base_url=f"http://127.0.0.1:{free_port()}/v1")
    for live in run_live_app(settings):
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "anyone?"})
        _assert_failed_gracefully(live, conversation_id, "anyone?")


def test_endless_tool_calls_hit_the_loop_limit_and_fail_gracefully(
    live_app: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    search = ScriptedToolCall("search_conversation", json.dumps({"query": "refund"}))
    scripted_server.set_rule(lambda request: ScriptedReply.with_tool_calls(search))
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "refund?"})
    _assert_failed_gracefully(live_app, conversation_id, "refund?")
    assert len(scripted_server.chat_requests) == MAX_TOOL_ROUNDS


def test_bot_stays_silent_after_a_human_took_over(live_app: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    with live_app.db() as session:
        conversation = session.get(Conversation, live_app.conversation_key(conversation_id))
        assert conversation is not None
        conversation.status = ConversationStatus.HUMAN
        session.add(conversation)
        session.commit()
    response = client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "hello?"})
    assert response.status_code == 202
    time.sleep(0.3)
    assert [m.content for m in live_app.transcript(conversation_id)] == ["hello?"]
    assert scripted_server.chat_requests == []


def test_a_burst_of_messages_gets_one_reply_per_burst(live_app: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    scripted_server.enqueue(ScriptedReply(text="first answer", delay_s=0.6), "answer to the rest")
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    url = f"/api/widget/conversations/{conversation_id}/messages"
    client.post(url, json={"content": "one"})
    time.sleep(0.2)
    client.post(url, json={"content": "two"})
    client.post(url, json={"content": "three"})
    live_app.wait_for_reply(conversation_id, count=2)
    time.sleep(0.2)
    assert len(scripted_server.chat_requests) == 2
    second = [m["content"] for m in scripted_server.chat_requests[1].messages if m["role"] == "user"]
    assert second[-2:] == ["two", "three"]


def test_transfer_to_human_hands_off_and_stops_the_bot(live_app: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    transfer = ScriptedToolCall("transfer_to_human", json.dumps({"summary": "Customer wants a person."}))
    scripted_server.enqueue(ScriptedReply.with_tool_calls(transfer))
    client, _ = live_app.visitor()
    conversation_id = live_app.conversation(client)
    # Not an explicit request for a person (those hand off without the model): the model decides to transfer.
    text = "This is the third time I write about this, it is unacceptable."
    client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": text})
    replies = live_app.wait_for_reply(conversation_id)
    assert "member of our team" in (replies[-1].content or "")
    with live_app.db() as session:
        conversation = session.get(Conversation, live_app.conversation_key(conversation_id))
        assert conversation is not None and conversation.status == ConversationStatus.NEEDS_HUMAN
    assert len(scripted_server.chat_requests) == 1


def test_health_endpoint_answers(live_app: LiveApp) -> None:
    assert httpx.get(f"{live_app.url}/healthz").json()["status"] == "ok"
