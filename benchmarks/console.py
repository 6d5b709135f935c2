"""``python -m benchmarks.console --json``: the server time to render the console's inbox, a long conversation, the
promises board and the overview.

Seeds a fresh SQLite database with ``--conversations`` conversations started evenly over ``--history-days`` days (a
customer's question and a reply with its token counts each, a share of them waiting for a person, each with an
outcome row: a mix of resolutions, handoff reasons, ratings and reopens) and one conversation of ``--messages``
messages (questions, tool calls with their results, replies) with ``--compactions`` compactions and their outbox
rows. Then it renders, ``--runs`` times
each, the inbox's first page, the conversation page (which shows the latest page of the transcript) and the page of
messages before it ("Show earlier messages") exactly as the routes do (the same service functions and templates,
without HTTP), and counts the SQL statements each render runs: a fixed count whatever the size is the proof that
there is no N+1.

It also mirrors ``--promises`` open promises (due dates spread over two months around today) and half as many marked
kept or broken across those customers, renders the promises board (all of them, and the overdue filter) as its route
does, and renders the overview as its route does (``overview_context``: the outcome figures of the last 30 days,
promises kept on time, today's and the week's cards, the all-time token usage and the outbox, then the template).

Prints ``inbox_ms_p95``, ``conversation_ms_p95``, ``earlier_page_ms_p95``, ``promises_ms_p95``,
``promises_overdue_ms_p95``, ``overview_ms_p95`` (and their medians), the query count of each, the conversations in
the overview's window, the messages the conversation page shows, with the sizes used.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event, insert
from sqlmodel import Session

from app.console.auth import new_token
from app.console.inbox import InboxFilter, inbox_page
from app.console.permissions import Staff
from app.console.rendering import render
from app.console.transcript import load_transcript
from app.console.view import load_page
from app.db import create_db_engine, migrate
from app.llm import LLMGateway
from app.models import (
    Conversation,
    ConversationStatus,
    Customer,
    Message,
    MessageAuthor,
    MessageRole,
    PromiseRecord,
    PromiseStatus,
    StaffMember,
    StaffRole,
    utc_now,
)
from app.models.base import new_public_id
from app.models.outcomes import ConversationOutcome, HandoffReason, Resolution
from app.outcomes.figures import load_outcome_figures
from app.outcomes.promises import DueFilter, open_promises
from app.web.console.overview import overview_context
from benchmarks.harness.measure import percentile
from tests.support.console_data import seed_conversation

# The seeded conversations start evenly over this many days before today (a year of a desk with 100k); the
# overview reads the last 30.
HISTORY_DAYS = 365
# One conversation in this many waits for a person; the rest are with the bot.
NEEDS_HUMAN_EVERY = 7
BATCH = 2_000


def _started_at(now: datetime, index: int, history_days: int) -> datetime:
    """Conversations spread evenly over the last ``history_days`` days, a few minutes apart within a day."""
    return now - timedelta(days=index % history_days, minutes=index // history_days % (24 * 60))


def _seed_inbox(engine: Engine, conversations: int, history_days: int) -> None:
    """Many small conversations, inserted in batches (the benchmark measures reading, not seeding)."""
    now = utc_now()
    for start in range(0, conversations, BATCH):
        count = min(BATCH, conversations - start)
        with engine.begin() as connection:
            customers = [{"public_id": new_public_id("cus"), "name": f"Customer {start + i}"} for i in range(count)]
            connection.execute(insert(Customer), customers)
            first_customer = connection.exec_driver_sql("SELECT max(id) FROM customers").scalar_one() - count + 1
            rows = [
                {
                    "public_id": new_public_id("cnv"),
                    "customer_id": first_customer + i,
                    "status": (ConversationStatus.NEEDS_HUMAN if (start + i) % NEEDS_HUMAN_EVERY == 0
                               else ConversationStatus.BOT),
                    "created_at": _started_at(now, start + i, history_days),
                    "updated_at": now,
                }
                for i in range(count)
            ]  # fmt: skip
            connection.execute(insert(Conversation), rows)
            first = connection.exec_driver_sql("SELECT max(id) FROM conversations").scalar_one() - count + 1
            messages = []
            for i, row in enumerate(rows):
                messages.append({"conversation_id": first + i, "role": MessageRole.USER,
                                 "author": MessageAuthor.CUSTOMER, "content": f"Where is order #W{i:07d}?",
                                 "private": False, "prompt_tokens": None, "completion_tokens": None,
                                 "created_at": row["created_at"]})  # fmt: skip
                messages.append({"conversation_id": first + i, "role": MessageRole.ASSISTANT,
                                 "author": MessageAuthor.BOT, "content": "It has shipped.", "private": False,
                                 "prompt_tokens": 1_200, "completion_tokens": 40,
                                 "created_at": row["created_at"] + timedelta(seconds=4)})  # fmt: skip
            connection.execute(insert(Message), messages)
            connection.execute(insert(ConversationOutcome), [_outcome(first + i, row) for i, row in enumerate(rows)])


# The outcome mix the seeded conversations get, by conversation index: most resolved by the bot.
RESOLUTION_CYCLE = (Resolution.BOT,) * 6 + (Resolution.HUMAN, Resolution.ABANDONED, Resolution.OPEN)


def _outcome(conversation_id: int, conversation: dict[str, Any]) -> dict[str, Any]:
    started, resolution = conversation["created_at"], RESOLUTION_CYCLE[conversation_id % len(RESOLUTION_CYCLE)]
    handed = conversation["status"] == ConversationStatus.NEEDS_HUMAN or resolution != Resolution.BOT
    reasons = list(HandoffReason)
    return {
        "conversation_id": conversation_id,
        "resolution": resolution,
        "handoff_reason": reasons[conversation_id % len(reasons)] if handed else None,
        "handed_off_at": started + timedelta(minutes=1) if handed else None,
        "first_bot_reply_at": started + timedelta(seconds=4),
        "first_human_reply_at": started + timedelta(minutes=9) if resolution == Resolution.HUMAN else None,
        "closed_at": None if resolution == Resolution.OPEN else started + timedelta(hours=1),
        "reopen_count": 1 if conversation_id % 23 == 0 else 0,
        "csat_score": conversation_id % 5 + 1 if conversation_id % 3 == 0 else None,
        "started_at": started,
        "bot_response_s": 4.0,
        "human_response_s": 8 * 60.0 if resolution == Resolution.HUMAN else None,
        "updated_at": started,
    }


# Open promises are due from this many days ago to as many days ahead.
PROMISE_SPREAD_DAYS = 30


def _insert_batches(engine: Engine, count: int, row: Callable[[int], dict[str, Any]]) -> None:
    for start in range(0, count, BATCH):
        with engine.begin() as connection:
            connection.execute(insert(PromiseRecord), [row(i) for i in range(start, min(start + BATCH, count))])


def _seed_promises(engine: Engine, promises: int, customers: int, today: date) -> None:
    """``promises`` open ones, and half as many already marked kept or broken (past due), which the "kept on
    time" figure reads."""
    now = utc_now()
    _insert_batches(engine, promises, lambda i: {
        "customer_id": i % customers + 1, "memory_id": f"mem-{i}", "text": f"Refund for order #W{i:07d}.",
        "subject": f"#W{i:07d}", "source": "compaction", "status": PromiseStatus.OPEN, "created_at": now,
        "due_date": today + timedelta(days=i % (2 * PROMISE_SPREAD_DAYS) - PROMISE_SPREAD_DAYS),
    })  # fmt: skip
    _insert_batches(engine, promises // 2, lambda i: {
        "customer_id": i % customers + 1, "memory_id": f"marked-{i}", "text": f"Replacement for order #V{i:07d}.",
        "subject": f"#V{i:07d}", "source": "sync", "created_at": now,
        "due_date": today - timedelta(days=i % (2 * PROMISE_SPREAD_DAYS)),
        "status": PromiseStatus.BROKEN if i % 4 == 1 else PromiseStatus.KEPT,
        "note": "Done.", "marked_by": "staff:1", "marked_at": now,
    })  # fmt: skip


def _window_conversations(engine: Engine) -> int:
    with Session(engine) as session:
        return load_outcome_figures(session).started


@contextmanager
def counted_queries(engine: Engine) -> Iterator[list[str]]:
    statements: list[str] = []

    def record(*arguments: Any) -> None:
        statements.append(str(arguments[2]))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _timed(render_once: Callable[[], str], runs: int) -> list[float]:
    render_once()  # warm: templates compiled, statements cached
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        render_once()
        timings.append((time.perf_counter() - started) * 1_000)
    return timings


def _board(engine: Engine, staff: Staff, due: DueFilter, today: date) -> Callable[[], str]:
    def render_board() -> str:
        with Session(engine) as session:
            listed = open_promises(session, due, today)
            session.commit()
        return render(
            "promises.html", staff=staff, promises=listed, due=due, filters=list(DueFilter), today=today, can_mark=True
        )

    return render_board


def _overview(engine: Engine, staff: Staff, today: date) -> Callable[[], str]:
    gateway = LLMGateway(base_url="http://127.0.0.1:9/v1", chat_model="bench-chat")  # never called: no request

    def render_overview() -> str:
        context = overview_context(engine, gateway, with_usage=True, today=today)
        return render("overview.html", staff=staff, **context)

    return render_overview


def run(
    conversations: int,
    messages: int,
    compactions: int,
    runs: int,
    directory: Path,
    promises: int = 0,
    history_days: int = HISTORY_DAYS,
) -> dict[str, Any]:
    url = f"sqlite:///{directory / 'console.db'}"
    migrate(url)
    engine = create_db_engine(url)
    _seed_inbox(engine, conversations, history_days)
    today = utc_now().date()
    _seed_promises(engine, promises, conversations, today)
    with Session(engine, expire_on_commit=False) as session:
        long = seed_conversation(session, messages=messages, compactions=compactions)
        member = StaffMember(email="bench@example.com", name="Bench", role=StaffRole.SUPERVISOR, password_hash="-")
        session.add(member)
        session.commit()
        assert member.id is not None
        staff = Staff(member.id, member.name, member.email, member.role, 0, new_token())

    def inbox() -> str:
        with Session(engine) as session:
            listing = inbox_page(session, staff.id, InboxFilter())
        return render("inbox.html", staff=staff, inbox=listing, statuses=list(ConversationStatus))

    def conversation() -> str:
        with Session(engine, expire_on_commit=False) as session:
            found = session.get(Conversation, long.conversation_id)
            assert found is not None
            view = load_page(session, found, staff_id=staff.id)
        return render("conversation.html", staff=staff, view=view, position="0:0")

    with Session(engine) as session:
        before_id = load_transcript(session, long.conversation_id).earlier_before

    def earlier_page() -> str:
        with Session(engine) as session:
            page = load_transcript(session, long.conversation_id, before_id=before_id, through_latest=False)
            session.commit()
        return render("_transcript_page.html", staff=staff, transcript=page, ref=long.public_id)

    with counted_queries(engine) as inbox_statements:
        inbox_html = inbox()
    with counted_queries(engine) as conversation_statements:
        conversation_html = conversation()
    with counted_queries(engine) as earlier_statements:
        earlier_page()
    inbox_ms, conversation_ms = _timed(inbox, runs), _timed(conversation, runs)
    earlier_ms = _timed(earlier_page, runs)
    board, overdue_board = _board(engine, staff, DueFilter.ALL, today), _board(engine, staff, DueFilter.OVERDUE, today)
    with counted_queries(engine) as board_statements:
        board()
    board_ms, overdue_ms = _timed(board, runs), _timed(overdue_board, runs)
    overview = _overview(engine, staff, today)
    with counted_queries(engine) as overview_statements:
        overview_html = overview()
    overview_ms = _timed(overview, runs)
    window = _window_conversations(engine)
    engine.dispose()
    return {
        "conversations": conversations,
        "conversation_messages": len(long.message_ids),
        "compactions": len(long.compaction_ids),
        "runs": runs,
        "inbox_ms_p95": round(percentile(inbox_ms, 0.95), 2),
        "inbox_ms_p50": round(percentile(inbox_ms, 0.5), 2),
        "conversation_ms_p95": round(percentile(conversation_ms, 0.95), 2),
        "conversation_ms_p50": round(percentile(conversation_ms, 0.5), 2),
        "earlier_page_ms_p95": round(percentile(earlier_ms, 0.95), 2),
        "earlier_page_ms_p50": round(percentile(earlier_ms, 0.5), 2),
        "open_promises": promises,
        "promises_ms_p95": round(percentile(board_ms, 0.95), 2),
        "promises_ms_p50": round(percentile(board_ms, 0.5), 2),
        "promises_overdue_ms_p95": round(percentile(overdue_ms, 0.95), 2),
        "promises_queries": len(board_statements),
        "history_days": history_days,
        "overview_window_conversations": window,
        "overview_ms_p95": round(percentile(overview_ms, 0.95), 2),
        "overview_ms_p50": round(percentile(overview_ms, 0.5), 2),
        "overview_queries": len(overview_statements),
        "overview_html_kb": round(len(overview_html) / 1024, 1),
        "inbox_queries": len(inbox_statements),
        "conversation_queries": len(conversation_statements),
        "earlier_page_queries": len(earlier_statements),
        "conversation_messages_shown": conversation_html.count('<li id="m-'),
        "inbox_html_kb": round(len(inbox_html) / 1024, 1),
        "conversation_html_kb": round(len(conversation_html) / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--history-days", type=int, default=HISTORY_DAYS, help="days the conversations spread over")
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--compactions", type=int, default=5)
    parser.add_argument("--promises", type=int, default=20_000, help="open promises on the board")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memdesk-console-bench-") as directory:
        figures = run(
            options.conversations,
            options.messages,
            options.compactions,
            options.runs,
            Path(directory),
            options.promises,
            options.history_days,
        )
    if options.json:
        print(json.dumps(figures))
        return
    for name, value in figures.items():
        print(f"{name:>24}: {value}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
