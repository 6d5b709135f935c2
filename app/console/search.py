"""Search across conversations for staff (``/console/search``): by what was written, and by who and what it was
about.

- **Identifiers first.** A word that is an order number, a tracking number, a shop customer id, an email or a
  customer's public id finds that customer's conversations at once (unique indexes), ranked above any text match.
- **Names.** A customer whose name holds the whole query.
- **Text.** The transcript's full-text index (``0012_message_search``: FTS5 ``bm25`` on SQLite, ``ts_rank`` over
  the GIN index on PostgreSQL), every word required, each searched as a phrase of its parts the way
  ``app.tools.conversation_search`` does, so nothing of the query reaches the database as syntax. One row per
  conversation, with the best matching message's snippet, its matches marked.

Private notes and system rows are not in the index, so they are not found by their text. Erased customers' rows are
gone, so nothing of them is found.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, text
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from app.models import Conversation, ConversationStatus, Customer, Order, Shipment
from app.tools.conversation_search import (
    CLOSE_MARK,
    OPEN_MARK,
    PG_DOCUMENT,
    PG_VECTOR,
    SEARCH_TABLE,
    Phrase,
    query_phrases,
)

RESULTS_SHOWN = 20
TEXT_CANDIDATES = 200  # matching messages read to find RESULTS_SHOWN conversations
PER_CUSTOMER = 5
SNIPPET_TOKENS = 18
MAX_QUERY_CHARS = 200


@dataclass(frozen=True)
class SearchResult:
    conversation: str  # public id
    customer: str
    status: ConversationStatus
    updated_at: datetime
    reason: str  # why it matched: "order #W…", "customer email", or "" for a text match
    snippet: str  # marked with OPEN_MARK / CLOSE_MARK


def search(session: Session, query: str) -> list[SearchResult]:
    """The conversations ``query`` finds, best first (ends its read transaction)."""
    query = " ".join(query.split())[:MAX_QUERY_CHARS]
    phrases = query_phrases(query)
    if not phrases:
        return []
    found: dict[int, tuple[str, str]] = {}  # conversation id -> (reason, snippet), in rank order
    for customer_id, reason in _customers_by_identifier(session, query):
        for conversation_id in _latest_conversations(session, customer_id):
            found.setdefault(conversation_id, (reason, ""))
    hits = _text_hits_postgres(session, phrases) if _dialect(session) == "postgresql" else _text_hits(session, phrases)
    for conversation_id, marked in hits:
        if len(found) >= RESULTS_SHOWN:
            break
        found.setdefault(conversation_id, ("", marked))
    results = _rows(session, found)
    session.commit()
    return results


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


def _customers_by_identifier(session: Session, query: str) -> list[tuple[int, str]]:
    words = {word.strip(".,;:!?()[]\"'") for word in query.split()}
    words.discard("")
    numbers = words | {f"#{word}" for word in words if not word.startswith("#")}
    lowered = {word.lower() for word in words}
    matches: list[tuple[int, str]] = []
    for customer_id, number in session.execute(
        sa_select(col(Order.customer_id), col(Order.number)).where(col(Order.number).in_(numbers))
    ).all():
        matches.append((int(customer_id), f"order {number}"))
    tracked = sa_select(col(Order.customer_id), col(Shipment.tracking_number)).join(
        Shipment, col(Shipment.order_id) == col(Order.id)
    )
    for customer_id, number in session.execute(tracked.where(col(Shipment.tracking_number).in_(words))).all():
        matches.append((int(customer_id), f"tracking number {number}"))
    identified = sa_select(col(Customer.id), col(Customer.external_id), col(Customer.email), col(Customer.public_id))
    for customer_id, external_id, _, public_id in session.execute(
        identified.where(
            or_(
                col(Customer.external_id).in_(words),
                func.lower(col(Customer.email)).in_(lowered),
                col(Customer.public_id).in_(words),
            )
        )
    ).all():
        reason = (
            "shop customer id" if external_id in words else "customer id" if public_id in words else "customer email"
        )
        matches.append((int(customer_id), reason))
    escaped = query.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    for (customer_id,) in session.execute(
        sa_select(col(Customer.id))
        .where(func.lower(col(Customer.name)).like(f"%{escaped}%", escape="\\"))
        .order_by(col(Customer.id).desc())
        .limit(RESULTS_SHOWN)
    ).all():
        matches.append((int(customer_id), "customer name"))
    return matches


def _latest_conversations(session: Session, customer_id: int) -> list[int]:
    rows = session.execute(
        sa_select(col(Conversation.id))
        .where(col(Conversation.customer_id) == customer_id)
        .order_by(col(Conversation.updated_at).desc(), col(Conversation.id).desc())
        .limit(PER_CUSTOMER)
    ).all()
    return [int(row[0]) for row in rows]


def _text_hits(session: Session, phrases: list[Phrase]) -> list[tuple[int, str]]:
    """The best matching message of each conversation, best first (FTS5)."""
    match = " ".join(phrase.fts5() for phrase in phrases)  # every phrase required
    rows = session.execute(
        text(
            f"SELECT messages.conversation_id, snippet({SEARCH_TABLE}, 0, :open, :close, '…', :tokens) "
            f"FROM {SEARCH_TABLE} JOIN messages ON messages.id = {SEARCH_TABLE}.rowid "
            f"WHERE {SEARCH_TABLE} MATCH :match AND NOT messages.private AND messages.role != 'system' "
            f"ORDER BY bm25({SEARCH_TABLE}), messages.id DESC LIMIT :limit"
        ),
        {"match": match, "open": OPEN_MARK, "close": CLOSE_MARK, "tokens": SNIPPET_TOKENS, "limit": TEXT_CANDIDATES},
    ).all()
    return _best_per_conversation(rows)


def _text_hits_postgres(session: Session, phrases: list[Phrase]) -> list[tuple[int, str]]:
    tsquery = " && ".join(f"phraseto_tsquery('english'::regconfig, :p{index})" for index in range(len(phrases)))
    options = f"StartSel={OPEN_MARK}, StopSel={CLOSE_MARK}, MaxWords={SNIPPET_TOKENS}, MinWords=6"
    rows = session.execute(
        text(
            f"WITH search AS (SELECT {tsquery} AS q), ranked AS ("
            f"SELECT messages.id, messages.conversation_id, ts_rank({PG_VECTOR}, search.q) AS score "
            f"FROM messages, search WHERE {PG_VECTOR} @@ search.q "
            "AND NOT messages.private AND messages.role <> 'system' "
            "ORDER BY score DESC, messages.id DESC LIMIT :limit) "
            f"SELECT ranked.conversation_id, ts_headline('english'::regconfig, {PG_DOCUMENT}, search.q, :options) "
            "FROM ranked JOIN messages ON messages.id = ranked.id CROSS JOIN search "
            "ORDER BY ranked.score DESC, ranked.id DESC"
        ),
        {
            **{f"p{index}": phrase.text for index, phrase in enumerate(phrases)},
            "limit": TEXT_CANDIDATES,
            "options": options,
        },
    ).all()
    return _best_per_conversation(rows)


def _best_per_conversation(rows: Iterable[Any]) -> list[tuple[int, str]]:
    best: dict[int, str] = {}
    for conversation_id, marked in rows:
        best.setdefault(int(conversation_id), str(marked or ""))
    return list(best.items())


def _rows(session: Session, found: dict[int, tuple[str, str]]) -> list[SearchResult]:
    if not found:
        return []
    rows = session.execute(
        sa_select(
            col(Conversation.id),
            col(Conversation.public_id),
            col(Conversation.status),
            col(Conversation.updated_at),
            col(Customer.name),
        )
        .join(Customer, col(Customer.id) == col(Conversation.customer_id))
        .where(col(Conversation.id).in_(list(found)))
    ).all()
    by_id = {int(row[0]): row for row in rows}
    results = []
    for conversation_id, (reason, marked) in list(found.items())[:RESULTS_SHOWN]:
        row = by_id.get(conversation_id)
        if row is not None:
            status = ConversationStatus(row[2])
            results.append(SearchResult(row[1], row[4] or "visitor", status, row[3], reason, marked))
    return results
