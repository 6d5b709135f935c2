"""Fixtures of the command tests: settings as a fresh checkout has them, in a temporary data directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings as a fresh checkout has them, but in a temporary data directory and with the light embedder."""
    for name in list(os.environ):
        if name.startswith("MEMDESK_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMDESK_MEMORY_EMBEDDER", "hashing")
    monkeypatch.chdir(tmp_path)  # no stray .env
    return tmp_path / "data"
