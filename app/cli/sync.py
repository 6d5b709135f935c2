"""``memdesk sync``: one run of the conclusion sync by hand or from cron (``run_standalone``).

Output: on a terminal, a progress bar on standard error while conversations are synced; then a table of the run
record on standard output (written for people, plain text when redirected to a file). With ``--json``, the run record
as one JSON object on standard output and nothing else there. A dry run writes nothing and reports what a run would
do. Log records (warnings, errors) go to standard error in ``MEMDESK_LOG_FORMAT``.

Exit codes: 0 when every conversation synced; ``EXIT_CONVERSATIONS_FAILED`` when at least one failed (it keeps its
watermark and the next run retries it); ``EXIT_SYNC_BUSY`` when another sync holds the lock (try again later).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from app.cli.common import DatabaseUrlOption, database_errors_explained, load_settings
from app.customer_memory.options import memory_options
from app.customer_memory.outbox import SqlOutboxRepository
from app.db import create_db_engine, upgrade
from app.infra.logs import configure_logging
from app.llm import LLMGateway
from app.settings import Settings
from app.sync import SyncAlreadyRunningError, SyncOptions, SyncReport, app_sync_runner, exclusive_sync, options_from
from app.sync.conversation import ConversationSync, Outcome
from app.sync.runner import Progress as SyncProgress
from memory.outbox import ConclusionOutbox
from memory.store import CustomerMemory

EXIT_CONVERSATIONS_FAILED = 1
# EX_TEMPFAIL in sysexits.h: a temporary condition, the same command later will work.
EXIT_SYNC_BUSY = 75

# The counters of the run record, in the order the table shows them.
RECORD_COUNTS = (
    ("scanned", "conversations scanned"),
    ("summarized", "summarized"),
    ("skipped", "skipped (nothing new said)"),
    ("failed", "failed (retried next run)"),
    ("conclusions_written", "conclusions written"),
    ("conclusions_superseded", "conclusions superseded"),
    ("promises_expired", "promises expired"),
    ("outbox_retried", "failed outbox rows retried"),
)

DryRunOption = Annotated[bool, typer.Option("--dry-run", help="report what a run would do; write nothing")]
LimitOption = Annotated[
    int | None, typer.Option(help="sync at most this many conversations", min=1, metavar="N", show_default=False)
]
ConversationOption = Annotated[
    str | None,
    typer.Option(
        help="sync only this conversation (its public id, cnv_…), idle or not", metavar="ID", show_default=False
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print the run record as one JSON object")]


def sync_command(
    dry_run: DryRunOption = False,
    limit: LimitOption = None,
    conversation: ConversationOption = None,
    as_json: JsonOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Write every conversation's new conclusions to long-term memory."""
    settings = load_settings(database_url)
    configure_logging(settings)
    options = options_from(settings, dry_run=dry_run, limit=limit, conversation=conversation)
    try:
        with database_errors_explained(), _progress_shown(not as_json and sys.stderr.isatty()) as progress:
            report = run_standalone(settings, options, progress=progress)
    except SyncAlreadyRunningError as error:
        print(f"memdesk sync: {error} Nothing was done; run it again once that run has finished.", file=sys.stderr)
        raise typer.Exit(EXIT_SYNC_BUSY) from error
    document = run_document(report)
    if as_json:
        print(json.dumps(document))
    else:
        print_tables(document, Console(highlight=False))
    if document["failed"]:
        raise typer.Exit(EXIT_CONVERSATIONS_FAILED)


@contextmanager
def _progress_shown(on_terminal: bool) -> Iterator[Callable[[ConversationSync], None] | None]:
    """A progress callback drawing a bar on standard error, or None. The sync does not say in advance how many
    conversations it picked, so the bar pulses and counts."""
    if not on_terminal:
        yield None
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("syncing", total=None)
        seen: dict[Outcome, int] = dict.fromkeys(Outcome, 0)

        def advance(item: ConversationSync) -> None:
            seen[item.outcome] += 1
            counts = ", ".join(f"{count} {outcome.value}" for outcome, count in seen.items())
            bar.update(task, advance=1, description=f"{sum(seen.values())} conversations: {counts}")

        yield advance


def run_document(report: SyncReport) -> dict[str, Any]:
    """The run record as JSON-ready values; for a dry run, which has no record, what the run would have done."""
    if report.record is not None:
        return report.record.model_dump(mode="json")
    return {
        "dry_run": True,
        "scanned": len(report.conversations),
        "summarized": report.count(Outcome.SUMMARIZED),
        "skipped": report.count(Outcome.SKIPPED),
        "failed": report.count(Outcome.FAILED),
        "new_messages": sum(item.new_messages for item in report.conversations),
        "to_summarize": [item.conversation_id for item in report.conversations if item.outcome == Outcome.SUMMARIZED],
    }


def print_tables(document: dict[str, Any], console: Console) -> None:
    if document.get("id") is None:
        _print_dry_run(document, console)
        return
    console.print(f"Conclusion sync {document['id']} ({document['status']}).")
    counts = Table(show_header=False)
    for key, label in RECORD_COUNTS:
        counts.add_row(label, str(document[key]))
    counts.add_row("started", document["started_at"])
    counts.add_row("finished", document["finished_at"])
    console.print(counts)
    if document["usage"]:
        usage = Table("model", "prompt tokens", "completion tokens", "cost (USD)", title="Summary calls")
        for model, spent in document["usage"].items():
            cost = "unknown price" if spent["cost_usd"] is None else f"{spent['cost_usd']:.6f}"
            usage.add_row(model, str(spent["prompt_tokens"]), str(spent["completion_tokens"]), cost)
        console.print(usage)
    if document["errors"]:
        errors = Table("conversation", "error", title="Failed conversations")
        for failure in document["errors"]:
            errors.add_row(failure["conversation_id"], failure["error"])
        console.print(errors)


def _print_dry_run(document: dict[str, Any], console: Console) -> None:
    console.print("Conclusion sync, dry run: nothing was written.")
    table = Table(show_header=False)
    table.add_row("conversations picked", str(document["scanned"]))
    table.add_row("to summarize", str(document["summarized"]))
    table.add_row("to skip (nothing new said)", str(document["skipped"]))
    table.add_row("new messages", str(document["new_messages"]))
    console.print(table)
    for conversation in document["to_summarize"]:
        console.print(f"  would summarize {conversation}")


def run_standalone(settings: Settings, options: SyncOptions, *, progress: SyncProgress | None = None) -> SyncReport:
    """One run outside the server: its own database engine, gateway and memory store, closed when it ends."""
    db = create_db_engine(settings.resolved_database_url)
    gateway = LLMGateway.from_settings(settings)
    store: CustomerMemory | None = None
    try:
        upgrade(db)
        with exclusive_sync(db, settings.data_dir):
            if settings.memory_enabled and not options.dry_run:
                store = CustomerMemory(memory_options(settings))
            outbox = ConclusionOutbox(SqlOutboxRepository(db), store) if store is not None else None
            runner = app_sync_runner(db, gateway, settings, memory=store, outbox=outbox)
            return runner.run(options, progress=progress)
    finally:
        if store is not None:
            store.close()
        gateway.close()
        db.dispose()
