"""``memdesk staff add|list|disable|enable|set-password``: the console's staff accounts.

Each command calls the function of the same name in ``app.console.staff`` (the console's staff page calls them
too) and is audited with actor ``cli``. A password is asked twice at a prompt, or read from
``MEMDESK_STAFF_PASSWORD`` when standard input is not a terminal (scripts, containers); it is never an option, so
it cannot end up in a shell history or a process list. Disabling a member or setting their password ends every
console session they have open.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, TypeVar

import typer
from sqlmodel import Session

from app.cli.common import (
    CommandError,
    DatabaseUrlOption,
    Invocation,
    command_group,
    database_errors_explained,
    load_settings,
)
from app.console import staff as accounts
from app.db import create_db_engine, migrate
from app.models import StaffRole

T = TypeVar("T")

EmailArgument = Annotated[
    str, typer.Argument(help="the staff member's email address", metavar="EMAIL", show_default=False)
]

staff_commands = command_group()


@staff_commands.callback()
def staff_group(context: typer.Context) -> None:
    """Manage who can sign in to the console at /console."""
    Invocation.note_subcommand(context)


@contextmanager
def _session(database_url: str | None) -> Iterator[Session]:
    url = load_settings(database_url).resolved_database_url
    with database_errors_explained():
        migrate(url)
        engine = create_db_engine(url)
        try:
            with Session(engine, expire_on_commit=False) as session:
                yield session
        finally:
            engine.dispose()


def _run(database_url: str | None, change: Callable[[Session], T]) -> T:
    try:
        with _session(database_url) as session:
            return change(session)
    except accounts.StaffError as error:
        raise CommandError(str(error)) from error


def _password() -> str:
    try:
        return accounts.read_password()
    except accounts.StaffError as error:
        raise CommandError(str(error)) from error
    except (EOFError, KeyboardInterrupt) as error:
        raise CommandError("No password was given; nothing was changed.") from error


@staff_commands.command("add")
def add_command(
    email: EmailArgument,
    name: Annotated[str, typer.Option("--name", help="the name customers see when this person replies")],
    role: Annotated[StaffRole, typer.Option("--role", help="what the member may do")] = StaffRole.AGENT,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Add a staff member.

    The password is asked for, or read from MEMDESK_STAFF_PASSWORD when there is no terminal.
    """
    password = _password()
    member = _run(
        database_url,
        lambda session: accounts.add_staff(session, email=email, name=name, role=role, password=password),
    )
    print(f"Added {member.name} <{member.email}> as {member.role.value}; they can sign in at /console now.")


@staff_commands.command("list")
def list_command(database_url: DatabaseUrlOption = None) -> None:
    """List staff members.

    Each with their email, name, role, and whether they can sign in.
    """
    members = _run(database_url, lambda session: [(m.email, m.name, m.role.value, m.active) for m in
                                                  accounts.list_staff(session)])  # fmt: skip
    if not members:
        print("No staff yet; add one with: memdesk staff add EMAIL --name NAME --role admin")
        return
    width = max(len(email) for email, *_ in members)
    for email, name, role, active in members:
        print(f"{email:<{width}}  {role:<10}  {'active' if active else 'disabled':<8}  {name}")


@staff_commands.command("disable")
def disable_command(email: EmailArgument, database_url: DatabaseUrlOption = None) -> None:
    """Stop a staff member from signing in.

    Their open sessions end at once.
    """
    member = _run(database_url, lambda session: accounts.disable_staff(session, email))
    print(f"Disabled {member.email}; their console sessions have ended.")


@staff_commands.command("enable")
def enable_command(email: EmailArgument, database_url: DatabaseUrlOption = None) -> None:
    """Let a disabled staff member sign in again."""
    member = _run(database_url, lambda session: accounts.set_active(session, email, active=True))
    print(f"Enabled {member.email}.")


@staff_commands.command("set-password")
def set_password_command(email: EmailArgument, database_url: DatabaseUrlOption = None) -> None:
    """Set a new password for a staff member.

    The password is asked for, or read from MEMDESK_STAFF_PASSWORD; their open sessions end.
    """
    password = _password()
    member = _run(database_url, lambda session: accounts.set_password(session, email, password))
    print(f"Set a new password for {member.email}; their console sessions have ended.")
