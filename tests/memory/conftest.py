"""A real Mem0 over the real embedded SQLite store in a temporary directory, with the fast hashing embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.config import EmbedderKind, MemoryOptions
from memory.store import CustomerMemory


def hashing_options(data_dir: Path) -> MemoryOptions:
    return MemoryOptions(data_dir=data_dir, embedder=EmbedderKind.HASHING)


@pytest.fixture
def customer_memory(tmp_path: Path) -> Iterator[CustomerMemory]:
    store = CustomerMemory(hashing_options(tmp_path))
    yield store
    store.close()
