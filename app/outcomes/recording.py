"""Writes of ``ConversationOutcome`` rows, each one ``INSERT … ON CONFLICT DO UPDATE`` in the caller's transaction.

An upsert rather than a read then a write: the row may not exist yet (it is made by the first event that needs it),
two server processes may record events of one conversation at once, and a write that never reads cannot act on a
stale copy.

The first replies are recorded by ``store_message`` (``app.live.messages``), which every bot and staff message
goes through. To keep a normal turn free of extra statements, this process remembers the conversations whose first
replies it knows are recorded (``FirstReplies``); a process that does not know yet sends one upsert that keeps the
earlier time (``coalesce``) and from then on remembers it.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from app.models import Conversation, ConversationStatus, MessageAuthor, utc_now
from app.models.outcomes import ConversationOutcome, HandoffReason, Resolution
from app.outcomes.sql_time import seconds_between

OUTCOMES: sa.Table = ConversationOutcome.__table__  # type: ignore[attr-defined]  # SQLModel declares it at runtime
CONVERSATIONS: sa.Table = Conversation.__table__  # type: ignore[attr-defined]
# How many conversations a process remembers as having their first replies recorded: enough for every conversation
# active in a day on one server; forgetting one costs one idempotent upsert.
REMEMBERED_CONVERSATIONS = 50_000
FIRST_REPLY_COLUMNS = {MessageAuthor.BOT: "first_bot_reply_at", MessageAuthor.STAFF: "first_human_reply_at"}
RESPONSE_COLUMNS = {MessageAuthor.BOT: "bot_response_s", MessageAuthor.STAFF: "human_response_s"}


def _started(conversation_id: int) -> Any:
    """The conversation's start, read inside the statement that needs it (no statement of its own)."""
    return sa.select(CONVERSATIONS.c.created_at).where(CONVERSATIONS.c.id == conversation_id).scalar_subquery()


def _upsert(session: Session, conversation_id: int, inserted: dict[str, Any], updated: dict[str, Any]) -> None:
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    now = utc_now()
    statement = insert(OUTCOMES).values(
        conversation_id=conversation_id, started_at=_started(conversation_id), updated_at=now, **inserted
    )
    statement = statement.on_conflict_do_update(
        index_elements=[OUTCOMES.c.conversation_id], set_={**updated, "updated_at": now}
    )
    session.execute(statement)


def _defaults(**values: Any) -> dict[str, Any]:
    """An inserted row's values: the table's defaults, which a Core insert does not apply, under ``values``."""
    return {"resolution": Resolution.OPEN.value, "reopen_count": 0, **values}


def record_handoff(
    session: Session, conversation_id: int, reason: HandoffReason, *, at: datetime | None = None
) -> None:
    """The conversation was handed to a person for ``reason``; a later handoff's reason replaces an earlier one."""
    when = at or utc_now()
    values = {"handoff_reason": reason.value, "handed_off_at": when}
    _upsert(session, conversation_id, _defaults(**values), values)


def record_first_reply(session: Session, conversation_id: int, author: MessageAuthor, at: datetime) -> None:
    """``at`` as the first bot or staff reply, with its delay, unless an earlier one is recorded. A staff reply's
    delay runs from the handoff when there was one before it, else from the start."""
    column, delay_column = FIRST_REPLY_COLUMNS[author], RESPONSE_COLUMNS[author]
    dialect = session.get_bind().dialect.name
    moment, started = sa.literal(at, sa.DateTime(timezone=True)), _started(conversation_id)
    asked = started
    if author == MessageAuthor.STAFF:
        handed = OUTCOMES.c.handed_off_at
        asked = sa.case((handed <= moment, handed), else_=started)
    inserted = _defaults(**{column: at, delay_column: seconds_between(dialect, moment, started)})
    updated = {
        column: sa.func.coalesce(OUTCOMES.c[column], at),
        delay_column: sa.func.coalesce(OUTCOMES.c[delay_column], seconds_between(dialect, moment, asked)),
    }
    _upsert(session, conversation_id, inserted, updated)


def record_close(
    session: Session, conversation_id: int, previous_status: ConversationStatus, *, at: datetime | None = None
) -> None:
    """The conversation closed; its resolution follows from who replied and who had it (``app.models.outcomes``)."""
    when = at or utc_now()
    bot_had_it = previous_status == ConversationStatus.BOT
    resolution = sa.case(
        (OUTCOMES.c.first_human_reply_at.is_not(None), Resolution.HUMAN.value),
        (sa.and_(sa.literal(bot_had_it), OUTCOMES.c.first_bot_reply_at.is_not(None)), Resolution.BOT.value),
        else_=Resolution.ABANDONED.value,
    )
    inserted = _defaults(resolution=Resolution.ABANDONED.value, closed_at=when)
    _upsert(session, conversation_id, inserted, {"resolution": resolution, "closed_at": when})


def record_reopen(session: Session, conversation_id: int) -> None:
    """The conversation is open again: no resolution until it closes, and one more reopen counted."""
    updated = {"resolution": Resolution.OPEN.value, "closed_at": None, "reopen_count": OUTCOMES.c.reopen_count + 1}
    _upsert(session, conversation_id, _defaults(reopen_count=1), updated)


def record_rating(session: Session, conversation_id: int, score: int, comment: str | None, *, at: datetime) -> None:
    """The customer's rating; ``csat_at`` keeps when it was first given, which bounds how long it can change."""
    values = {"csat_score": score, "csat_comment": comment}
    updated = {**values, "csat_at": sa.func.coalesce(OUTCOMES.c.csat_at, at)}
    _upsert(session, conversation_id, _defaults(**values, csat_at=at), updated)


class FirstReplies:
    """Which conversations this process knows to have their first bot and first staff reply recorded, per database
    engine: a process serving several databases (or a test run) must not take one's conversation for another's."""

    def __init__(self, capacity: int = REMEMBERED_CONVERSATIONS) -> None:
        self.capacity = capacity
        self._known: weakref.WeakKeyDictionary[Engine, OrderedDict[tuple[int, MessageAuthor], None]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def _of(self, session: Session) -> OrderedDict[tuple[int, MessageAuthor], None]:
        bind = session.get_bind()
        engine = bind if isinstance(bind, Engine) else bind.engine  # a session bound to one connection
        return self._known.setdefault(engine, OrderedDict())

    def needed(self, session: Session, conversation_id: int, author: MessageAuthor) -> bool:
        """Whether a reply by ``author`` may be the conversation's first one that is not recorded yet."""
        if author not in FIRST_REPLY_COLUMNS:
            return False
        with self._lock:
            known = self._of(session)
            if (conversation_id, author) in known:
                known.move_to_end((conversation_id, author))
                return False
        return True

    def remember(self, session: Session, conversation_id: int, author: MessageAuthor) -> None:
        """Called once the upsert committed: a rolled-back one is sent again with the next reply."""
        with self._lock:
            known = self._of(session)
            known[(conversation_id, author)] = None
            while len(known) > self.capacity:
                known.popitem(last=False)


FIRST_REPLIES = FirstReplies()
