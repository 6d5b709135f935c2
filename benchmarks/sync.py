"""``python -m benchmarks.sync --json``: the conclusion sync over many idle conversations.

Seeds ``--conversations`` idle conversations (a customer's question and a reply with a refund promise each) in a fresh
SQLite database, then runs ``SyncRunner`` as ``memdesk sync`` does, with a zero-latency summarizer in process (so the
figure is memdesk's own cost: selection, transcript reads, the compressor's prompt building and decision parsing,
outbox writes and delivery) and real long-term memory (Mem0 on the configured embedded store, hashing embedder).
Then it runs again, which must write nothing.

Prints ``conversations_per_min`` (first run, delivery included), ``duplicate_memories`` (memories beyond one per
conversation), ``rerun_new_writes`` (outbox rows and memories the second run added) and ``peak_rss_mb``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from app.customer_memory.outbox import SqlOutboxRepository
from app.db import create_db_engine, migrate
from app.llm import UsageLedger
from app.models import Conclusion
from app.sync import SyncOptions, SyncRunner
from benchmarks.harness.report import print_report
from compression import ContextCompressor
from compression.messages import ChatMessage
from compression.types import Completion, Usage
from memory.config import EmbedderKind, MemoryOptions, VectorStoreKind
from memory.outbox import ConclusionOutbox
from memory.store import CustomerMemory
from tests.support.sync_data import promise_notes, seed_promise_conversations

DEFAULT_CONVERSATIONS = 10_000
CONTEXT_LENGTH = 32_000


class InstantSummarizer:
    """A ``SummaryLLM`` that answers at once with notes holding the conversation's promise."""

    def complete(self, messages: list[ChatMessage], *, model: str, max_tokens: int) -> Completion:
        request = str(messages[-1].get("content"))
        notes = promise_notes(request)
        return Completion(text=notes, model=model, usage=Usage(len(request) // 4, len(notes) // 4))


def _counts(url: str, store: CustomerMemory, customers: int) -> tuple[int, int]:
    engine = create_db_engine(url)
    with Session(engine) as session:
        rows = int(session.exec(select(func.count()).select_from(Conclusion)).one())
    engine.dispose()
    memories = sum(len(store.list(str(customer))) for customer in range(1, customers + 1))
    return rows, memories


def run(conversations: int, store_kind: str, concurrency: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="memdesk-sync-bench-"))
    url = f"sqlite:///{workdir / 'memdesk.db'}"
    migrate(url)
    seed_promise_conversations(url, conversations)
    options = MemoryOptions(data_dir=workdir, vector_store=VectorStoreKind(store_kind), embedder=EmbedderKind.HASHING)
    store = CustomerMemory(options)
    db = create_db_engine(url)
    outbox = ConclusionOutbox(SqlOutboxRepository(db), store)

    def engine() -> ContextCompressor:
        return ContextCompressor(model="main", context_length=CONTEXT_LENGTH, summary_llm=InstantSummarizer())

    runner = SyncRunner(db, engine, UsageLedger(), deliver=outbox.deliver_due, memory=store)
    sync_options = SyncOptions(idle_minutes=30, concurrency=concurrency)
    started = time.perf_counter()
    first = runner.run(sync_options)
    elapsed = time.perf_counter() - started
    rows, memories = _counts(url, store, conversations)
    second = runner.run(sync_options)
    rows_after, memories_after = _counts(url, store, conversations)
    store.close()
    db.dispose()
    assert first.record is not None
    return {
        "conversations": conversations,
        "store": store_kind,
        "concurrency": concurrency,
        "seconds": round(elapsed, 2),
        "conversations_per_min": round(conversations / elapsed * 60, 1),
        "summarized": first.record.summarized,
        "failed": first.record.failed,
        "conclusions_written": first.record.conclusions_written,
        "outbox_rows": rows,
        "memories": memories,
        "duplicate_memories": max(0, memories - conversations),
        "rerun_scanned": len(second.conversations),
        "rerun_new_writes": (rows_after - rows) + (memories_after - memories),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=DEFAULT_CONVERSATIONS)
    parser.add_argument("--store", default="sqlite", help="the embedded memory store to deliver to")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    figures = run(args.conversations, args.store, args.concurrency)
    print_report(figures, one_line=args.json)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
