"""Conversation search: the model looks up earlier turns of *this* conversation that compaction took out of its
context, through the database's full-text index (``0012_message_search``).

The transcript keeps every turn, so a detail the notes left out (an order number, an amount, a date) is still
there. Only rows the model could have seen are searched: this conversation's message text and tool results, never
private staff notes nor system rows, never another conversation's. Matching and ranking are the database's (FTS5
``bm25`` on SQLite, ``ts_rank`` on PostgreSQL). Each word of the query is searched as a phrase of its parts, as the
database's tokenizer splits them, so "#W2378156", "RMA-1234" or "jane@example.com" find exactly that identifier,
and the words are OR-ed: a message matching more of them ranks higher. Nothing of the query reaches the database
as syntax, so quotes, ``NEAR``, ``*`` or parentheses are plain words, and control characters are dropped.

A snippet shows up to ``MAX_FRAGMENTS`` places where the message matched, cut from the database's own highlighting
of the whole message (FTS5 ``highlight``, PostgreSQL ``ts_headline`` with ``HighlightAll``): a long tool result
often matches the order number in one place and the field the model asked about in another, and a single fragment
(FTS5 ``snippet``) would show only one of them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import Field
from sqlalchemy import bindparam, text
from sqlmodel import Session, col, select

from app.models import Message
from app.tools.registry import ErrorCode, ToolContext, ToolError
from app.tools.typed import ToolArguments, TypedTool

TOOL_NAME = "search_conversation"
# The sentence the notes on earlier turns carry (``app.turns.context_engines``, ``app.turns.context``).
RECALL_HINT = (
    f"Every earlier turn is still kept in full: call {TOOL_NAME} to look up an exact detail (an order or tracking "
    "number, an amount, a date) that these notes do not give."
)
SEARCH_TABLE = "messages_search"
MAX_QUERY_CHARS = 300
MAX_PHRASES = 16
MAX_PHRASE_PARTS = 8
DEFAULT_RESULTS = 5
MAX_RESULTS = 10
MAX_FRAGMENTS = 3
FRAGMENT_RADIUS = 90
MAX_SNIPPET_CHARS = 600
# Private-use characters mark the matches in the database's highlighting; they never reach the model.
OPEN_MARK, CLOSE_MARK = "\ue000", "\ue001"
# The PostgreSQL index expression of 0012_message_search, repeated exactly so that the planner uses the index.
PG_DOCUMENT = "left(coalesce(messages.content, ''), 200000)"
PG_VECTOR = f"to_tsvector('english'::regconfig, {PG_DOCUMENT})"
_PART = re.compile(r"[^\W_]+")
# PostgreSQL's parser reads an email or "RMA-1234" as tokens of their own, so a word keeps that punctuation; control
# characters and lone surrogates go (the driver refuses NUL and cannot encode a surrogate).
_NOT_FOR_POSTGRES = re.compile(r"[^\w@.+#$%/'-]+")
_MARKED = re.compile(f"{OPEN_MARK}(.*?){CLOSE_MARK}", re.DOTALL)
SPEAKERS = {"customer": "customer", "bot": "assistant", "staff": "staff member", "system": "tool result"}


class SearchConversationArguments(ToolArguments):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description='A few words or an identifier to look for, e.g. "tracking number order #W1234567".',
    )
    limit: int = Field(default=DEFAULT_RESULTS, ge=1, le=MAX_RESULTS, description="How many messages to return.")


@dataclass(frozen=True)
class Phrase:
    """One word of the query: its parts as SQLite's tokenizer splits them, and its text for PostgreSQL's parser."""

    parts: tuple[str, ...]
    text: str

    def fts5(self) -> str:
        return '"' + " ".join(self.parts) + '"'  # parts are letters and digits only: nothing to escape


def query_phrases(query: str) -> list[Phrase]:
    """The query's words that hold a letter or digit, deduplicated, at most ``MAX_PHRASES``."""
    phrases: dict[tuple[str, ...], Phrase] = {}
    for word in query.split():
        parts = tuple(part.lower() for part in _PART.findall(word))[:MAX_PHRASE_PARTS]
        if parts and parts not in phrases:
            phrases[parts] = Phrase(parts, _NOT_FOR_POSTGRES.sub(" ", word).strip() or " ".join(parts))
    return list(phrases.values())[:MAX_PHRASES]


@dataclass(frozen=True)
class Hit:
    message_id: int
    marked: str  # the message text with every match between OPEN_MARK and CLOSE_MARK


def search_sqlite(session: Session, conversation_id: int, phrases: list[Phrase], limit: int) -> list[Hit]:
    match = " OR ".join(phrase.fts5() for phrase in phrases)
    ranked = session.execute(
        text(
            f"SELECT messages.id FROM {SEARCH_TABLE} JOIN messages ON messages.id = {SEARCH_TABLE}.rowid "
            f"WHERE {SEARCH_TABLE} MATCH :match AND messages.conversation_id = :conversation "
            "AND NOT messages.private AND messages.role != 'system' "
            f"ORDER BY bm25({SEARCH_TABLE}), messages.id DESC LIMIT :limit"
        ),
        {"match": match, "conversation": conversation_id, "limit": limit},
    ).all()
    ids = [int(row[0]) for row in ranked]
    if not ids:
        return []
    highlighted = session.execute(
        text(
            f"SELECT rowid, highlight({SEARCH_TABLE}, 0, :open, :close) FROM {SEARCH_TABLE} "
            f"WHERE {SEARCH_TABLE} MATCH :match AND rowid IN :ids"
        ).bindparams(bindparam("ids", expanding=True)),
        {"match": match, "open": OPEN_MARK, "close": CLOSE_MARK, "ids": ids},
    ).all()
    marked = {int(row[0]): str(row[1] or "") for row in highlighted}
    return [Hit(identifier, marked.get(identifier, "")) for identifier in ids]


def search_postgres(session: Session, conversation_id: int, phrases: list[Phrase], limit: int) -> list[Hit]:
    tsquery = " || ".join(f"phraseto_tsquery('english'::regconfig, :p{index})" for index in range(len(phrases)))
    options = f"HighlightAll=true, StartSel={OPEN_MARK}, StopSel={CLOSE_MARK}"
    rows = session.execute(
        text(
            f"WITH search AS (SELECT {tsquery} AS q), ranked AS ("
            f"SELECT messages.id, ts_rank({PG_VECTOR}, search.q) AS score FROM messages, search "
            f"WHERE {PG_VECTOR} @@ search.q AND messages.conversation_id = :conversation "
            "AND NOT messages.private AND messages.role <> 'system' "
            "ORDER BY score DESC, messages.id DESC LIMIT :limit) "
            f"SELECT ranked.id, ts_headline('english'::regconfig, {PG_DOCUMENT}, search.q, :options) "
            "FROM ranked JOIN messages ON messages.id = ranked.id CROSS JOIN search "
            "ORDER BY ranked.score DESC, ranked.id DESC"
        ),
        {
            **{f"p{index}": phrase.text for index, phrase in enumerate(phrases)},
            "conversation": conversation_id,
            "limit": limit,
            "options": options,
        },
    ).all()
    return [Hit(int(row[0]), str(row[1] or "")) for row in rows]


def snippet(marked: str) -> str:
    """The text around up to ``MAX_FRAGMENTS`` matched words, shown in text order; the text's start when nothing is
    marked. Identifiers (words with a digit) come first, then the words this message holds least often: in a list
    of orders, the line of the order asked about matters, not the header or a status that repeats on every line."""
    plain, spans = _unmark(marked)
    if not spans:
        return _clip(plain, 0, MAX_SNIPPET_CHARS)
    counts = Counter(word for _, _, word in spans)
    first: dict[str, tuple[int, int]] = {}
    for start, end, word in spans:
        first.setdefault(word, (start, end))
    words = sorted(first, key=lambda word: (not _has_digit(word), counts[word], first[word][0]))[:MAX_FRAGMENTS]
    ranges: list[tuple[int, int]] = []
    for start, end in sorted(first[word] for word in words):
        start, end = max(0, start - FRAGMENT_RADIUS), min(len(plain), end + FRAGMENT_RADIUS)
        if ranges and start <= ranges[-1][1]:
            start = ranges.pop()[0]
        ranges.append((start, end))
    budget = MAX_SNIPPET_CHARS // len(ranges)
    return " ".join(_clip(plain, start, min(end - start, budget)) for start, end in ranges)


def _has_digit(word: str) -> bool:
    return any(char.isdigit() for char in word)


def _unmark(marked: str) -> tuple[str, list[tuple[int, int, str]]]:
    """The text without marks, and each match as (start, end, lower-cased word) in it."""
    plain: list[str] = []
    spans: list[tuple[int, int, str]] = []
    length = cursor = 0
    for found in _MARKED.finditer(marked):
        before = marked[cursor : found.start()]
        plain.append(before)
        length += len(before)
        word = found.group(1)
        spans.append((length, length + len(word), word.lower()))
        plain.append(word)
        length += len(word)
        cursor = found.end()
    plain.append(marked[cursor:])
    return "".join(plain).replace(OPEN_MARK, "").replace(CLOSE_MARK, ""), spans


def _clip(text_: str, start: int, size: int) -> str:
    piece = " ".join(text_[start : start + size].split())
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + size < len(text_) else ""
    return f"{prefix}{piece}{suffix}"


def purge_deleted_text(session: Session) -> None:
    """Rewrite the SQLite index so that deleted messages' text leaves its shadow tables now: FTS5 otherwise keeps it
    under delete markers until a later merge. Costs a pass over the whole index, so only erasure calls it. On
    PostgreSQL the GIN index keeps the stemmed words of deleted rows until VACUUM reclaims them; nothing is done."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(text(f"INSERT INTO {SEARCH_TABLE}({SEARCH_TABLE}) VALUES ('optimize')"))


class SearchConversationTool(TypedTool[SearchConversationArguments]):
    name = TOOL_NAME
    description = (
        "Search every earlier message of this conversation, including turns that were condensed into notes, and "
        "tool results. Use it to look up an exact detail (an order or tracking number, an amount, a date, what the "
        "customer said) instead of guessing. Write a few words or an identifier; returns the best matching "
        "messages with their number, speaker, time and the text around the match."
    )
    arguments_model = SearchConversationArguments

    def run(self, arguments: SearchConversationArguments, context: ToolContext) -> dict[str, Any]:
        if context.conversation_id is None:
            raise ToolError(ErrorCode.NO_CONVERSATION, "There is no conversation to search.")
        phrases = query_phrases(arguments.query)
        if not phrases:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENTS, "The query has no letters or digits; search for words or an identifier."
            )
        search = search_postgres if context.session.get_bind().dialect.name == "postgresql" else search_sqlite
        hits = search(context.session, context.conversation_id, phrases, arguments.limit)
        # A lone surrogate could not be stored with the tool result, so the echo replaces it.
        echo = arguments.query.encode("utf-8", "replace").decode("utf-8")
        payload: dict[str, Any] = {"query": echo, "results": self._results(context.session, hits)}
        if not hits:
            payload["note"] = "No earlier message matches. Try other words, or ask the customer."
        return payload

    @staticmethod
    def _results(session: Session, hits: list[Hit]) -> list[dict[str, Any]]:
        if not hits:
            return []
        statement = select(Message).where(col(Message.id).in_([hit.message_id for hit in hits]))
        rows = {row.id: row for row in session.exec(statement).all()}
        results = []
        for hit in hits:
            row = rows.get(hit.message_id)
            if row is None:
                continue
            results.append(
                {
                    "message_id": hit.message_id,
                    "speaker": SPEAKERS.get(row.author.value, row.author.value),
                    "role": row.role.value,
                    "at": row.created_at.isoformat(),
                    "snippet": snippet(hit.marked),
                }
            )
        return results
