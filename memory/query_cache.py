"""Embeddings of recent recall queries, per customer, so a query is embedded once for the turns of one burst.

``QueryEmbeddingCache`` keeps at most ``QUERY_CACHE_MAX_ENTRIES`` (customer, query) vectors for
``QUERY_CACHE_TTL_S``: long enough for the turns that answer one burst of messages (and a turn run again by
recovery), short enough that nothing lingers. ``forget`` drops a customer's entries: erasure must reach every copy
of what a customer said, this cache included.

``CachingEmbedder`` wraps the embedder Mem0 calls. A search embedding is looked up in, and stored into, the cache
only inside ``scope(customer)`` (``CustomerMemory.recall`` opens it around Mem0's search, in the same thread);
every other embedding (stored memories, supersession checks) goes straight to the wrapped embedder.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from mem0.embeddings.base import EmbeddingBase

QUERY_CACHE_TTL_S = 30.0
QUERY_CACHE_MAX_ENTRIES = 1024
SEARCH_ACTION = "search"


class QueryEmbeddingCache:
    def __init__(self, *, ttl_s: float = QUERY_CACHE_TTL_S, max_entries: int = QUERY_CACHE_MAX_ENTRIES) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], tuple[float, list[float]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, customer_id: str, query: str) -> list[float] | None:
        key = (customer_id, query)
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            if found[0] < time.monotonic():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return found[1]

    def put(self, customer_id: str, query: str, vector: list[float]) -> None:
        with self._lock:
            self._entries[(customer_id, query)] = (time.monotonic() + self.ttl_s, vector)
            self._entries.move_to_end((customer_id, query))
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def forget(self, customer_id: str) -> None:
        with self._lock:
            for key in [key for key in self._entries if key[0] == customer_id]:
                del self._entries[key]

    def forget_all(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class CachingEmbedder(EmbeddingBase):  # type: ignore[misc]  # Mem0 ships no type information
    """``inner`` with search embeddings cached per customer inside ``scope``."""

    def __init__(self, inner: Any, cache: QueryEmbeddingCache) -> None:
        self.inner = inner
        self.config = inner.config
        self.cache = cache
        self._scope = threading.local()

    @contextmanager
    def scope(self, customer_id: str) -> Iterator[None]:
        self._scope.customer_id = customer_id
        try:
            yield
        finally:
            self._scope.customer_id = None

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        customer_id = getattr(self._scope, "customer_id", None)
        if customer_id is None or memory_action != SEARCH_ACTION:
            return list(self.inner.embed(text, memory_action))
        cached = self.cache.get(customer_id, text)
        if cached is not None:
            return cached
        vector = list(self.inner.embed(text, memory_action))
        self.cache.put(customer_id, text, vector)
        return vector

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        return [list(vector) for vector in self.inner.embed_batch(list(texts), memory_action)]
