"""The full transcript of a conversation as staff read it: every message (private notes included), tool calls
folded to one line each, and each compaction as a card where it happened.

Never the compacted view the LLM gets: the transcript is the ``messages`` table, in order. A tool call and its
result become one line ("looked up order #W2378156: shipped") that expands to the arguments and the result JSON. A
compaction's card follows the last message it covers and shows its summary, range, token counts, the model that
wrote it and its key decisions with their outbox state and the memory each became.

Three queries whatever the length: messages with their agents' names, compactions, conclusions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlmodel import Session, col, select

from app.models import (
    Agent,
    Compaction,
    Conclusion,
    Message,
    MessageAuthor,
    MessageRole,
    OutboxStatus,
)

ARGUMENT_PREVIEW_CHARS = 60
GIST_CHARS = 80
# How a call reads on its one line; ``{name}`` placeholders come from the call's arguments.
TOOL_PHRASES: dict[str, str] = {
    "get_order": "looked up order {order_number}",
    "track_shipment": "tracked the shipment of {order_number}",
    "list_orders": "listed the customer's orders",
    "cancel_order": "cancelled order {order_number}",
    "request_refund": "requested a refund for {order_number}",
    "change_shipping_address": "changed the shipping address of {order_number}",
    "search_help_articles": "searched the help center for “{query}”",
    "transfer_to_human": "handed the conversation to a person",
}
GIST_KEYS = ("status", "message", "summary", "total_orders")


@dataclass(frozen=True)
class ToolLine:
    call_id: str
    name: str
    summary: str
    arguments: str
    result: str | None
    failed: bool


@dataclass
class TranscriptMessage:
    id: int
    role: MessageRole
    author: MessageAuthor
    content: str
    private: bool
    created_at: datetime
    agent_name: str | None
    tool_lines: list[ToolLine] = field(default_factory=list)


@dataclass(frozen=True)
class DecisionView:
    kind: str
    text: str
    due_date: date | None
    status: OutboxStatus
    memory_id: str | None
    last_error: str | None


@dataclass(frozen=True)
class CompactionCard:
    id: int
    first_message_id: int
    last_message_id: int
    summary: str
    tokens_before: int
    tokens_after: int
    model_label: str
    created_at: datetime
    decisions: list[DecisionView]


@dataclass(frozen=True)
class TranscriptEntry:
    message: TranscriptMessage | None = None
    compaction: CompactionCard | None = None


class _Placeholders(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def _arguments(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _short(value: Any, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_phrase(name: str, arguments: Mapping[str, Any]) -> str:
    phrase = TOOL_PHRASES.get(name, f"called {name}")
    values = _Placeholders({key: _short(value, ARGUMENT_PREVIEW_CHARS) for key, value in arguments.items()})
    return phrase.format_map(values)


def result_gist(content: str | None) -> tuple[str, bool]:
    """(a few words on what a tool returned, whether it failed)."""
    if content is None:
        return "no result yet", False
    try:
        value = json.loads(content)
    except ValueError:
        return _short(content, GIST_CHARS), False
    if not isinstance(value, dict):
        return "done", False
    error = value.get("error")
    if isinstance(error, dict):
        return f"failed: {_short(error.get('message') or error.get('code') or 'error', GIST_CHARS)}", True
    for holder in (value, *(nested for nested in value.values() if isinstance(nested, dict))):
        for key in GIST_KEYS:
            if holder.get(key) not in (None, ""):
                return _short(holder[key], GIST_CHARS), False
    return "done", False


def tool_lines(message: Message, results: Mapping[str, Message]) -> list[ToolLine]:
    lines = []
    for call in message.tool_calls or []:
        function = call.get("function") or {}
        name = str(function.get("name") or "tool")
        raw_arguments = function.get("arguments")
        call_id = str(call.get("id") or "")
        result = results.get(call_id)
        gist, failed = result_gist(result.content if result else None)
        lines.append(
            ToolLine(
                call_id=call_id,
                name=name,
                summary=f"{call_phrase(name, _arguments(raw_arguments))}: {gist}",
                arguments=raw_arguments if isinstance(raw_arguments, str) else json.dumps(raw_arguments),
                result=result.content if result else None,
                failed=failed,
            )
        )
    return lines


def model_label(compaction: Compaction) -> str:
    """Who wrote a compaction's summary: the override (summary) model, the main model, or the fallback."""
    if compaction.fallback_used or not compaction.summary_model:
        return "deterministic fallback (no model answered)"
    if compaction.summary_model == compaction.main_model:
        return f"main model {compaction.summary_model}"
    return f"summary model {compaction.summary_model}"


def _cards(session: Session, conversation_id: int) -> list[CompactionCard]:
    compactions = session.exec(
        select(Compaction).where(Compaction.conversation_id == conversation_id).order_by(col(Compaction.id))
    ).all()
    if not compactions:
        return []
    conclusions = session.exec(
        select(Conclusion).where(Conclusion.conversation_id == conversation_id).order_by(col(Conclusion.id))
    ).all()
    by_range: dict[tuple[int | None, int | None], list[DecisionView]] = {}
    for row in conclusions:
        view = DecisionView(row.kind.value, row.text, row.due_date, row.status, row.memory_id, row.last_error)
        by_range.setdefault((row.source_message_first_id, row.source_message_last_id), []).append(view)
    cards = []
    for compaction in compactions:
        assert compaction.id is not None
        cards.append(
            CompactionCard(
                id=compaction.id,
                first_message_id=compaction.first_message_id,
                last_message_id=compaction.last_message_id,
                summary=compaction.summary,
                tokens_before=compaction.tokens_before,
                tokens_after=compaction.tokens_after,
                model_label=model_label(compaction),
                created_at=compaction.created_at,
                decisions=by_range.get((compaction.first_message_id, compaction.last_message_id), []),
            )
        )
    return cards


def load_transcript(session: Session, conversation_id: int, *, after_id: int = 0) -> list[TranscriptEntry]:
    """Messages after ``after_id`` in order, with compaction cards after the last message each covers."""
    rows = session.exec(
        select(Message, Agent.name)
        .outerjoin(Agent, col(Agent.id) == col(Message.agent_id))
        .where(Message.conversation_id == conversation_id, col(Message.id) > after_id)
        .order_by(col(Message.id))
    ).all()
    results = {m.tool_call_id: m for m, _ in rows if m.role == MessageRole.TOOL and m.tool_call_id}
    folded = {call.get("id") for m, _ in rows for call in (m.tool_calls or [])}
    cards_after: dict[int, list[CompactionCard]] = {}
    for card in _cards(session, conversation_id) if after_id == 0 else []:
        cards_after.setdefault(card.last_message_id, []).append(card)
    entries: list[TranscriptEntry] = []
    for message, agent_name in rows:
        assert message.id is not None
        if not (message.role == MessageRole.TOOL and message.tool_call_id in folded):
            entries.append(TranscriptEntry(message=message_view(message, agent_name, results)))
        entries += [TranscriptEntry(compaction=card) for card in cards_after.get(message.id, [])]
    return entries


def message_view(message: Message, agent_name: str | None, results: Mapping[str, Message]) -> TranscriptMessage:
    assert message.id is not None
    return TranscriptMessage(
        id=message.id,
        role=message.role,
        author=message.author,
        content=message.content or "",
        private=message.private,
        created_at=message.created_at,
        agent_name=agent_name,
        tool_lines=tool_lines(message, results),
    )


def last_message_id(entries: list[TranscriptEntry], default: int = 0) -> int:
    ids = [entry.message.id for entry in entries if entry.message is not None]
    return max(ids, default=default)
