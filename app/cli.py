"""The ``memdesk`` command line.

Subcommands live in ``COMMANDS``: each ``Command`` names itself, adds its own arguments and runs with the parsed
arguments and the settings, returning the process exit code. Adding one means writing its two functions and adding a
row to the table. Settings come from ``MEMDESK_*`` environment variables (or ``.env``);
``--database-url`` overrides ``MEMDESK_DATABASE_URL`` for one run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from app.db import create_db_engine, current_revision, migrate
from app.demo_shop import DEMO_BASE_DATE, seed_demo
from app.settings import Settings, get_settings

EXIT_OK = 0
# Open event streams never end by themselves: past this, uvicorn closes them so a stop takes seconds, not forever.
GRACEFUL_SHUTDOWN_S = 1
EXIT_FAILURE = 1
# Drivers SQLAlchemy imports for a database URL; a missing one gets a clear message instead of a traceback.
DATABASE_DRIVERS = frozenset({"psycopg", "psycopg2", "asyncpg", "pg8000", "pymysql", "MySQLdb"})


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Settings], int]


def _database_url(args: argparse.Namespace, settings: Settings) -> str:
    url: str | None = getattr(args, "database_url", None)
    return url or settings.resolved_database_url


def _printable(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _add_database_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        help="SQLAlchemy database URL (default: MEMDESK_DATABASE_URL, or a SQLite file under MEMDESK_DATA_DIR)",
    )


# --- migrate -----------------------------------------------------------------------------------------------------


def _run_migrate(args: argparse.Namespace, settings: Settings) -> int:
    url = _database_url(args, settings)
    migrate(url)
    engine = create_db_engine(url)
    try:
        revision = current_revision(engine)
    finally:
        engine.dispose()
    print(f"The database at {_printable(url)} is up to date (revision {revision}).")
    return EXIT_OK


# --- seed-demo ---------------------------------------------------------------------------------------------------


def _base_date(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date; use the form 2026-11-20.") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _add_seed_arguments(parser: argparse.ArgumentParser) -> None:
    _add_database_argument(parser)
    parser.add_argument(
        "--base-date",
        type=_base_date,
        default=DEMO_BASE_DATE,
        help=f"the demo's 'today': order dates and deliveries are relative to it (default {DEMO_BASE_DATE:%Y-%m-%d})",
    )


def _run_seed_demo(args: argparse.Namespace, settings: Settings) -> int:
    url = _database_url(args, settings)
    migrate(url)
    engine = create_db_engine(url)
    try:
        with Session(engine) as session:
            report = seed_demo(session, base_date=args.base_date)
    finally:
        engine.dispose()
    print(report.describe())
    return EXIT_OK


# --- serve -------------------------------------------------------------------------------------------------------


def _add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="interface to listen on (default: MEMDESK_HOST, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default: MEMDESK_PORT, 8000)")


def _run_serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from app.http_limits import UVICORN_LIMITS
    from app.local_model import REAL_ENDPOINT_HINT, LocalModelError, LocalModelServer
    from app.main import create_app

    host = args.host or settings.host
    port = args.port or settings.port
    migrate(settings.resolved_database_url)
    local: LocalModelServer | None = None
    if settings.uses_embedded_llm:
        local = LocalModelServer(
            port=settings.local_model_port,
            threads=settings.local_model_threads,
            context_length=settings.context_length,
            log_path=settings.data_dir / "local-model.log",
        )
        print(f"Starting the embedded demo model on {local.base_url} …", flush=True)
        try:
            local.start()
        except LocalModelError as error:
            print(f"memdesk serve: {error}", file=sys.stderr)
            return EXIT_FAILURE
    base = f"http://{host}:{port}"
    print(f"\nmemdesk is running at {base}")
    print(f"  demo shop:     {base}/demo   <- open this to chat through the widget")
    print(f"  API docs:      {base}/docs")
    print(f"  health:        {base}/healthz")
    print(f"  widget API:    {base}/api/widget/")
    print(f"  database:      {_printable(settings.resolved_database_url)}")
    if local is not None:
        print(f"  LLM:           embedded SmolLM2-135M-Instruct at {local.base_url}\n\n{REAL_ENDPOINT_HINT}\n")
    else:
        print(f"  LLM:           {settings.chat_model} at {settings.llm_base_url}\n")
    try:
        uvicorn.run(
            create_app(settings),
            host=host,
            port=port,
            log_level="info",
            access_log=settings.access_log,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
            **UVICORN_LIMITS,
        )
    finally:
        if local is not None:
            local.stop()
    return EXIT_OK


# --- customer export / erase -----------------------------------------------------------------------------------


def _add_customer_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help="print everything memdesk holds about a customer as JSON")
    export.add_argument("customer", help="the customer's public id (cus_…), the shop's customer id, or the internal id")
    export.add_argument("--output", help="write the JSON to this file instead of standard output")
    erase = actions.add_parser("erase", help="delete a customer's data and memories for good")
    erase.add_argument("customer", help="the customer's public id (cus_…), the shop's customer id, or the internal id")
    erase.add_argument("--yes", action="store_true", help="confirm the erasure (it cannot be undone)")


def _run_customer(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from app.privacy import CustomerNotFoundError, erase_customer, export_customer, find_customer
    from app.services import memory_options
    from memory.store import CustomerMemory, MemoryStoreLockedError

    if args.action == "erase" and not args.yes:
        print("memdesk customer erase: this deletes the customer for good; add --yes to confirm.", file=sys.stderr)
        return EXIT_FAILURE
    url = settings.resolved_database_url
    migrate(url)
    try:
        memory = CustomerMemory(memory_options(settings)) if settings.memory_enabled else None
    except MemoryStoreLockedError as error:
        print(
            f"memdesk customer {args.action}: {error} While the server runs, use the admin API instead.",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    engine = create_db_engine(url)
    try:
        with Session(engine) as session:
            customer = find_customer(session, args.customer, allow_internal_id=True)
            if args.action == "export":
                data = json.dumps(export_customer(session, memory, customer), indent=2)
                if args.output:
                    Path(args.output).write_text(data + "\n")
                    print(f"Wrote the export of customer {args.customer} to {args.output}.")
                else:
                    print(data)
            else:
                counts = erase_customer(session, memory, customer, actor="cli").counts
                print(f"Erased customer {args.customer}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    except CustomerNotFoundError as error:
        print(f"memdesk customer {args.action}: {error}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        engine.dispose()
        if memory is not None:
            memory.close()
    return EXIT_OK


# --- the table ---------------------------------------------------------------------------------------------------

COMMANDS: tuple[Command, ...] = (
    Command("migrate", "create or upgrade the database schema", _add_database_argument, _run_migrate),
    Command(
        "seed-demo",
        "fill the database with the demo shop (safe to run again)",
        _add_seed_arguments,
        _run_seed_demo,
    ),
    Command(
        "serve",
        "run the support desk (and the embedded demo model when no LLM is configured)",
        _add_serve_arguments,
        _run_serve,
    ),
    Command(
        "customer",
        "export or erase one customer's data (database rows and memories)",
        _add_customer_arguments,
        _run_customer,
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memdesk", description="Self-hosted AI customer-support desk.")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        subparser = subcommands.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(subparser)
        subparser.set_defaults(handler=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace, Settings], int] = args.handler
    try:
        return handler(args, get_settings())
    except ModuleNotFoundError as exc:
        if exc.name not in DATABASE_DRIVERS:
            raise
        print(
            f"memdesk {args.command}: the database driver {exc.name!r} is not installed. Install it into this "
            "environment (for PostgreSQL: pip install 'psycopg[binary]') and run the command again.",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    except SQLAlchemyError as exc:
        print(f"memdesk {args.command}: database error: {exc}", file=sys.stderr)
        print("Check MEMDESK_DATABASE_URL (or --database-url) and that the database is reachable.", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
