"""The ``memdesk`` command: the typer application that puts the command groups together, and ``main``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer
from typer.main import get_command

from app.cli.common import EXIT_FAILURE, EXIT_OK, CommandError, Invocation, command_group
from app.cli.customer import customer_commands
from app.cli.database import migrate_command, seed_demo_command
from app.cli.evals import eval_commands
from app.cli.knowledge import knowledge_commands
from app.cli.memory import memory_commands
from app.cli.serve import serve_command
from app.cli.staff import staff_commands
from app.cli.sync import sync_command

DISTRIBUTION = "memdesk"

cli = command_group()
cli.command("migrate")(migrate_command)
cli.command("seed-demo")(seed_demo_command)
cli.command("serve")(serve_command)
cli.command("sync")(sync_command)
cli.add_typer(customer_commands, name="customer")
cli.add_typer(eval_commands, name="eval")
cli.add_typer(knowledge_commands, name="knowledge")
cli.add_typer(memory_commands, name="memory")
cli.add_typer(staff_commands, name="staff")


def distribution_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "(not installed: run pip install -e . in the repository)"


def _print_version(requested: bool) -> None:
    if requested:
        print(f"memdesk {distribution_version()}")
        raise typer.Exit()


@cli.callback()
def memdesk(
    context: typer.Context,
    show_version: Annotated[
        bool, typer.Option("--version", help="show the version and exit", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    """Self-hosted AI customer-support desk."""
    Invocation.note_subcommand(context)


def _exit_code(code: object) -> int:
    if code is None:
        return EXIT_OK
    return code if isinstance(code, int) else EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    invocation = Invocation()
    try:
        get_command(cli).main(
            args=list(argv) if argv is not None else sys.argv[1:], prog_name="memdesk", obj=invocation
        )
    except SystemExit as exit_:  # standalone mode ends every run this way, success included
        return _exit_code(exit_.code)
    except CommandError as error:
        print(f"{invocation.name}: {error}", file=sys.stderr)
        return error.exit_code
    return EXIT_OK
