"""Compaction through the real app: a long conversation at an 8k window, driven over HTTP.

    python -m benchmarks.compaction_replay --json

memdesk runs in this process (uvicorn in a thread on a free port, ``tests.support.servers.app_in_thread``; SQLite
in a temporary directory, the real ``openai`` client) against the scripted OpenAI-compatible server, which answers
chat requests (a tool call every fourth turn) and summary requests. Every customer message and reply carries a
unique marker, so the summary requests the scripted server received show which turns were sent to the summary model
as raw text, and how often.

Reported: ``summary_input_tokens_max`` (the largest summary request, estimated, with and without the answer budget
it asked for), ``raw_resummarized_messages`` (turns sent raw more than once), the stored ranges and whether they
nest.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from sqlmodel import Session, col, select

from app.identity import shop_identity_hmac
from app.main import create_app
from app.models import Compaction, Customer, Order, OrderStatus
from app.settings import Settings
from benchmarks.harness.report import print_report
from compression.tokens import estimate_messages_tokens
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply, ScriptedToolCall
from tests.support.servers import app_in_thread

WINDOW = 8_192
TURNS = 64
CHAT_MODEL = "replay-chat"
SUMMARY_MODEL = "replay-summary"
ORDER = "#W5550001"
IDENTITY_SECRET = "replay-identity-secret"
REPLY_TIMEOUT_S = 30.0
MARKER = re.compile(r"\b(?:msg|reply)-\d{3}\b")
SUMMARY = """## Customer Goal
- Follow up on a delayed kettle order.
## Key Decisions
- Escalated the delay to the carrier {ids: #W5550001 | from: #2}
## Promises & Commitments
- Call the customer back with news {due: by Friday | ids: #W5550001 | from: #2}
## Customer Preferences
- Prefers short answers
"""


def _answer(request: RecordedRequest) -> ScriptedReply:
    if request.model == SUMMARY_MODEL:
        return ScriptedReply(text=SUMMARY)
    transcript = [m for m in request.messages if m.get("role") != "system"]
    if transcript[-1].get("role") == "tool":
        return ScriptedReply(text="The order is still in transit. " + "Details follow. " * 20)
    marker = MARKER.search(str(transcript[-1].get("content")))
    number = int(marker.group()[4:]) if marker else 0
    if number % 4 == 0:
        return ScriptedReply.with_tool_calls(ScriptedToolCall("get_order", json.dumps({"order_number": ORDER})))
    return ScriptedReply(text=f"reply-{number:03d}: I have noted that. " + "Here is what I found about it. " * 25)


def _add_customer(db: Any) -> None:
    with Session(db) as session:
        customer = Customer(external_id="replay-1", name="Jane Doe", email="jane@example.com")
        session.add(customer)
        session.flush()
        assert customer.id is not None
        session.add(
            Order(
                number=ORDER,
                customer_id=customer.id,
                status=OrderStatus.SHIPPED,
                total_cents=4210,
                shipping_name="Jane Doe",
                shipping_line1="1 Main St",
                shipping_city="Springfield",
                shipping_postal_code="12345",
                shipping_country="US",
            )
        )
        session.commit()


def _drive(url: str, turns: Any) -> int:
    """Post ``TURNS`` messages, each after the previous reply; returns the conversation id."""
    body = {"external_id": "replay-1", "identity_hmac": shop_identity_hmac(IDENTITY_SECRET, "replay-1")}
    with httpx.Client(base_url=url, timeout=10.0) as anonymous:
        token = anonymous.post("/api/widget/sessions", json=body).json()["token"]
    with httpx.Client(base_url=url, timeout=10.0, headers={"Authorization": f"Bearer {token}"}) as client:
        conversation_id: int = client.post("/api/widget/conversations", json={"title": "Replay"}).json()["id"]
        messages_url = f"/api/widget/conversations/{conversation_id}/messages"
        for number in range(TURNS):
            text = f"msg-{number:03d} about {ORDER}: " + "the kettle has still not arrived, please check. " * 14
            client.post(messages_url, json={"content": text}).raise_for_status()
            deadline = time.monotonic() + REPLY_TIMEOUT_S
            while True:
                replies = [m for m in client.get(messages_url).json() if m["role"] == "assistant"]
                if len(replies) > number and turns.idle:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no reply to turn {number}")
                time.sleep(0.01)
    return conversation_id


def _raw_markers(request: RecordedRequest) -> list[str]:
    prompt = str(request.messages[-1].get("content"))
    return MARKER.findall(prompt.split("<turns>", 1)[1].split("</turns>", 1)[0])


def replay_app() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as data_dir, ScriptedLLMServer(rule=_answer) as llm:
        settings = Settings(
            environment="test",
            data_dir=Path(data_dir),
            llm_base_url=llm.base_url,
            llm_api_key="replay-key-0123456789",
            chat_model=CHAT_MODEL,
            summary_model_override=SUMMARY_MODEL,
            context_length=WINDOW,
            llm_max_retries=0,
            secret_key="replay-secret-key-0123456789-abcdefghijklmnop",
            widget_identity_secret=IDENTITY_SECRET,
            reply_debounce_s=0.0,
            memory_enabled=False,
            visitor_messages_per_minute=10_000,
            access_log=False,
        )
        app = create_app(settings)
        with app_in_thread(app) as url:
            services = app.state.services
            _add_customer(services.db)
            _drive(url, services.turns)
            with Session(services.db) as session:
                compactions = list(session.exec(select(Compaction).order_by(col(Compaction.id))).all())
        summaries = [r for r in llm.chat_requests if r.model == SUMMARY_MODEL]
    ranges = [(c.first_message_id, c.last_message_id) for c in compactions]
    sizes = [estimate_messages_tokens(r.messages) for r in summaries]
    answers = [int(r.json.get("max_tokens") or 0) for r in summaries]
    sent = Counter(marker for request in summaries for marker in _raw_markers(request))
    return {
        "window": WINDOW,
        "turns": TURNS,
        "compactions": len(compactions),
        "summary_requests": len(summaries),
        "summary_input_tokens_max": max(sizes, default=0),
        "summary_request_with_answer_tokens_max": max((s + a for s, a in zip(sizes, answers, strict=True)), default=0),
        "raw_resummarized_messages": sum(1 for count in sent.values() if count > 1),
        "raw_messages_summarized": len(sent),
        "ranges": ranges,
        "ranges_nested": all(b[0] <= a[0] and b[1] > a[1] for a, b in itertools.pairwise(ranges)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result = replay_app()
    print_report(result, one_line=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
