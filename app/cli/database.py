"""``memdesk migrate`` and ``memdesk seed-demo``: the schema, and the demo shop's customers and orders.

``seed-demo`` loads the demo shop's code only when it runs, so every other command works without it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from sqlalchemy import Engine
from sqlmodel import Session

from app.cli.common import DatabaseUrlOption, database_errors_explained, load_settings, printable_url
from app.customer_memory.options import memory_options
from app.customer_memory.outbox import SqlOutboxRepository
from app.db import create_db_engine, current_revision, migrate
from app.settings import Settings
from memory.migrate import upgrade_embedded_store
from memory.outbox import ConclusionOutbox
from memory.store import CustomerMemory


def migrate_command(database_url: DatabaseUrlOption = None) -> None:
    """Create or upgrade the database schema."""
    url = load_settings(database_url).resolved_database_url
    with database_errors_explained():
        migrate(url)
        engine = create_db_engine(url)
        try:
            revision = current_revision(engine)
        finally:
            engine.dispose()
    print(f"The database at {printable_url(url)} is up to date (revision {revision}).")


def parse_base_date(text: str) -> datetime:
    """An ISO date or date-time; one without a time zone is taken as UTC."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError as error:
        raise typer.BadParameter(f"{text!r} is not a date; use the form 2026-11-20.") from error
    return value if value.tzinfo else value.replace(tzinfo=UTC)


BaseDateOption = Annotated[
    datetime | None,
    typer.Option(
        "--base-date",
        parser=parse_base_date,
        metavar="DATE",
        show_default="the demo's fixed date",
        help="the demo's 'today': order dates and deliveries are relative to it",
    ),
]


def seed_demo_command(base_date: BaseDateOption = None, database_url: DatabaseUrlOption = None) -> None:
    """Fill the database with the demo shop, its help center and two customers' earlier conversations (safe to run
    again)."""
    from app.demo_shop import DEMO_BASE_DATE, seed_demo
    from app.demo_shop.history import seed_history
    from app.knowledge.vectors import attach_vectors, embedder_from_settings

    settings = load_settings(database_url)
    url = settings.resolved_database_url
    with database_errors_explained():
        migrate(url)
        engine = create_db_engine(url)
        # The help center's chunks are embedded as the desk will embed questions: memory's embedder.
        vectors = attach_vectors(engine, embedder_from_settings(settings))
        try:
            with Session(engine) as session:
                report = seed_demo(session, base_date=base_date or DEMO_BASE_DATE, vectors=vectors)
                history = seed_history(session)
            print(report.describe())
            print(history.describe())
            if settings.memory_enabled:
                print(deliver_conclusions(settings, engine))
        finally:
            engine.dispose()


def deliver_conclusions(settings: Settings, engine: Engine) -> str:
    """Deliver every due outbox row to long-term memory, as the server's delivery loop would."""
    options = memory_options(settings)
    upgrade_embedded_store(options)
    memory = CustomerMemory(options)
    try:
        outbox = ConclusionOutbox(SqlOutboxRepository(engine), memory)
        delivered = failed = 0
        while (report := outbox.deliver_due()).delivered or report.failed:
            delivered, failed = delivered + report.delivered, failed + report.failed
            if report.failed:
                break
    finally:
        memory.close()
    if failed:
        return f"Delivered {delivered} conclusions to long-term memory; {failed} failed and will be retried."
    return f"Delivered {delivered} conclusions to long-term memory."
