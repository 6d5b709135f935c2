"""The recall query of a burst is embedded once per customer, and erasure empties what the cache holds."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from memory.embedders import HashingEmbedder
from memory.store import CustomerMemory
from tests.memory.conftest import hashing_options

QUESTION = "How will you keep me updated about my delivery?"


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, recording every text it was asked to embed for a search."""

    def __init__(self) -> None:
        super().__init__()
        self.searches: list[str] = []

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:  # type: ignore[override]
        if memory_action == "search":
            self.searches.append(text)
        return super().embed(text, memory_action)  # type: ignore[arg-type]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:  # type: ignore[override]
        return [self.embed(text, memory_action) for text in texts]


def _preference(customer: str) -> Conclusion:
    return Conclusion(customer, ConclusionKind.PREFERENCE, "Prefers SMS for delivery updates", ConclusionSource.AGENT)


def test_the_same_question_of_one_customer_is_embedded_once_and_still_recalled(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    store = CustomerMemory(hashing_options(tmp_path), embedder=embedder)
    try:
        store.remember([_preference("41"), _preference("42")])
        first = store.recall("41", QUESTION)
        second = store.recall("41", QUESTION)
        other = store.recall("42", QUESTION)
        assert embedder.searches.count(QUESTION) == 2, "once for customer 41, once for customer 42"
        assert [item.text for item in first] == [item.text for item in second] == ["Prefers SMS for delivery updates"]
        assert [item.customer_id for item in other] == ["42"]
    finally:
        store.close()


def test_forgetting_a_customer_drops_their_cached_queries_and_no_one_elses(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    store = CustomerMemory(hashing_options(tmp_path), embedder=embedder)
    try:
        store.remember([_preference("41"), _preference("42")])
        store.recall("41", QUESTION)
        store.recall("42", QUESTION)
        store.forget_customer("41")
        assert store.query_cache.get("41", QUESTION) is None
        assert store.query_cache.get("42", QUESTION) is not None
        assert store.recall("41", QUESTION) == []
        assert embedder.searches.count(QUESTION) == 3, "customer 41's question is embedded again after erasure"
    finally:
        store.close()
