"""``memdesk memory migrate-store``: copy every long-term memory from one vector store to another
(``memory.migrate``), for example from the embedded Qdrant directory of an older data directory to the SQLite store.

The source is only read; a copy that was interrupted, or is run twice, ends in the same state. Qdrant's local mode
admits one process, so with Qdrant as the source no server may be running on the data directory; the SQLite store
may stay in use.
"""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli.common import CommandError, Invocation, command_group, load_settings
from app.customer_memory.options import memory_options
from memory.config import MemoryConfigError, VectorStoreKind
from memory.migrate import MigrationError, MigrationReport, migrate_store

# What Qdrant's local mode says when another process holds its directory.
QDRANT_HELD = "already accessed by another instance"

memory_commands = command_group()


@memory_commands.callback()
def memory_group(context: typer.Context) -> None:
    """Long-term memory maintenance: move memories between stores."""
    Invocation.note_subcommand(context)


SourceOption = Annotated[
    VectorStoreKind,
    typer.Option("--from", help="the store to copy from (qdrant or sqlite); it is only read", show_default=False),
]
TargetOption = Annotated[
    VectorStoreKind | None,
    typer.Option(
        "--to",
        help="the store to copy into (default: MEMDESK_MEMORY_STORE); pgvector uses MEMDESK_MEMORY_PGVECTOR_URL",
        show_default=False,
    ),
]


@memory_commands.command("migrate-store")
def migrate_store_command(source: SourceOption, target: TargetOption = None) -> None:
    """Copy every memory from one vector store to another."""
    settings = load_settings()
    chosen = target or VectorStoreKind(settings.memory_store)
    options = memory_options(settings)
    try:
        report = migrate_store(options, source=source, target=chosen)
    except (MigrationError, MemoryConfigError) as error:
        raise CommandError(str(error)) from error
    except RuntimeError as error:
        if QDRANT_HELD not in str(error):
            raise
        raise CommandError(
            f"another process holds the Qdrant store at {options.qdrant_path} (Qdrant's local mode admits one). "
            "Stop memdesk serve on this data directory and run the command again."
        ) from error
    print(describe(report))


def describe(report: MigrationReport) -> str:
    lines = [f"Copied the memories from {report.source.value} to {report.target.value}:"]
    for collection, copied in report.copied.items():
        lines.append(f"  {collection}: {copied} written, {report.unchanged.get(collection, 0)} already there")
    lines.append(f"{report.total} memories checked in the target store; the {report.source.value} store is unchanged.")
    return "\n".join(lines)
