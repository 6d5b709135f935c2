"""Fixtures of the knowledge tests: a migrated SQLite or PostgreSQL database with a recording hashing embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from app.knowledge.vectors import KnowledgeVectors
from tests.support.knowledge import RecordingEmbedder, knowledge_engine


@pytest.fixture
def embedder() -> RecordingEmbedder:
    return RecordingEmbedder()


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path, embedder: RecordingEmbedder) -> Iterator[Engine]:
    url = (
        f"sqlite:///{tmp_path / 'knowledge.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    db_engine, _ = knowledge_engine(url, embedder)
    yield db_engine
    db_engine.dispose()


@pytest.fixture
def sqlite_engine(tmp_path: Path, embedder: RecordingEmbedder) -> Iterator[Engine]:
    db_engine, _ = knowledge_engine(f"sqlite:///{tmp_path / 'knowledge.db'}", embedder)
    yield db_engine
    db_engine.dispose()


@pytest.fixture
def vectors(engine: Engine) -> KnowledgeVectors:
    from app.knowledge.vectors import vectors_for

    return vectors_for(engine)
