"""Long-term memory's options from the app's settings: the one translation of ``MEMDESK_MEMORY_*`` for Mem0."""

from __future__ import annotations

from app.settings import Settings
from memory.config import EmbedderKind, MemoryOptions, VectorStoreKind


def memory_options(settings: Settings) -> MemoryOptions:
    key = settings.memory_embedding_api_key
    return MemoryOptions(
        data_dir=settings.data_dir,
        vector_store=VectorStoreKind(settings.memory_store),
        embedder=EmbedderKind(settings.memory_embedder),
        embedding_model=settings.memory_embedding_model,
        embedding_base_url=settings.memory_embedding_base_url,
        embedding_api_key=key.get_secret_value() if key else None,
        pgvector_url=settings.memory_pgvector_url,
    )
