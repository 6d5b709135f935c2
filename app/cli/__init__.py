"""The ``memdesk`` command line (typer): ``migrate``, ``seed-demo``, ``serve``, ``sync``, ``customer export|erase``,
``knowledge import|list|delete``, ``eval run|compare``, ``memory migrate-store`` and
``staff add|list|disable|enable|set-password``.

Each command lives in the module of its group (``database``, ``serve``, ``sync``, ``customer``, ``knowledge``,
``evals``, ``memory``, ``staff``) as a typed function; ``app.cli.commands`` puts them together and runs them. Settings
come from ``MEMDESK_*`` environment variables (or ``.env``), and every command that touches the database takes
``--database-url`` in place of ``MEMDESK_DATABASE_URL``. ``main`` returns the exit code: 0 on success, 1 when a
command fails (its message on standard error, after the command's name), 2 for a command line that does not parse or
settings that cannot work together (``serve --workers 2`` on SQLite); ``sync`` adds 75 while another sync runs. (The
typer application is ``commands``, not ``main``: a submodule named ``main`` would replace this function as the
package's attribute as soon as it is imported.)

``main`` here imports the commands only when it runs: the ``memdesk`` script imports this package, and so does every
worker process of ``serve --workers N``, which Python starts by re-running that script before the worker answers
its supervisor's health ping (``app.cli.serve_workers``). Importing the commands pulls in Mem0, Qdrant's client and
openai: seconds of CPU, twenty and more when two workers start together on two busy cores.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    from app.cli.commands import main as run

    return run(argv)
