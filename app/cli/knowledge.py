"""``memdesk knowledge import|list|delete``: the team's knowledge sources from the command line.

``import`` reads files, folders and ZIP archives (``app.knowledge.readers``) and web pages and sitemaps
(``app.knowledge.web``) into one source, then prints what became of each document: added, updated, unchanged,
removed (with ``--prune``) or failed, with the reason. It exits 0 when it ran, failures included, 1 when no document
at all could be read, and 2 for a command line that cannot work. The embedder is the one the settings name, as in
the server, so what the command stores the server's search reads.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from sqlalchemy import Engine, func, inspect
from sqlmodel import Session, col, select

from app.cli.common import (
    EXIT_FAILURE,
    CommandError,
    DatabaseUrlOption,
    Invocation,
    SettingsConflict,
    command_group,
    database_errors_explained,
    load_settings,
)
from app.db import create_db_engine
from app.knowledge.importer import ImportReport, SourceNameError, import_documents
from app.knowledge.importer import Progress as ImportProgress
from app.knowledge.readers import ReadResult, read_paths
from app.knowledge.store import delete_source, source_named
from app.knowledge.vectors import attach_vectors, embedder_from_settings
from app.knowledge.web import read_urls
from app.knowledge.web_fetch import WebLimits
from app.models.knowledge import KnowledgeChunk, KnowledgeDocument, KnowledgeSource
from app.settings import Settings

WEB_PREFIXES = ("http://", "https://")
# The progress bar's line shows the end of a long locator; its start (the folder) is the same on every line.
SHOWN_LOCATOR_CHARS = 60

knowledge_commands = command_group()


@knowledge_commands.callback()
def knowledge_group(context: typer.Context) -> None:
    """The team's knowledge: import files and web pages, list and delete sources."""
    Invocation.note_subcommand(context)


TargetsArgument = Annotated[
    list[str],
    typer.Argument(
        help="files, folders, .zip archives, or http(s) addresses of pages and sitemaps",
        metavar="PATH_OR_URL",
        show_default=False,
    ),
]
SourceOption = Annotated[
    str | None,
    typer.Option(
        "--source",
        metavar="NAME",
        help="the source to import into (default: the first argument's file or folder name, or its web host)",
        show_default=False,
    ),
]
PruneOption = Annotated[bool, typer.Option("--prune", help="remove the source's documents this import did not find")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="say what the import would do; write nothing")]
JsonOption = Annotated[bool, typer.Option("--json", help="print the result as one JSON object")]


@knowledge_commands.command("import")
def import_command(
    targets: TargetsArgument,
    source: SourceOption = None,
    prune: PruneOption = False,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Import files and web pages into a source.

    Re-importing changes only what changed; each document's outcome, and each failure's reason, is reported."""
    name = source if source is not None else default_source_name(targets[0])
    settings = load_settings(database_url)
    documents = _documents(targets, settings)
    with database_errors_explained(), _opened_database(settings, embeds=True) as engine, _progress_bar() as progress:
        try:
            report = import_documents(engine, name, documents, prune=prune, dry_run=dry_run, progress=progress)
        except SourceNameError as error:
            raise SettingsConflict(f"--source: {error}") from error
        if report.read_any and not dry_run and all(target.startswith(WEB_PREFIXES) for target in targets):
            _remember_origins(engine, name, targets)
    print(json.dumps(report.as_dict(), ensure_ascii=False) if as_json else describe(report))
    if not report.read_any:
        raise typer.Exit(EXIT_FAILURE)


def _remember_origins(engine: Engine, name: str, urls: list[str]) -> None:
    """The addresses a source was read from, so the console can read them again (files on this machine it cannot)."""
    with Session(engine) as session:
        found = source_named(session, name, create=False)
        if found is not None:
            found.origins = list(urls)
            session.add(found)
            session.commit()


def default_source_name(target: str) -> str:
    if target.startswith(WEB_PREFIXES):
        host = target.split("://", 1)[1].split("/", 1)[0].rpartition("@")[2]
        return host.split(":", 1)[0].lower() or target
    path = Path(target)
    return (path.resolve().name if path.name in ("", ".", "..") else path.name) or target


def _documents(targets: list[str], settings: Settings) -> Iterator[ReadResult]:
    """The files first, then the web pages, read lazily as the import asks for them."""
    urls = [target for target in targets if target.startswith(WEB_PREFIXES)]
    paths = [Path(target) for target in targets if not target.startswith(WEB_PREFIXES)]
    files = read_paths(paths, max_bytes=settings.knowledge_max_document_bytes)
    if not urls:
        return files
    return itertools.chain(files, read_urls(urls, limits=WebLimits.from_settings(settings)))


@contextmanager
def _opened_database(settings: Settings, *, embeds: bool = False) -> Iterator[Engine]:
    """The settings' database, its schema checked; with ``embeds``, the settings' embedder attached to it."""
    engine = create_db_engine(settings.resolved_database_url)
    try:
        if not inspect(engine).has_table(KnowledgeSource.__tablename__):
            raise CommandError("the database has no knowledge tables yet; run memdesk migrate, then this again.")
        if embeds:
            attach_vectors(engine, embedder_from_settings(settings))
        yield engine
    finally:
        engine.dispose()


@contextmanager
def _progress_bar() -> Iterator[ImportProgress | None]:
    """A spinner with the count and the last document on a terminal; nothing when stderr is a file or a pipe."""
    if not sys.stderr.isatty():
        yield None
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.completed} documents"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def advance(locator: str, outcome: str) -> None:
            bar.update(task, advance=1, description=f"{outcome}: {locator[-SHOWN_LOCATOR_CHARS:]}")

        yield advance


def describe(report: ImportReport) -> str:
    counts = ", ".join(f"{count} {outcome}" for outcome, count in report.counts().items())
    head = "Dry run, nothing written" if report.dry_run else "Imported"
    lines = [f"{head} into the source {report.source!r}: {counts}."]
    if report.failed:
        lines.append("Failed:")
        lines.extend(f"  {failure.locator}: {failure.reason}" for failure in report.failed)
    lines.extend(report.notes)
    if not report.read_any:
        lines.append("No document could be read: check the paths and addresses above.")
    return "\n".join(lines)


@knowledge_commands.command("list")
def list_command(as_json: JsonOption = False, database_url: DatabaseUrlOption = None) -> None:
    """List the sources and what they hold.

    Each source with its documents, chunks and last import."""
    settings = load_settings(database_url)
    with database_errors_explained(), _opened_database(settings) as engine:
        rows = source_rows(engine)
    if as_json:
        print(json.dumps(rows, ensure_ascii=False))
    elif not rows:
        print("No knowledge sources yet; add one with memdesk knowledge import PATH_OR_URL.")
    else:
        print(_table(rows))


def source_rows(engine: Engine) -> list[dict[str, Any]]:
    """Each source with its document and chunk counts and its last import, by name."""
    documents = (
        select(KnowledgeDocument.source_id, func.count().label("documents"))
        .group_by(col(KnowledgeDocument.source_id))
        .subquery()
    )
    chunks = (
        select(KnowledgeDocument.source_id, func.count(col(KnowledgeChunk.id)).label("chunks"))
        .join(KnowledgeChunk, col(KnowledgeChunk.document_id) == col(KnowledgeDocument.id))
        .group_by(col(KnowledgeDocument.source_id))
        .subquery()
    )
    statement = (
        select(KnowledgeSource.name, KnowledgeSource.last_import_at, documents.c.documents, chunks.c.chunks)
        .outerjoin(documents, documents.c.source_id == col(KnowledgeSource.id))
        .outerjoin(chunks, chunks.c.source_id == col(KnowledgeSource.id))
        .order_by(col(KnowledgeSource.name))
    )
    with Session(engine) as session:
        return [
            {"source": name, "documents": docs or 0, "chunks": parts or 0, "last_import_at": _iso(last)}
            for name, last, docs, parts in session.exec(statement).all()
        ]


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment is not None else None


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len("SOURCE"), *(len(row["source"]) for row in rows))
    lines = [f"{'SOURCE':<{width}}  {'DOCUMENTS':>9}  {'CHUNKS':>7}  LAST IMPORT"]
    for row in rows:
        last = row["last_import_at"] or "never"
        lines.append(f"{row['source']:<{width}}  {row['documents']:>9}  {row['chunks']:>7}  {last}")
    return "\n".join(lines)


YesOption = Annotated[bool, typer.Option("--yes", help="confirm: the source and its documents are deleted for good")]


@knowledge_commands.command("delete")
def delete_command(
    source: Annotated[
        str, typer.Argument(help="the source's name, as knowledge list shows it", metavar="SOURCE", show_default=False)
    ],
    yes: YesOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Delete a source and all its documents.

    Replies that cited them keep their citations."""
    if not yes:
        raise CommandError(f"this deletes the source {source!r} and all its documents; add --yes to confirm.")
    settings = load_settings(database_url)
    with database_errors_explained(), _opened_database(settings) as engine, Session(engine) as session:
        removed = delete_source(session, source)
        session.commit()
    if removed is None:
        raise CommandError(f"there is no source named {source!r}; memdesk knowledge list shows the sources.")
    print(f"Deleted the source {source!r} and its {removed} documents.")
