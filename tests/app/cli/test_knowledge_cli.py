"""`memdesk knowledge import|list|delete`: files and web pages into a source, a report of each outcome, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from app.cli import main
from app.db import create_db_engine
from app.models import KnowledgeSource
from tests.support.web_site import running_site


@pytest.fixture
def data_dir(data_dir: Path) -> Path:
    """The command tests' data directory (tests/app/cli/conftest.py), its database migrated."""
    assert main(["migrate"]) == 0
    return data_dir


@pytest.fixture
def help_center(tmp_path: Path) -> Path:
    root = tmp_path / "help-center"
    (root / "orders").mkdir(parents=True)
    (root / "orders" / "returns.md").write_text("# Returns\n\nRefunds take five business days.\n")
    (root / "shipping.txt").write_text("Parcels arrive in three days.\n")
    (root / "logo.md").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))
    return root


def run_json(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> dict[str, object]:
    capsys.readouterr()
    assert main(list(args)) == code
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_import_a_folder_reports_each_outcome_and_each_failure(
    data_dir: Path, help_center: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["knowledge", "import", str(help_center)]) == 0
    out = capsys.readouterr().out
    assert "Imported into the source 'help-center': 2 added, 0 updated, 0 unchanged, 0 removed, 1 failed." in out
    assert "  logo.md: is a PNG image, not markdown text" in out


def test_import_json_is_the_report_and_a_reimport_changes_nothing(
    data_dir: Path, help_center: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run_json(capsys, "knowledge", "import", str(help_center), "--source", "Help", "--json")
    assert first["source"] == "Help"
    assert first["added"] == ["orders/returns.md", "shipping.txt"]
    assert first["failed"] == [{"locator": "logo.md", "reason": first["failed"][0]["reason"]}]  # type: ignore[index]
    again = run_json(capsys, "knowledge", "import", str(help_center), "--source", "Help", "--json")
    assert again["counts"] == {"added": 0, "updated": 0, "unchanged": 2, "removed": 0, "failed": 1}


def test_dry_run_writes_nothing(data_dir: Path, help_center: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "knowledge", "import", str(help_center), "--dry-run", "--json")
    assert report["dry_run"] is True and report["added"] == ["orders/returns.md", "shipping.txt"]
    assert run_json(capsys, "knowledge", "list", "--json") == []  # type: ignore[comparison-overlap]


def test_prune_removes_the_document_of_a_deleted_file(
    data_dir: Path, help_center: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_json(capsys, "knowledge", "import", str(help_center), "--json")
    (help_center / "shipping.txt").unlink()
    report = run_json(capsys, "knowledge", "import", str(help_center), "--prune", "--json")
    assert report["removed"] == ["shipping.txt"]


def test_list_shows_documents_chunks_and_last_import(
    data_dir: Path, help_center: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_json(capsys, "knowledge", "import", str(help_center), "--json")
    [row] = run_json(capsys, "knowledge", "list", "--json")  # type: ignore[misc]
    assert (row["source"], row["documents"]) == ("help-center", 2)
    assert row["chunks"] >= 2 and row["last_import_at"]
    assert main(["knowledge", "list"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["SOURCE", "DOCUMENTS", "CHUNKS", "LAST", "IMPORT"]
    assert table[1].split()[:2] == ["help-center", "2"]


def test_delete_needs_yes_and_removes_the_source(
    data_dir: Path, help_center: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_json(capsys, "knowledge", "import", str(help_center), "--json")
    assert main(["knowledge", "delete", "help-center"]) == 1
    assert "add --yes" in capsys.readouterr().err
    assert main(["knowledge", "delete", "help-center", "--yes"]) == 0
    assert "Deleted the source 'help-center' and its 2 documents." in capsys.readouterr().out
    assert run_json(capsys, "knowledge", "list", "--json") == []  # type: ignore[comparison-overlap]
    assert main(["knowledge", "delete", "help-center", "--yes"]) == 1
    assert "no source named 'help-center'" in capsys.readouterr().err


def test_nothing_readable_exits_1_and_says_so(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["knowledge", "import", str(tmp_path / "missing"), "--source", "docs"]) == 1
    out = capsys.readouterr().out
    assert "does not exist" in out and "No document could be read" in out


def test_usage_errors_exit_2(data_dir: Path, help_center: Path) -> None:
    assert main(["knowledge", "import"]) == 2
    assert main(["knowledge", "import", str(help_center), "--source", " "]) == 2


def test_files_and_web_pages_import_together(
    data_dir: Path, help_center: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMDESK_KNOWLEDGE_ALLOW_PRIVATE_URLS", "true")  # the test site answers on 127.0.0.1
    with running_site() as site:
        url = site.page("/warranty", "Warranty", "<h1>Warranty</h1><p>Two years on every kettle we sell.</p>")
        report = run_json(capsys, "knowledge", "import", str(help_center), url, "--source", "all", "--json")
    assert report["added"] == ["orders/returns.md", "shipping.txt", url]


def test_a_web_import_remembers_its_addresses_for_a_reimport_and_a_file_import_does_not(
    data_dir: Path, help_center: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMDESK_KNOWLEDGE_ALLOW_PRIVATE_URLS", "true")  # the test site answers on 127.0.0.1
    with running_site() as site:
        url = site.page("/warranty", "Warranty", "<h1>Warranty</h1><p>Two years on every kettle we sell.</p>")
        run_json(capsys, "knowledge", "import", url, "--source", "web", "--json")
    run_json(capsys, "knowledge", "import", str(help_center), "--source", "files", "--json")
    engine = create_db_engine(f"sqlite:///{data_dir / 'memdesk.db'}")
    try:
        with Session(engine) as session:
            origins = dict(session.exec(select(KnowledgeSource.name, KnowledgeSource.origins)).all())
    finally:
        engine.dispose()
    assert origins == {"web": [url], "files": []}


def test_an_unmigrated_database_says_to_run_migrate(
    tmp_path: Path, help_center: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert main(["knowledge", "import", str(help_center), "--database-url", url]) == 1
    assert "run memdesk migrate" in capsys.readouterr().err
