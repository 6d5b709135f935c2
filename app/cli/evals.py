"""``memdesk eval run`` and ``memdesk eval compare``: scenarios of simulated customers against the configured models.

``run`` reads scenario files (``app.evals.scenario``; the default suite with no path), runs each against a fresh app
(``app.evals.runner``) with the models the settings name (the embedded demo model, started as ``memdesk serve``
starts it, when no endpoint is set), prints a table (or ``--json``), writes ``--junit`` XML,
and exits non-zero when a scenario did not turn out as expected. With ``--customer-model`` that model, on the same
endpoint, plays the customer of each day that gives a goal (``app.evals.simulated``). ``compare`` exits non-zero on
a regression.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from app.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    CommandError,
    Invocation,
    command_group,
    database_errors_explained,
    load_settings,
)
from app.cli.serve import start_local_model
from app.evals.report import compare, junit, table
from app.evals.runner import run_suite
from app.evals.scenario import ScenarioError, load_scenarios
from app.evals.store import save_run
from app.settings import Settings

eval_commands = command_group()


@eval_commands.callback()
def eval_group(context: typer.Context) -> None:
    """Evaluations: scripted customers check that the bot still handles the typical conversations."""
    Invocation.note_subcommand(context)


PathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(help="scenario files or folders (default: the demo shop suite)", metavar="PATH", show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print the report as one JSON object")]
JunitOption = Annotated[
    Path | None, typer.Option("--junit", metavar="FILE", help="also write the report as JUnit XML", show_default=False)
]
NoSaveOption = Annotated[
    bool, typer.Option("--no-save", help="do not save the run in the database (the console lists saved runs)")
]
CustomerModelOption = Annotated[
    str | None,
    typer.Option(
        "--customer-model",
        metavar="MODEL",
        help="a model on the LLM endpoint that plays the customer of each day with a goal (else scripted lines)",
        show_default=False,
    ),
]
KeepOption = Annotated[
    Path | None,
    typer.Option("--work-dir", metavar="DIR", help="keep each scenario's database here", show_default=False),
]


@eval_commands.command("run")
def run_command(paths: PathsArgument = None, as_json: JsonOption = False, junit_file: JunitOption = None,
                work_dir: KeepOption = None, no_save: NoSaveOption = False,
                customer_model: CustomerModelOption = None) -> None:  # fmt: skip
    """Run scenarios against the configured models.

    Exits 1 unless every scenario turned out as expected."""
    try:
        scenarios = load_scenarios(paths or [])
    except ScenarioError as error:
        raise CommandError(str(error)) from None
    settings = load_settings()
    folder = work_dir or Path(tempfile.mkdtemp(prefix="memdesk-eval-"))
    progress = None if as_json or not sys.stderr.isatty() else (lambda line: print(line, file=sys.stderr))
    local = start_local_model(settings) if settings.uses_embedded_llm else None
    try:
        report = run_suite(scenarios, settings, folder, progress=progress, customer_model=customer_model).as_json()
    finally:
        if local is not None:
            local.stop()
        if work_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    if junit_file is not None:
        junit_file.write_text(junit(report), encoding="utf-8")
    if not no_save:
        _save(settings, report)
    print(json.dumps(report) if as_json else table(report))
    raise typer.Exit(EXIT_OK if report["as_expected"] == report["scenarios"] else EXIT_FAILURE)


@eval_commands.command("compare")
def compare_command(
    before: Annotated[Path, typer.Argument(help="the earlier run's JSON report", metavar="A.json")],
    after: Annotated[Path, typer.Argument(help="the later run's JSON report", metavar="B.json")],
) -> None:
    """List what regressed from run A to run B.

    Exits 1 when anything did."""
    try:
        regressions = compare(_report(before), _report(after))
    except (KeyError, TypeError) as error:
        raise CommandError(
            f"a report lacks what memdesk eval run --json writes ({error}); compare two such reports."
        ) from None
    for line in regressions:
        print(line)
    print(f"{len(regressions)} regression(s)" if regressions else "no regression")
    raise typer.Exit(EXIT_FAILURE if regressions else EXIT_OK)


def _report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CommandError(
            f"{path}: not a readable eval report ({error}); make one with memdesk eval run --json."
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise CommandError(f"{path}: not an eval report (no results); make one with memdesk eval run --json.")
    return data


def _save(settings: Settings, report: dict[str, Any]) -> None:
    """Into the configured database, migrated first; a database that cannot take it is said, and the run stands."""
    from app.db import create_db_engine, migrate

    url = settings.resolved_database_url
    try:
        with database_errors_explained():
            migrate(url)
            engine = create_db_engine(url)
            try:
                run_id = save_run(engine, report)
            finally:
                engine.dispose()
    except CommandError as error:
        print(f"the run was not saved: {error}", file=sys.stderr)
        return
    print(f"saved as run {run_id}; the console shows it at /console/evals/{run_id}", file=sys.stderr)
