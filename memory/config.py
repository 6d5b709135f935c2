"""Mem0 configuration for memdesk: which vector store, which embedder, and an offline, telemetry-free process.

Setups, chosen by ``MemoryOptions``:

- embedded (default): ``memory.sqlite_store`` in one SQLite file under the data dir (keyed by customer, safe for
  several local processes), the local MiniLM embedder; fully offline.
- production embeddings: the same store with an OpenAI-compatible embeddings endpoint.
- scale: pgvector in PostgreSQL (several processes and machines may share it).
- Qdrant in a local directory: the former embedded default, one process at a time; kept so that existing stores
  can be opened and migrated (``memory.migrate``).

``prepare_environment`` must run before anything imports ``mem0``: Mem0 reads ``MEM0_TELEMETRY`` and ``MEM0_DIR``
at import time, and with telemetry on it would phone home and fetch remote notices. It also quiets Mem0's warnings
about optional extras memdesk does without (``OptionalExtraNotice``).

Exception tree::

    MemoryConfigError        the options are inconsistent, or mem0 was imported before memdesk configured it
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

EMBEDDING_DIMS = 384
DEFAULT_COLLECTION = "memdesk_memories"
OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"
# Mem0 insists on an LLM config even though memdesk only stores with infer=False; this one can never be reached.
UNUSED_LLM_BASE_URL = "http://127.0.0.1:9/v1"
UNUSED_API_KEY = "unused"
EMBEDDED_THREADS = "1"
# Mem0's warnings that an optional extra is missing, by logger. memdesk recalls by vector similarity alone: it does
# not install fastembed (BM25 keyword scoring) or spaCy (entity boosts and lemmas; spaCy would also download its
# language model at first use, which cannot work offline), so these warnings describe the intended setup, not a
# fault. Every other warning from these loggers still shows.
OPTIONAL_EXTRA_WARNINGS = {
    "mem0.vector_stores.qdrant": ("fastembed not installed",),
    "mem0.utils.spacy_models": ("spaCy is not installed",),
    "mem0.memory.main": ("does not support keyword search",),  # the same BM25 scoring, said of memdesk's own store
}


class MemoryConfigError(RuntimeError):
    """Mem0 cannot be configured as asked."""


class VectorStoreKind(StrEnum):
    SQLITE = "sqlite"
    QDRANT = "qdrant"
    PGVECTOR = "pgvector"


class EmbedderKind(StrEnum):
    LOCAL = "local"  # MiniLM on this machine, no network
    OPENAI = "openai"  # any OpenAI-compatible embeddings endpoint
    HASHING = "hashing"  # deterministic feature hashing: tests and benchmarks of the store itself


@dataclass(frozen=True)
class MemoryOptions:
    data_dir: Path
    vector_store: VectorStoreKind = VectorStoreKind.SQLITE
    collection: str = DEFAULT_COLLECTION
    embedder: EmbedderKind = EmbedderKind.LOCAL
    embedding_dims: int = EMBEDDING_DIMS
    embedding_model: str = OPENAI_EMBEDDING_MODEL
    embedding_base_url: str | None = None
    embedding_api_key: str | None = None
    pgvector_url: str | None = None  # postgresql://user:password@host:port/dbname

    @property
    def mem0_dir(self) -> Path:
        return self.data_dir / "mem0"

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "memory-store.db"

    @property
    def qdrant_path(self) -> Path:
        return self.data_dir / "memory-qdrant"

    @property
    def history_db_path(self) -> Path:
        return self.data_dir / "memory-history.db"


class OptionalExtraNotice(logging.Filter):
    """Drops a Mem0 warning that only says an optional extra memdesk does not use is missing."""

    def __init__(self, fragments: tuple[str, ...]) -> None:
        super().__init__()
        self.fragments = fragments

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(fragment in message for fragment in self.fragments)


def quiet_optional_extra_warnings() -> None:
    """Attach ``OptionalExtraNotice`` to Mem0's loggers, once per logger."""
    for name, fragments in OPTIONAL_EXTRA_WARNINGS.items():
        mem0_logger = logging.getLogger(name)
        if not any(isinstance(existing, OptionalExtraNotice) for existing in mem0_logger.filters):
            mem0_logger.addFilter(OptionalExtraNotice(fragments))


def prepare_environment(options: MemoryOptions) -> None:
    """Switch Mem0's telemetry off, give it a private directory and quiet its optional-extra warnings; refuse if
    mem0 is already imported with telemetry on (then it is too late to switch it off)."""
    quiet_optional_extra_warnings()
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(options.mem0_dir))
    os.environ.setdefault("OMP_NUM_THREADS", EMBEDDED_THREADS)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    Path(os.environ["MEM0_DIR"]).mkdir(parents=True, exist_ok=True)
    telemetry = sys.modules.get("mem0.memory.telemetry")
    if telemetry is not None and getattr(telemetry, "MEM0_TELEMETRY", False):
        raise MemoryConfigError(
            "mem0 was imported before memdesk switched its telemetry off; import memory.store (not mem0) first."
        )


def with_custom_plans(url: str) -> str:
    """``url`` with ``plan_cache_mode=force_custom_plan``: Mem0 passes the JSON key of every filter as a parameter,
    and a cached generic plan for such a statement cannot use the customer-id index (``CustomerMemory``)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.setdefault("options", "-c plan_cache_mode=force_custom_plan")
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def _vector_store(options: MemoryOptions) -> dict[str, Any]:
    if options.vector_store is VectorStoreKind.PGVECTOR:
        if not options.pgvector_url:
            raise MemoryConfigError("The pgvector store needs a PostgreSQL URL (MEMDESK_MEMORY_PGVECTOR_URL).")
        return {
            "provider": "pgvector",
            "config": {
                "connection_string": with_custom_plans(options.pgvector_url),
                "collection_name": options.collection,
                "embedding_model_dims": options.embedding_dims,
                "hnsw": True,
            },
        }
    if options.vector_store is VectorStoreKind.SQLITE:
        from memory.sqlite_store import PROVIDER

        return {
            "provider": PROVIDER,
            "config": {
                "path": str(options.sqlite_path),
                "collection_name": options.collection,
                "embedding_model_dims": options.embedding_dims,
            },
        }
    options.qdrant_path.mkdir(parents=True, exist_ok=True)
    return {
        "provider": "qdrant",
        "config": {
            "path": str(options.qdrant_path),
            "collection_name": options.collection,
            "embedding_model_dims": options.embedding_dims,
            "on_disk": True,
        },
    }


def _embedder(options: MemoryOptions) -> dict[str, Any]:
    if options.embedder is EmbedderKind.OPENAI:
        if not options.embedding_base_url:
            raise MemoryConfigError("The openai embedder needs MEMDESK_MEMORY_EMBEDDING_BASE_URL.")
        return {
            "provider": "openai",
            "config": {
                "model": options.embedding_model,
                "api_key": options.embedding_api_key or UNUSED_API_KEY,
                "openai_base_url": options.embedding_base_url,
                "embedding_dims": options.embedding_dims,
            },
        }
    # Local and hashing embedders are objects memdesk hands to Mem0 after construction (memory.embedders); this
    # placeholder provider builds a client object only and is never called.
    return {
        "provider": "openai",
        "config": {
            "api_key": UNUSED_API_KEY,
            "openai_base_url": UNUSED_LLM_BASE_URL,
            "embedding_dims": options.embedding_dims,
        },
    }


def mem0_config(options: MemoryOptions) -> dict[str, Any]:
    """The Mem0 configuration of ``options`` as a dictionary (``build_mem0_config`` turns it into Mem0's model)."""
    return {
        "vector_store": _vector_store(options),
        "embedder": _embedder(options),
        "llm": {
            "provider": "openai",
            "config": {"api_key": UNUSED_API_KEY, "openai_base_url": UNUSED_LLM_BASE_URL, "model": "unused"},
        },
        "history_db_path": str(options.history_db_path),
    }


def build_mem0_config(options: MemoryOptions) -> Any:
    """Mem0's ``MemoryConfig`` for ``options`` (import mem0 only after ``prepare_environment``).

    Mem0 validates a vector-store provider against its own list of config modules; the embedded store is registered
    in Mem0's factory instead (``memory.sqlite_store.register``) and its config is set after validation."""
    from mem0.configs.base import MemoryConfig
    from mem0.vector_stores.configs import VectorStoreConfig

    raw = mem0_config(options)
    if options.vector_store is not VectorStoreKind.SQLITE:
        return MemoryConfig(**raw)
    from memory.sqlite_store import SQLiteStoreConfig, register

    register()
    store = raw.pop("vector_store")
    config = MemoryConfig(**raw)
    config.vector_store = VectorStoreConfig.model_construct(
        provider=store["provider"], config=SQLiteStoreConfig(**store["config"])
    )
    return config
