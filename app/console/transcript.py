"""The full transcript of a conversation as staff read it: every message (private notes included), tool calls
folded to one line each, and each compaction as a card where it happened.

Never the compacted view the LLM gets: the transcript is the ``messages`` table, in order. A tool call and its
result become one line ("looked up order #W2378156: shipped") that expands to the arguments and the result JSON. A
compaction's card follows the last message it covers and shows its summary, range, token counts, the model that
wrote it and its key decisions with their outbox state and the memory each became.

Long conversations open on their latest page (``TRANSCRIPT_PAGE_MESSAGES`` messages); earlier pages come one at a
time, each ending where the next begins, so every message is on exactly one page. A tool result is on its call's page
and a compaction card on the page of the last message it covers. Four queries a page whatever the length.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from app.knowledge.citations import sources_by_message
from app.models import (
    Compaction,
    Conclusion,
    Message,
    MessageAuthor,
    MessageRole,
    OutboxStatus,
    SourcePublic,
    StaffMember,
)

# The messages a page of the transcript holds (a few more when tool results follow its first message).
TRANSCRIPT_PAGE_MESSAGES = 100
# How many calling messages back the caller of a tool result is looked for (see ``_called_before``).
CALLER_LOOKBACK = 20
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
    "search_knowledge": "searched the knowledge for “{query}”",
    "transfer_to_human": "handed the conversation to a person",
}
GIST_KEYS = ("status", "message", "summary", "total_orders")


# Only what the transcript shows is read from a message row.
MESSAGE_COLUMNS = (
    col(Message.id),
    col(Message.role),
    col(Message.author),
    col(Message.content),
    col(Message.private),
    col(Message.created_at),
    col(Message.tool_calls),
    col(Message.tool_call_id),
)


class MessageFields(Protocol):
    """What a transcript entry is built from: a ``Message`` or a row of ``MESSAGE_COLUMNS``."""

    @property
    def id(self) -> int | None: ...
    @property
    def role(self) -> MessageRole: ...
    @property
    def author(self) -> MessageAuthor: ...
    @property
    def content(self) -> str | None: ...
    @property
    def private(self) -> bool: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def tool_calls(self) -> list[dict[str, Any]] | None: ...


class ResultFields(Protocol):
    @property
    def content(self) -> str | None: ...


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
    staff_name: str | None
    tool_lines: list[ToolLine] = field(default_factory=list)
    sources: Sequence[SourcePublic] = ()  # the knowledge a bot reply cites


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


@dataclass(frozen=True)
class TranscriptPage:
    entries: list[TranscriptEntry]
    earlier_before: int | None  # when earlier messages exist: the id "Show earlier messages" pages back from
    last_message_id: int  # the newest message on the page (0 when there is none)


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


def tool_lines(message: MessageFields, results: Mapping[str, ResultFields]) -> list[ToolLine]:
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


def _cards(session: Session, conversation_id: int, start_id: int, end_before: int | None) -> list[CompactionCard]:
    """The cards of the compactions whose last message is in ``[start_id, end_before)``, in transcript order."""
    conditions = [col(Compaction.conversation_id) == conversation_id, col(Compaction.last_message_id) >= start_id]
    if end_before is not None:
        conditions.append(col(Compaction.last_message_id) < end_before)
    compactions = session.exec(
        select(Compaction).where(*conditions).order_by(col(Compaction.last_message_id), col(Compaction.id))
    ).all()
    if not compactions:
        return []
    conclusions = session.exec(
        select(Conclusion)
        .where(
            col(Conclusion.conversation_id) == conversation_id,
            col(Conclusion.source_message_last_id).in_({c.last_message_id for c in compactions}),
        )
        .order_by(col(Conclusion.id))
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


def _page_start(session: Session, conversation_id: int, before_id: int | None) -> tuple[int, bool]:
    """(the first message id of the page that ends before ``before_id``, whether earlier messages exist).

    A page holds the ``TRANSCRIPT_PAGE_MESSAGES`` messages before ``before_id`` (all the latest ones without it),
    widened back to a message that is not a tool result: a result stays on its caller's page. One query.
    """
    in_conversation = col(Message.conversation_id) == conversation_id
    bounded = [in_conversation] if before_id is None else [in_conversation, col(Message.id) < before_id]
    oldest_counted = (
        sa_select(col(Message.id))
        .where(*bounded)
        .order_by(col(Message.id).desc())
        .offset(TRANSCRIPT_PAGE_MESSAGES - 1)
        .limit(1)
        .scalar_subquery()
    )
    start = (
        sa_select(func.max(Message.id))
        .where(in_conversation, col(Message.role) != MessageRole.TOOL, col(Message.id) <= oldest_counted)
        .scalar_subquery()
    )
    first = sa_select(func.min(Message.id)).where(in_conversation).scalar_subquery()
    start_id, first_id = session.execute(sa_select(start, first)).one()
    if start_id is None:  # the whole conversation before ``before_id`` fits on the page
        return 0, False
    return int(start_id), first_id is not None and first_id < start_id


def _message_rows(session: Session, conversation_id: int, start_id: int, end_before: int | None) -> list[Any]:
    conditions = [col(Message.conversation_id) == conversation_id, col(Message.id) >= start_id]
    if end_before is not None:
        conditions.append(col(Message.id) < end_before)
    return list(
        session.execute(
            sa_select(*MESSAGE_COLUMNS, col(StaffMember.name).label("staff_name"))
            .outerjoin(StaffMember, col(StaffMember.id) == col(Message.staff_id))
            .where(*conditions)
            .order_by(col(Message.id))
        ).all()
    )


def _results_after(session: Session, conversation_id: int, end_before: int, call_ids: set[str]) -> dict[str, Any]:
    """Results written after the page's end for calls on the page (a message came in between call and result)."""
    found = session.execute(
        sa_select(col(Message.tool_call_id), col(Message.content)).where(
            col(Message.conversation_id) == conversation_id,
            col(Message.id) >= end_before,
            col(Message.role) == MessageRole.TOOL,
            col(Message.tool_call_id).in_(call_ids),
        )
    ).all()
    return {row.tool_call_id: row for row in found}


def _called_before(session: Session, conversation_id: int, start_id: int, call_ids: set[str]) -> set[str]:
    """Which of these results answer a call on an earlier page (they are shown there, folded into its line).

    A turn runs its tool calls before its next model call, so a result's caller is among the latest calling
    messages before it: ``CALLER_LOOKBACK`` of them are plenty.
    """
    callers = session.execute(
        sa_select(col(Message.tool_calls))
        .where(
            col(Message.conversation_id) == conversation_id,
            col(Message.id) < start_id,
            col(Message.role) == MessageRole.ASSISTANT,
            col(Message.tool_calls).is_not(None),
        )
        .order_by(col(Message.id).desc())
        .limit(CALLER_LOOKBACK)
    ).all()
    return {str(call.get("id")) for row in callers for call in row.tool_calls or []} & call_ids


def load_transcript(
    session: Session, conversation_id: int, *, before_id: int | None = None, through_latest: bool = True
) -> TranscriptPage:
    """A page of the transcript: the messages before ``before_id`` (the latest without it), through the latest
    message when ``through_latest``, with each compaction card after the last message it covers.

    Five queries (page start, messages, compactions, conclusions, cited sources); one more in the rare case a
    message came between a tool call and its result right at a page boundary.
    """
    start_id, has_earlier = _page_start(session, conversation_id, before_id)
    end_before = None if through_latest else before_id
    rows = _message_rows(session, conversation_id, start_id, end_before)
    calls = {str(call.get("id")) for row in rows for call in row.tool_calls or []}
    results: dict[str, Any] = {r.tool_call_id: r for r in rows if r.role == MessageRole.TOOL and r.tool_call_id}
    if end_before is not None and calls - results.keys():
        results.update(_results_after(session, conversation_id, end_before, calls - results.keys()))
    strays = {r.tool_call_id for r in rows if r.role == MessageRole.TOOL and r.tool_call_id} - calls
    folded = calls | (_called_before(session, conversation_id, start_id, strays) if strays and has_earlier else set())
    cards = _cards(session, conversation_id, start_id, end_before)
    cited = sources_by_message(session, [row.id for row in rows if row.role == MessageRole.ASSISTANT])
    entries: list[TranscriptEntry] = []
    for row in rows:
        while cards and cards[0].last_message_id < row.id:  # a card whose last message is gone goes where it was
            entries.append(TranscriptEntry(compaction=cards.pop(0)))
        if not (row.role == MessageRole.TOOL and row.tool_call_id in folded):
            entries.append(TranscriptEntry(message=message_view(row, row.staff_name, results, cited.get(row.id, ()))))
    entries += [TranscriptEntry(compaction=card) for card in cards]
    newest = rows[-1].id if rows else 0
    return TranscriptPage(entries, rows[0].id if has_earlier and rows else None, newest)


def message_view(
    message: MessageFields,
    staff_name: str | None,
    results: Mapping[str, ResultFields],
    sources: Sequence[SourcePublic] = (),
) -> TranscriptMessage:
    assert message.id is not None
    return TranscriptMessage(
        id=message.id,
        role=message.role,
        author=message.author,
        content=message.content or "",
        private=message.private,
        created_at=message.created_at,
        staff_name=staff_name,
        tool_lines=tool_lines(message, results),
        sources=sources,
    )
