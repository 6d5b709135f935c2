"""``memdesk migrate`` and ``memdesk seed-demo``: the schema, and the demo shop's customers and orders."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from sqlmodel import Session

from app.cli.common import DatabaseUrlOption, database_errors_explained, load_settings, printable_url
from app.db import create_db_engine, current_revision, migrate
from app.demo_shop import DEMO_BASE_DATE, seed_demo


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


def parse_base_date(text: str | datetime) -> datetime:
    """An ISO date or date-time; one without a time zone is taken as UTC. Typer also passes the default through this
    parser, as the datetime it is."""
    if isinstance(text, datetime):
        return text if text.tzinfo else text.replace(tzinfo=UTC)
    try:
        value = datetime.fromisoformat(text)
    except ValueError as error:
        raise typer.BadParameter(f"{text!r} is not a date; use the form 2026-11-20.") from error
    return value if value.tzinfo else value.replace(tzinfo=UTC)


BaseDateOption = Annotated[
    datetime,
    typer.Option(
        "--base-date",
        parser=parse_base_date,
        metavar="DATE",
        show_default=f"{DEMO_BASE_DATE:%Y-%m-%d}",
        help="the demo's 'today': order dates and deliveries are relative to it",
    ),
]


def seed_demo_command(base_date: BaseDateOption = DEMO_BASE_DATE, database_url: DatabaseUrlOption = None) -> None:
    """Fill the database with the demo shop (safe to run again)."""
    url = load_settings(database_url).resolved_database_url
    with database_errors_explained():
        migrate(url)
        engine = create_db_engine(url)
        try:
            with Session(engine) as session:
                report = seed_demo(session, base_date=base_date)
        finally:
            engine.dispose()
    print(report.describe())
