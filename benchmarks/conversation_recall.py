"""Conversation recall benchmark: after several compactions, is every fact of the compacted turns still answerable?

    python -m benchmarks.conversation_recall --json

A long generated support session (``benchmarks.support_sessions``) is stored turn by turn in a SQLite database built
by the app's own migrations, as the app stores messages, and replayed through the real ``ContextCompressor`` (the
app's recall hint, the scripted summarizer of ``benchmarks.compression``, which copies no identifier). Every fact of
the compacted turns (order and tracking numbers, amounts, dates, emails, phones, found by
``compression.facts.FactExtractor``) then counts as answerable when it is still in the final context (aged as the
app sends it), or when ONE call of the real ``search_conversation`` tool returns it in a snippet. The query is what a
model could write without knowing the answer: the kind of fact, the few words that introduce it in its message, and
the order number it belongs to (the nearest one before it in that message, else the one the customer's message of
that turn names), never the value itself. ``without_pins`` repeats the run with no pinned identifiers in the notes,
so that the search has to find what the pins would have kept.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from app.db import create_db_engine, upgrade
from app.models import Conversation, Customer, Message, MessageAuthor, MessageRole
from app.tools import ToolContext, ToolRegistry, build_tool_registry
from app.tools.conversation_search import RECALL_HINT, TOOL_NAME
from benchmarks.harness.report import print_report
from benchmarks.harness.summarizer import ScriptedSummarizer
from benchmarks.support_sessions import generate_session, turn_messages
from compression import ContextCompressor
from compression.facts import FactExtractor
from compression.messages import ChatMessage, content_text

# As benchmarks.compression's main run: a 32k window (the 12,000-token working set decides), the same labels.
CONTEXT_LENGTH = 32_000
MAIN_MODEL, SUMMARY_MODEL = "main-model", "summary-mini"
SYSTEM_PROMPT = "You are the customer-support assistant of Acme Kitchen. Use the tools; never invent order data."
KIND_WORDS = {
    "order": "order number",
    "tracking": "tracking number",
    "money": "amount",
    "date": "date",
    "email": "email address",
    "phone": "phone number",
}
LABEL_WORDS = 4
LABEL_CHARS = 60
MISSES_SHOWN = 5
_RUN = re.compile(r"[A-Za-z0-9]+")
_STOP = frozenset(["a", "an", "and", "at", "for", "in", "is", "it", "my", "of", "on", "or", "the", "to"])
ROLES = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT, "tool": MessageRole.TOOL}
AUTHORS = {"user": MessageAuthor.CUSTOMER, "assistant": MessageAuthor.BOT, "tool": MessageAuthor.SYSTEM}


@dataclass(frozen=True)
class Stored:
    """One transcript row: its id, its text, and the customer's message of its turn."""

    id: int
    text: str
    turn_ask: str


@dataclass(frozen=True)
class Fact:
    kind: str
    value: str
    source: Stored


def store(session: Session, conversation_id: int, message: ChatMessage) -> int:
    row = Message(
        conversation_id=conversation_id,
        role=ROLES[str(message["role"])],
        author=AUTHORS[str(message["role"])],
        content=message.get("content"),
        tool_calls=message.get("tool_calls"),
        tool_call_id=message.get("tool_call_id"),
    )
    session.add(row)
    session.flush()
    assert row.id is not None
    return row.id


@dataclass(frozen=True)
class Replayed:
    final: list[ChatMessage]  # the last context, aged as the app sends it
    compacted: set[int]  # the ids of every message a compaction replaced
    stored: dict[int, Stored]


def replay(session: Session, conversation_id: int, engine: ContextCompressor) -> Replayed:
    """Store the session's messages as they arrive and run the compressor where the app would."""
    context: list[ChatMessage] = [{"role": "system", "content": SYSTEM_PROMPT}]
    compacted: set[int] = set()
    stored: dict[int, Stored] = {}
    call_id = 0

    def maybe_compact() -> None:
        nonlocal context
        aged = engine.age_tool_results(context).messages
        if engine.should_compress_preflight(aged):
            result = engine.compress(aged)
            if result.compacted_range is not None:
                start, end = result.compacted_range
                compacted.update(m["id"] for m in aged[start:end] if isinstance(m.get("id"), int))
            context = result.messages

    for turn in generate_session().turns:
        user, rounds, reply = turn_messages(turn, call_id)
        call_id += len(turn.tool_calls)
        for message in [*user, *(m for r in rounds for m in r), reply]:
            identifier = store(session, conversation_id, message)
            stored[identifier] = Stored(identifier, content_text(message.get("content")), turn.user)
            context.append({**message, "id": identifier})
            if message is not reply and message["role"] != "tool":
                maybe_compact()
        maybe_compact()
    session.commit()
    return Replayed(engine.age_tool_results(context).messages, compacted, stored)


def compacted_facts(stored: dict[int, Stored], compacted: set[int]) -> list[Fact]:
    """Each distinct fact of the compacted messages, with the first message that holds it."""
    extractor = FactExtractor()
    facts: dict[tuple[str, str], Fact] = {}
    for identifier in sorted(compacted):
        row = stored[identifier]
        for kind, value in extractor.extract(row.text):
            facts.setdefault((kind, value), Fact(kind, value, row))
    return list(facts.values())


def plausible_query(fact: Fact, extractor: FactExtractor) -> str:
    """What a model that lacks the value would search for (see the module docstring)."""
    text = fact.source.text
    at = text.find(fact.value)
    before = text[max(0, at - LABEL_CHARS) : at]
    words = [run for run in _RUN.findall(before) if run.isalpha() and len(run) > 1]  # not the parts of identifiers
    label = [word for word in words if word.lower() not in _STOP][-LABEL_WORDS:]
    orders = [value for kind, value in extractor.extract(before) if kind == "order" and value != fact.value]
    if not orders:
        orders = [value for kind, value in extractor.extract(fact.source.turn_ask) if kind == "order"]
    known = [order for order in orders[-1:] if order != fact.value]
    return " ".join([KIND_WORDS[fact.kind], *label, *known])


def search(registry: ToolRegistry, session: Session, ids: tuple[int, int], query: str) -> str:
    context = ToolContext(session=session, customer_id=ids[0], conversation_id=ids[1])
    result = registry.execute(TOOL_NAME, json.dumps({"query": query}), context)
    return "\n".join(str(item["snippet"]) for item in result.payload.get("results", []))


def build_database(directory: Path) -> Engine:
    engine = create_db_engine(f"sqlite:///{directory / 'recall.db'}")
    upgrade(engine)
    return engine


def measure_recall() -> dict[str, Any]:
    """The default compressor, and the same run without pinned identifiers, where the search has to find what the
    pins would have kept in the notes."""
    result = _run()
    result["without_pins"] = _run(pinned_budget_share=0.0)
    return result


def _run(**options: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        engine = build_database(Path(directory))
        try:
            return _measure(engine, options)
        finally:
            engine.dispose()


def _measure(engine: Engine, options: dict[str, Any]) -> dict[str, Any]:
    compressor = ContextCompressor(model=MAIN_MODEL, context_length=CONTEXT_LENGTH, summary_llm=ScriptedSummarizer(),
                                   summary_model_override=SUMMARY_MODEL, recall_hint=RECALL_HINT,
                                   **options)  # fmt: skip
    registry, extractor = build_tool_registry(), FactExtractor()
    with Session(engine) as session:
        customer = Customer(name="Jane Doe")
        session.add(customer)
        session.flush()
        assert customer.id is not None
        conversation = Conversation(customer_id=customer.id)
        session.add(conversation)
        session.flush()
        assert conversation.id is not None
        replayed = replay(session, conversation.id, compressor)
        facts = compacted_facts(replayed.stored, replayed.compacted)
        final_text = "\n".join(content_text(message.get("content")) for message in replayed.final)
        kinds: dict[str, Counter[str]] = {}
        misses = []
        for fact in facts:
            counts = kinds.setdefault(fact.kind, Counter())
            counts["facts"] += 1
            if fact.value in final_text:
                counts["in_context"] += 1
                continue
            query = plausible_query(fact, extractor)
            if fact.value in search(registry, session, (customer.id, conversation.id), query):
                counts["found"] += 1
            else:
                misses.append({"kind": fact.kind, "value": fact.value, "query": query, "message_id": fact.source.id})
    total = len(facts)
    in_context = sum(counts["in_context"] for counts in kinds.values())
    found = sum(counts["found"] for counts in kinds.values())
    return {
        "compactions": compressor.compression_count,
        "compacted_messages": len(replayed.compacted),
        "facts": total,
        "answerable_share": round((in_context + found) / total, 4) if total else None,
        "in_context_share": round(in_context / total, 4) if total else None,
        "found_by_search": found,
        "by_kind": {kind: dict(counts) for kind, counts in sorted(kinds.items())},
        "misses": misses[:MISSES_SHOWN],
        "missed": len(misses),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    print_report(measure_recall(), one_line=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
