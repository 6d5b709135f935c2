"""Each stored message keeps what a compaction does with it, so the first compaction in a process that did not see
the messages arrive (after a restart, or on another worker) does not work through the whole history again."""

from __future__ import annotations

import json
from pathlib import Path

from sqlmodel import Session

from app.db import create_db_engine, upgrade
from app.models import Message, MessageAuthor, MessageRole
from app.turns.context import load_context
from compression import ContextCompressor, clear_caches
from compression.facts import _extract
from compression.pruning import PRUNED_MARKER, _shrink
from tests.compression.conftest import REFUND_REPLY, FakeSummaryLLM, order_payload
from tests.support.rows import add_customer_conversation

TURNS = 20


def store_long_conversation(session: Session) -> int:
    _, cid = add_customer_conversation(session, "Jane Doe")

    def add(role: MessageRole, author: MessageAuthor, content: str | None, **fields: object) -> None:
        session.add(Message(conversation_id=cid, role=role, author=author, content=content, **fields))  # type: ignore[arg-type]

    for turn in range(TURNS):
        number = f"#W{3_000_000 + turn}"
        add(MessageRole.USER, MessageAuthor.CUSTOMER, f"Where is my order {number}? " + "Some details. " * 20)
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "get_order", "arguments": json.dumps({"number": number})},
        }
        add(MessageRole.ASSISTANT, MessageAuthor.BOT, None, tool_calls=[call])
        session.add(Message.tool_result(cid, f"call_{turn}", order_payload(number)))
        reply = f"Order {number} was delivered on 2026-11-20. " + "More. " * 20
        # The turn STANDARD_SUMMARY's commitments cite, so they are accepted as a real model's would be.
        add(MessageRole.ASSISTANT, MessageAuthor.BOT, f"{REFUND_REPLY} {reply}" if turn == 1 else reply)
    session.commit()
    return cid


def test_the_first_compaction_in_a_new_process_reuses_what_was_done_when_messages_were_stored(tmp_path: Path) -> None:
    db = create_db_engine(f"sqlite:///{tmp_path / 'memdesk.db'}")
    upgrade(db)
    with Session(db) as session:
        cid = store_long_conversation(session)
        tool = session.get(Message, 3)
        assert tool is not None and tool.role == MessageRole.TOOL
        assert tool.compressor_index is not None and str(tool.compressor_index["shrunk"]).startswith(PRUNED_MARKER)
        assert "#W3000000" in tool.compressor_index["facts"], "identifiers of the reduced output"

        clear_caches()  # as in a process that starts now
        engine = ContextCompressor(model="main-model", context_length=16_000, summary_llm=FakeSummaryLLM())
        assert engine.wants_stored_index
        assert all("memdesk_index" not in m for m in load_context(session, cid, "You help.")), "not read every turn"
        context = load_context(session, cid, "You help.", with_index=engine.wants_stored_index)
        assert sum("memdesk_index" in m for m in context) == TURNS * 4
        scans, reductions = _extract.cache_info().misses, _shrink.cache_info().misses
        engine.should_compress_preflight(context)  # as a turn does before it compacts
        result = engine.compress(context)
        assert result.compacted_range is not None, "the conversation was long enough to compact"
        assert _shrink.cache_info().misses == reductions, "no tool output reduced again"
        scanned = _extract.cache_info().misses - scans
        assert scanned <= 1 + len(result.key_decisions), "only the system prompt (never stored) and the new notes"
        assert not engine.wants_stored_index, "from now on it indexes only new messages"
    db.dispose()
