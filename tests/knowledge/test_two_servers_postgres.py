"""Two memdesk servers on one PostgreSQL database: knowledge imported by the command while both run is found by
the console search of either, and a changed document replaces the old text in both (each server's vector
search follows the table, not what it loaded first)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cli import main
from app.models import StaffRole
from tests.support.console_support import StaffClient, console_settings, signed_in
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture
def servers(tmp_path: Path, postgres_url: str, scripted_server: ScriptedLLMServer) -> Iterator[list[LiveApp]]:
    settings = [
        console_settings(tmp_path / name, scripted_server, database_url=postgres_url, memory_embedder="hashing")
        for name in ("one", "two")
    ]
    for first in run_live_app(settings[0]):
        for second in run_live_app(settings[1]):
            yield [first, second]


def _import(folder: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("MEMDESK_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMDESK_DATABASE_URL", postgres_url)
    monkeypatch.setenv("MEMDESK_MEMORY_EMBEDDER", "hashing")
    assert main(["knowledge", "import", str(folder), "--source", "help"]) == 0


def _search(supervisor: StaffClient, question: str) -> str:
    response = supervisor.get("/console/knowledge/search", params={"q": question})
    assert response.status_code == 200, response.text
    return response.text


def test_an_import_while_two_servers_run_is_found_by_either(
    servers: list[LiveApp], postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "help"
    folder.mkdir()
    supervisors = [
        signed_in(live, StaffRole.SUPERVISOR, f"sue{index}@example.com") for index, live in enumerate(servers)
    ]
    for supervisor in supervisors:  # each server has searched (and loaded its vectors) before the import
        assert "Warranty" not in _search(supervisor, "warranty for blenders")
    (folder / "warranty.md").write_text("# Warranty\n\nBlenders carry a warranty of two years from delivery.\n")
    _import(folder, postgres_url, monkeypatch)
    for supervisor in supervisors:
        assert "two years from delivery" in _search(supervisor, "warranty for blenders")

    (folder / "warranty.md").write_text("# Warranty\n\nBlenders carry a warranty of three years from delivery.\n")
    _import(folder, postgres_url, monkeypatch)
    for supervisor in supervisors:
        found = _search(supervisor, "warranty for blenders")
        assert "three years from delivery" in found and "two years" not in found
