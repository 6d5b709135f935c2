"""Fixtures shared by every test package: a real PostgreSQL server (with pgvector) from the PyPI package pgserver,
and the scripted OpenAI-compatible server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One PostgreSQL server for the test session, on a Unix socket in a temporary directory."""
    pgserver = pytest.importorskip("pgserver")
    os.environ.setdefault("XDG_RUNTIME_DIR", str(tmp_path_factory.mktemp("runtime")))
    server = pgserver.get_server(str(tmp_path_factory.mktemp("pgdata")), cleanup_mode="stop")
    yield server
    server.cleanup()


@pytest.fixture
def postgres_url(postgres_server: Any) -> str:
    """A SQLAlchemy URL to a fresh, empty database on the test PostgreSQL server."""
    name = f"memdesk_{uuid.uuid4().hex[:12]}"
    postgres_server.psql(f"CREATE DATABASE {name};")
    socket_dir = postgres_server.get_uri().split("host=")[-1]
    return f"postgresql+psycopg://postgres:@/{name}?host={socket_dir}"


@pytest.fixture
def scripted_server() -> Iterator[ScriptedLLMServer]:
    """A scripted OpenAI-compatible server on an ephemeral port (see ``tests.support.scripted_llm``)."""
    with ScriptedLLMServer() as server:
        yield server
