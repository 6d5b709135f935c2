"""The ``memdesk`` command line itself: version, parsing, ``--database-url`` on every command, and failures that
read as sentences saying what to do."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path

import pytest

from app.cli import main
from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from memory.config import VectorStoreKind
from memory.store import CustomerMemory
from tests.memory.conftest import hashing_options
from tests.support.serve_process import REPOSITORY_ROOT, TEST_SECRET_KEY
from tests.support.servers import free_port, loopback_url, started_process


@pytest.fixture(autouse=True)
def logging_restored() -> Iterator[None]:
    """``memdesk sync`` configures logging for its process; here that process is pytest's, and the handlers it
    installs write to this test's captured standard error, closed after the test. Put back what was there."""
    names = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "py.warnings")
    saved = {name: logging.getLogger(name) for name in names}
    state = {name: (list(log.handlers), list(log.filters), log.level, log.propagate) for name, log in saved.items()}
    yield
    logging.captureWarnings(False)
    for name, log in saved.items():
        log.handlers, log.filters, log.level, log.propagate = state[name]


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"memdesk {version('memdesk')}\n"


COMMANDS = (
    ["migrate"],
    ["seed-demo"],
    ["serve"],
    ["sync"],
    ["customer"],
    ["customer", "export"],
    ["customer", "erase"],
    ["eval"],
    ["eval", "run"],
    ["eval", "compare"],
    ["knowledge"],
    ["knowledge", "import"],
    ["knowledge", "list"],
    ["knowledge", "delete"],
    ["memory"],
    ["memory", "migrate-store"],
    ["staff"],
    ["staff", "add"],
    ["staff", "list"],
    ["staff", "disable"],
    ["staff", "enable"],
    ["staff", "set-password"],
)


def test_help_lists_every_command_and_shows_flags_without_a_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    listed = {line.split()[0] for line in top.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == {words[0] for words in COMMANDS}
    assert "  --version  show the version and exit" in top
    for words in COMMANDS:
        assert main([*words, "--help"]) == 0
        page = capsys.readouterr().out
        assert page.startswith(f"Usage: memdesk {' '.join(words)} ")
        assert "<bool>" not in page, f"a flag shown as taking a value in memdesk {' '.join(words)} --help"
        # A group's list of commands, not a usage line, where "..." means an argument that repeats.
        commands = page.split("Commands:")[1] if "Commands:" in page else ""
        assert "..." not in commands, "a command's description cut short"


def test_a_command_line_that_does_not_parse_exits_2_with_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    assert "No such command 'no-such-command'" in capsys.readouterr().err
    assert main(["seed-demo", "--base-date", "yesterday"]) == 2
    assert "'yesterday' is not a date; use the form 2026-11-20." in capsys.readouterr().err


def test_every_database_command_uses_database_url_instead_of_the_data_directory(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'chosen.db'}"
    assert main(["migrate", "--database-url", url]) == 0
    assert main(["seed-demo", "--database-url", url]) == 0
    capsys.readouterr()
    assert main(["sync", "--dry-run", "--json", "--database-url", url]) == 0
    assert json.loads(capsys.readouterr().out)["scanned"] == 0, "the seeded shop has no conversation to sync"
    assert main(["customer", "export", "demo-cust-0001", "--database-url", url]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["your_details"]["shop_customer_id"] == "demo-cust-0001"
    assert exported["orders"], "the seeded customer has orders"
    (internal_id,) = sqlite3.connect(tmp_path / "chosen.db").execute(
        "SELECT id FROM customers WHERE external_id = 'demo-cust-0001'"
    )
    del exported["generated_at"]
    for reference in (exported["your_details"]["reference"], str(internal_id[0])):
        assert main(["customer", "export", reference, "--database-url", url]) == 0
        again = json.loads(capsys.readouterr().out)
        del again["generated_at"]
        assert again == exported, f"the same customer by {reference}"
    assert main(["customer", "erase", "demo-cust-0002", "--yes", "--database-url", url]) == 0
    assert "Erased customer demo-cust-0002" in capsys.readouterr().out
    remaining = {row[0] for row in sqlite3.connect(tmp_path / "chosen.db").execute("SELECT external_id FROM customers")}
    assert "demo-cust-0001" in remaining and "demo-cust-0002" not in remaining
    assert not (data_dir / "memdesk.db").exists(), "the default database was touched"


def test_serve_uses_database_url(data_dir: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    port = free_port()
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPOSITORY_ROOT),
        "MEM0_TELEMETRY": "False",
        "MEMDESK_ENVIRONMENT": "test",
        "MEMDESK_SECRET_KEY": TEST_SECRET_KEY,
        "MEMDESK_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "MEMDESK_ACCESS_LOG": "false",
    }
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--database-url", url]
    with started_process(
        command,
        log_path=tmp_path / "serve.log",
        url=f"{loopback_url(port)}/healthz",
        env=environment,
        stop_timeout_s=30,
    ) as served:
        assert f"database:      {url}" in served.output()
        tables = {row[0] for row in sqlite3.connect(tmp_path / "served.db").execute("SELECT name FROM sqlite_master")}
        assert "customers" in tables
        assert not (data_dir / "memdesk.db").exists()
        record = json.loads((data_dir / "memdesk-serve.json").read_text())
        assert record == {"pid": served.pid, "url": loopback_url(port), "database": url}
    assert served.process.returncode == 0, served.output()
    assert not (data_dir / "memdesk-serve.json").exists()


def test_a_missing_database_driver_is_named_with_the_install_command(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sqlalchemy")
    if __import__("importlib.util").util.find_spec("pg8000") is not None:
        pytest.skip("pg8000 is installed here")
    assert main(["migrate", "--database-url", "postgresql+pg8000://memdesk@127.0.0.1:9/memdesk"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("memdesk migrate: the database driver 'pg8000' is not installed.")


def test_an_unreachable_database_is_a_sentence_not_a_traceback(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql+psycopg://memdesk@127.0.0.1:9/memdesk"  # nothing listens on the discard port
    assert main(["customer", "export", "demo-cust-0001", "--database-url", url]) == 1
    error = capsys.readouterr().err
    assert error.startswith("memdesk customer export: database error:")
    assert "Check MEMDESK_DATABASE_URL (or --database-url)" in error


def test_invalid_settings_are_reported_with_the_setting_to_change(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMDESK_ENVIRONMENT", "production")
    assert main(["migrate"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("memdesk migrate: the settings are not valid.")
    assert "MEMDESK_SECRET_KEY is still the placeholder" in error


def test_an_unknown_customer_is_named(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["customer", "export", "demo-cust-9999"]) == 1
    assert "No customer 'demo-cust-9999'" in capsys.readouterr().err


def test_memory_migrate_store_moves_a_qdrant_store_into_the_sqlite_store(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qdrant = CustomerMemory(replace(hashing_options(data_dir), vector_store=VectorStoreKind.QDRANT))
    try:
        for customer in ("1", "2"):
            qdrant.remember([Conclusion(customer, ConclusionKind.PREFERENCE, f"Customer {customer} prefers SMS",
                                        ConclusionSource.COMPACTION)])  # fmt: skip
        before = {customer: _listing(qdrant, customer) for customer in ("1", "2")}
    finally:
        qdrant.close()
    collection = hashing_options(data_dir).collection

    assert main(["memory", "migrate-store", "--from", "qdrant", "--to", "sqlite"]) == 0
    output = capsys.readouterr().out
    assert output.startswith("Copied the memories from qdrant to sqlite:\n")
    assert f"  {collection}: 2 written, 0 already there\n" in output
    assert main(["memory", "migrate-store", "--from", "qdrant"]) == 0, "the target defaults to the configured store"
    assert f"  {collection}: 0 written, 2 already there\n" in capsys.readouterr().out

    sqlite = CustomerMemory(hashing_options(data_dir))
    try:
        assert {customer: _listing(sqlite, customer) for customer in ("1", "2")} == before
    finally:
        sqlite.close()
    assert main(["memory", "migrate-store", "--from", "sqlite", "--to", "sqlite"]) == 1
    assert capsys.readouterr().err == (
        "memdesk memory migrate-store: The source and the target are both sqlite; name two different stores.\n"
    )


def _listing(store: CustomerMemory, customer: str) -> set[tuple[str, str, str]]:
    return {(item.id, item.text, item.status) for item in store.list(customer)}


def test_memory_migrate_store_from_a_qdrant_store_in_use_says_to_stop_the_server(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    held = CustomerMemory(replace(hashing_options(data_dir), vector_store=VectorStoreKind.QDRANT))
    try:
        assert main(["memory", "migrate-store", "--from", "qdrant", "--to", "sqlite"]) == 1
    finally:
        held.close()
    error = capsys.readouterr().err
    assert error.startswith("memdesk memory migrate-store: another process holds the Qdrant store at ")
    assert error.endswith("Stop memdesk serve on this data directory and run the command again.\n")


def test_main_stays_the_entry_point_after_the_commands_are_imported() -> None:
    import importlib

    import app.cli

    importlib.import_module("app.cli.commands")
    assert app.cli.main(["--version"]) == 0
    assert callable(app.cli.main) and app.cli.main.__module__ == "app.cli"


def test_serve_refuses_a_playbook_file_with_errors_naming_its_line(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "playbooks"
    folder.mkdir()
    shipped = (REPOSITORY_ROOT / "app/demo_shop/playbooks/cancel_order.toml").read_text("utf-8")
    broken = shipped.replace('mode = "always"', 'mode = "sometimes"')
    (folder / "gift_cards.toml").write_text(broken.replace('name = "cancel_order"', 'name = "gift_cards"'))
    line = broken.splitlines().index('mode = "sometimes"') + 1
    monkeypatch.setenv("MEMDESK_PLAYBOOKS_DIR", str(folder))
    monkeypatch.setenv("MEMDESK_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["serve"]) == 1
    error = capsys.readouterr().err
    assert "MEMDESK_PLAYBOOKS_DIR" in error and f"gift_cards.toml, line {line}" in error and "sometimes" in error
