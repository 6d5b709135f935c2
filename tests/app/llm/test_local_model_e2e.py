"""End to end with the real embedded model: llama-cpp-python's server running SmolLM2-135M as a child process."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from app.llm.local_model import LocalModelServer
from app.models import AuditEvent, Conversation, ConversationStatus, MessageAuthor, Order, Shipment, ShipmentStatus
from app.settings import EMBEDDED_CHAT_MODEL, Settings
from tests.support.live_app import IDENTITY_SECRET, LiveApp, add_customer_with_order, run_live_app
from tests.support.servers import free_port

pytest.importorskip("llama_cpp", reason="the local-model extra is not installed")

# On a loaded 2-core machine the 135M model can take longer than the default turn deadline for one reply; these
# tests check the loop through the real model, the deadline has its own (tests/app/turns/test_turn_deadline.py).
LOCAL_MODEL_TURN_DEADLINE_S = 170.0


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
        turn_deadline_s=LOCAL_MODEL_TURN_DEADLINE_S,
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


def test_the_embedded_model_gets_order_facts_a_handoff_and_no_runaway_reply(
    tmp_path: Any, local_model: LocalModelServer
) -> None:
    settings = Settings(
        environment="test",
        data_dir=tmp_path,
        llm_base_url=local_model.base_url,
        chat_model=EMBEDDED_CHAT_MODEL,
        context_length=8192,
        reply_debounce_s=0.0,
        turn_deadline_s=LOCAL_MODEL_TURN_DEADLINE_S,
        memory_enabled=False,
        secret_key="test-secret-key-0123456789-abcdefghijklmnop",
        widget_identity_secret=IDENTITY_SECRET,
    )
    for live in run_live_app(settings):
        add_customer_with_order(live, external_id="shop-77", number="#W7777777")
        with live.db() as session:
            order = session.exec(select(Order).where(Order.number == "#W7777777")).one()
            session.add(Shipment(order_id=order.id or 0, carrier="FedEx", tracking_number="778899001122",
                                 status=ShipmentStatus.OUT_FOR_DELIVERY, eta=date(2026, 12, 1)))  # fmt: skip
            session.commit()
        client, _ = live.visitor("shop-77")
        conversation_id = live.conversation(client)
        url = f"/api/widget/conversations/{conversation_id}/messages"
        turns = [
            "Write me a very long poem about kettles, repeat the chorus many times.",
            "Where is my order #W7777777?",
            "talk to a human",
        ]
        for count, text in enumerate(turns, start=1):
            assert client.post(url, json={"content": text}).status_code == 202
            live.wait_for_reply(conversation_id, count=count, timeout=240)

        bot = [m for m in live.transcript(conversation_id) if m.author == MessageAuthor.BOT and m.content]
        order_reply = next(m.content or "" for m in bot if "#W7777777" in (m.content or ""))
        assert "**shipped**" in order_reply and "778899001122" in order_reply
        with live.db() as session:
            conversation = session.get(Conversation, live.conversation_key(conversation_id))
            assert conversation is not None and conversation.status == ConversationStatus.NEEDS_HUMAN
            cut = {int(e.target_id) for e in session.exec(select(AuditEvent).where(AuditEvent.action == "reply.cut"))}
        for reply in bot:
            assert "&#" not in (reply.content or "")
            assert reply.completion_tokens is None or reply.completion_tokens <= settings.reply_token_cap
            if reply.completion_tokens == settings.reply_token_cap:
                assert reply.id in cut and (reply.content or "").endswith("…"), "a reply at the cap is marked"
