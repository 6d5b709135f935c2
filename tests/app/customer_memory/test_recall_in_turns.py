"""Recall inside the running app's turns: the query is the newest customer message of the burst, known without
reading it back; its embedding is cached for the burst, and erasing the customer empties that cache."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from sqlalchemy import event

from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from tests.support.live_app import run_live_app
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply
from tests.support.settings import app_settings

ADMIN_TOKEN = "admin-token-for-tests-0123456789"
BURST_DEBOUNCE_S = 0.5
PREFERENCE = "Prefers SMS over email for delivery updates"
# How long the recall below waits for the context to load beside it; a turn that loads it only after the recall
# never gets there, and the test fails after this long.
OVERLAP_WAIT_S = 5.0


def test_a_burst_is_recalled_once_with_its_newest_message_and_erasure_empties_the_query_cache(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(lambda request: ScriptedReply(text="We will text you."))
    settings = app_settings(tmp_path, scripted_server, memory_enabled=True, memory_embedder="hashing",
                            reply_debounce_s=BURST_DEBOUNCE_S, admin_token=ADMIN_TOKEN)  # fmt: skip
    for live in run_live_app(settings):
        assert live.services.memory is not None
        store = live.services.memory.store
        client, public_id = live.visitor()
        memory_key = str(live.customer(public_id).id)
        store.remember([Conclusion(memory_key, ConclusionKind.PREFERENCE, PREFERENCE, ConclusionSource.AGENT)])
        conversation = live.conversation(client)
        burst = ["Hello", "how will you keep me updated about the delivery?"]
        for text in burst:  # within the debounce: one turn answers both
            response = client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": text})
            assert response.status_code == 202
        live.wait_for_reply(conversation)

        assert len(scripted_server.chat_requests) == 1, "one reply for the burst"
        assert PREFERENCE in scripted_server.chat_requests[0].messages[-1]["content"]
        assert store.query_cache.get(memory_key, burst[-1]) is not None, "recalled with the newest message"
        assert store.query_cache.get(memory_key, burst[0]) is None
        assert len(store.query_cache) == 1, "the query was embedded once"

        erased = live.client(ADMIN_TOKEN).delete(f"/api/admin/customers/{public_id}")
        assert erased.status_code == 200, erased.text
        assert store.query_cache.get(memory_key, burst[-1]) is None
        assert len(store.query_cache) == 0


def test_recall_runs_while_the_context_loads_and_the_turn_reads_no_extra_message(
    tmp_path: Any, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(lambda request: ScriptedReply(text="Noted."))
    recalling = threading.Event()
    transcript_read_during_recall = threading.Event()
    queries: list[str] = []
    turn_threads: set[int] = set()  # the server's event loop, where turns run (the test polls from its own thread)

    async def memory_section(customer_id: int, query: str) -> str:
        queries.append(query)
        turn_threads.add(threading.get_ident())
        recalling.set()
        overlapped = await asyncio.to_thread(transcript_read_during_recall.wait, OVERLAP_WAIT_S)
        recalling.clear()
        return "- [preference] Prefers SMS" if overlapped else ""

    statements: list[str] = []

    def record(_connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if not (statement.lstrip().upper().startswith("SELECT") and "FROM messages" in statement):
            return
        statements.append(statement)
        if recalling.is_set() and threading.get_ident() in turn_threads:
            transcript_read_during_recall.set()

    settings = app_settings(tmp_path, scripted_server)
    for live in run_live_app(settings, memory_section=memory_section):
        event.listen(live.services.db, "before_cursor_execute", record)
        client, _ = live.visitor()
        conversation = live.conversation(client)
        text = "Where is my parcel?"
        response = client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": text})
        assert response.status_code == 202
        live.wait_for_reply(conversation)

        assert queries == [text]
        assert transcript_read_during_recall.is_set(), "the transcript was read while the recall ran"
        assert "Prefers SMS" in scripted_server.chat_requests[0].messages[-1]["content"]
        newest_first = [statement for statement in statements if "ORDER BY messages.id DESC" in statement]
        assert newest_first == [], "the recall query is the message the turn was scheduled with, not read back"
