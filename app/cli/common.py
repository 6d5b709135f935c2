"""What every ``memdesk`` command shares: its settings, the ``--database-url`` option, and how failures read.

A command that cannot do what was asked raises ``CommandError`` with a sentence that says what to do next;
``app.cli.commands`` prints it after the command's name (``Invocation``, filled in by the group callbacks as the command
line is resolved) and exits with its ``exit_code``: ``EXIT_FAILURE``, or ``EXIT_USAGE`` for ``SettingsConflict``
(settings that cannot work together, like a command line that does not parse). Database errors and a missing
database driver become such sentences in ``database_errors_explained``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated

import typer
from pydantic import ValidationError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from app.settings import Settings, get_settings

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
# Drivers SQLAlchemy imports for a database URL; a missing one gets a clear message instead of a traceback.
DATABASE_DRIVERS = frozenset({"psycopg", "psycopg2", "asyncpg", "pg8000", "pymysql", "MySQLdb"})

DatabaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="SQLAlchemy database URL (default: MEMDESK_DATABASE_URL, or a SQLite file under MEMDESK_DATA_DIR)",
        show_default=False,
    ),
]


def command_group() -> typer.Typer:
    """A ``typer.Typer`` for ``memdesk`` or one of its groups, all written the same way.

    Help and usage errors are click's plain text, not typer's rich panels: typer's panels show a ``<bool>`` type
    beside every flag (``--version``, ``--yes``, ``--help``), which reads as if the flag took a value, and they
    wrap error messages in a box that breaks them mid-sentence.
    """
    return typer.Typer(
        no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )


class CommandError(Exception):
    """A failure the user can act on; the message is one or more plain sentences."""

    exit_code = EXIT_FAILURE


class SettingsConflict(CommandError):
    """Settings (or options) that cannot work together: nothing was started; change one of those named."""

    exit_code = EXIT_USAGE


@dataclass
class Invocation:
    """The command being run, word by word (``customer``, ``export``), for messages; the click context's ``obj``."""

    words: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return " ".join(["memdesk", *self.words])

    @staticmethod
    def note_subcommand(context: typer.Context) -> None:
        """Called by each group's callback: record which of its commands runs."""
        if isinstance(context.obj, Invocation) and context.invoked_subcommand:
            context.obj.words.append(context.invoked_subcommand)


def load_settings(database_url: str | None = None) -> Settings:
    """The ``MEMDESK_*`` settings, with ``--database-url`` (when given) in place of ``MEMDESK_DATABASE_URL``."""
    try:
        return Settings(database_url=database_url) if database_url else get_settings()
    except ValidationError as error:
        raise CommandError(f"the settings are not valid.\n{error}") from error


def printable_url(url: str) -> str:
    """``url`` with its password hidden, for messages and records."""
    return make_url(url).render_as_string(hide_password=True)


@contextmanager
def database_errors_explained() -> Iterator[None]:
    try:
        yield
    except ModuleNotFoundError as error:
        if error.name not in DATABASE_DRIVERS:
            raise
        raise CommandError(
            f"the database driver {error.name!r} is not installed. Install it into this environment (for "
            "PostgreSQL: pip install 'psycopg[binary]') and run the command again."
        ) from error
    except SQLAlchemyError as error:
        raise CommandError(
            f"database error: {error}\nCheck MEMDESK_DATABASE_URL (or --database-url) and that the database is "
            "reachable."
        ) from error
