"""The ``memdesk`` command line (typer): ``migrate``, ``seed-demo``, ``serve``, ``sync``, ``customer export|erase``,
``memory migrate-store`` and ``staff add|list|disable|enable|set-password``.

Each command lives in the module of its group (``database``, ``serve``, ``sync``, ``customer``, ``memory``,
``staff``) as a typed function; this module puts them together and runs them. Settings come from ``MEMDESK_*``
environment variables (or ``.env``), and every command that touches the database takes ``--database-url`` in place
of ``MEMDESK_DATABASE_URL``. ``main`` returns the exit code: 0 on success, 1 when a command fails (its message on
standard error, after the command's name), 2 for a command line that does not parse or settings that cannot work
together (``serve --workers 2`` on SQLite); ``sync`` adds 75 while another sync runs.
"""

from app.cli.main import main

__all__ = ["main"]
