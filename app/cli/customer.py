"""``memdesk customer export|erase``: everything memdesk holds about one customer, database rows and memories.

Where the work happens: the embedded memory store has one owner, and a running server holds a customer's recent
events, context engines and rate-limit window in its own memory, which only the server itself can drop. So when
``memdesk serve`` runs from this data directory on the same database (its record, ``app.cli.running_server``), these
commands go through its admin API: that works while the server owns the store, and an erasure reaches the server's
memory too. The record, not ``MEMDESK_HOST``/``MEMDESK_PORT``, says where the server answers, since ``serve`` may
have been given ``--host``/``--port``; and a command pointed at another database with ``--database-url`` is never
sent to it. With no such server, the command opens the database and the memory store itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Protocol

import typer
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app.cli.admin_client import AdminClient
from app.cli.common import (
    CommandError,
    DatabaseUrlOption,
    Invocation,
    command_group,
    database_errors_explained,
    load_settings,
    printable_url,
)
from app.cli.running_server import RunningServer, running_server
from app.db import create_db_engine, migrate
from app.models import Customer
from app.privacy import (
    CustomerExport,
    CustomerNotFoundError,
    erase_customer,
    export_customer,
    find_customer,
    printable_export,
)
from app.settings import Settings
from memory.store import CustomerMemory

CustomerArgument = Annotated[
    str,
    typer.Argument(
        help="the customer's public id (cus_…), the shop's customer id, or the internal id",
        metavar="CUSTOMER",
        show_default=False,
    ),
]

customer_commands = command_group()


@customer_commands.callback()
def customer_group(context: typer.Context) -> None:
    """Export or erase one customer's data: rows and memories."""
    Invocation.note_subcommand(context)


class CustomerData(Protocol):
    def export(self, reference: str) -> CustomerExport: ...

    def erase(self, reference: str) -> dict[str, int]: ...


@customer_commands.command("export")
def export_command(
    customer: CustomerArgument,
    output: Annotated[
        Path | None, typer.Option(help="write the export to this file instead of standard output", show_default=False)
    ] = None,
    html: Annotated[bool, typer.Option("--html", help="a printable HTML page instead of JSON")] = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Print a customer's data, readable by them (JSON; --html: a page)."""
    settings = load_settings(database_url)
    with database_errors_explained(), customer_data(settings, action="an export") as data:
        exported = data.export(customer)
    document = printable_export(exported) if html else exported.model_dump_json(indent=2)
    if output is None:
        print(document)
        return
    output.write_text(document + "\n")
    print(f"Wrote the export of customer {customer} to {output}.")


@customer_commands.command("erase")
def erase_command(
    customer: CustomerArgument,
    yes: Annotated[bool, typer.Option("--yes", help="confirm the erasure (it cannot be undone)")] = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Delete a customer's data and memories for good."""
    if not yes:
        raise CommandError("this deletes the customer for good; add --yes to confirm.")
    settings = load_settings(database_url)
    with database_errors_explained(), customer_data(settings, action="an erasure") as data:
        counts = data.erase(customer)
    print(f"Erased customer {customer}: " + ", ".join(f"{kind} {count}" for kind, count in counts.items()))


@contextmanager
def customer_data(settings: Settings, *, action: str) -> Iterator[CustomerData]:
    server = running_server(settings.data_dir)
    if server is not None and server.database == printable_url(settings.resolved_database_url):
        with _opened_database(settings.resolved_database_url) as engine:
            yield ServerCustomerData(server, settings, engine, action=action)
        return
    with LocalCustomerData.opened(settings, server) as local:
        yield local


@contextmanager
def _opened_database(url: str) -> Iterator[Engine]:
    engine = create_db_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def _public_id(engine: Engine, reference: str) -> str:
    """The public id of the customer ``reference`` names (the admin API does not take internal ids)."""
    with Session(engine) as session:
        try:
            return find_customer(session, reference, allow_internal_id=True).public_id
        except CustomerNotFoundError as error:
            raise CommandError(str(error)) from error


def _who_holds_the_store(settings: Settings, server: RunningServer | None) -> str:
    if server is None:
        return (
            f"No memdesk server is recorded as running from {settings.data_dir} (this command would have gone "
            "through it), so some other process holds the store."
        )
    return (
        f"memdesk serve (pid {server.pid}, {server.url}) holds it, but on the database {server.database}, not "
        f"{printable_url(settings.resolved_database_url)}; export and erase go through a server only for its own "
        "database. Stop that server, or give this command its database."
    )


class ServerCustomerData:
    """Through the running server's admin API; the database is only read, to name the customer."""

    def __init__(self, server: RunningServer, settings: Settings, engine: Engine, *, action: str) -> None:
        if settings.admin_token is None:
            raise CommandError(
                f"memdesk serve (pid {server.pid}, {server.url}) runs from this data directory and owns its memory "
                f"store, so {action} goes through its admin API, which needs the admin token. Set "
                "MEMDESK_ADMIN_TOKEN here to the value the server was started with and run the command again. (A "
                "server started without MEMDESK_ADMIN_TOKEN has its admin API off: restart it with one set, or "
                "stop it and run the command while it is stopped.)"
            )
        self._client = AdminClient(server, settings.admin_token.get_secret_value())
        self._engine = engine

    def export(self, reference: str) -> CustomerExport:
        return CustomerExport.model_validate(self._client.export_customer(_public_id(self._engine, reference)))

    def erase(self, reference: str) -> dict[str, int]:
        return self._client.erase_customer(_public_id(self._engine, reference))


class LocalCustomerData:
    """The database and the memory store opened by this process."""

    def __init__(self, engine: Engine, memory: CustomerMemory | None) -> None:
        self._engine = engine
        self._memory = memory

    @classmethod
    @contextmanager
    def opened(cls, settings: Settings, server: RunningServer | None) -> Iterator[LocalCustomerData]:
        """Opens both; ``server`` is the one running from this data directory on another database, if any."""
        from app.customer_memory.options import memory_options
        from memory.store import MemoryStoreLockedError

        migrate(settings.resolved_database_url)
        try:
            memory = CustomerMemory(memory_options(settings)) if settings.memory_enabled else None
        except MemoryStoreLockedError as error:
            raise CommandError(f"{error} {_who_holds_the_store(settings, server)}") from error
        try:
            with _opened_database(settings.resolved_database_url) as engine:
                yield cls(engine, memory)
        finally:
            if memory is not None:
                memory.close()

    def export(self, reference: str) -> CustomerExport:
        with Session(self._engine) as session:
            return export_customer(session, self._memory, self._find(session, reference))

    def erase(self, reference: str) -> dict[str, int]:
        with Session(self._engine) as session:
            return erase_customer(session, self._memory, self._find(session, reference), actor="cli").counts

    @staticmethod
    def _find(session: Session, reference: str) -> Customer:
        try:
            return find_customer(session, reference, allow_internal_id=True)
        except CustomerNotFoundError as error:
            raise CommandError(str(error)) from error
