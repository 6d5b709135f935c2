"""Which older memories a newly stored one supersedes, and the marks that record it.

``CustomerMemory`` stores a conclusion, then asks ``supersession_marks`` which of the customer's active memories are
the same decision (``memory.conclusions.decision_match``) and writes the marks it returns. Every mark records what
replaced the memory (``superseded_by``), when (``superseded_at``) and why (``superseded_reason``, a sentence the
console shows). A memory a human locked wins over a newer automatic one, which is then the one superseded; a memory a
human adds supersedes the automatic ones and leaves other locked ones alone.

``Comparison`` holds the embeddings of one such pass, so each text is embedded once, and looks preference topics up
in the process's ``memory.subjects.TopicIndex`` for the memory's embedder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from memory.conclusions import Conclusion, MemoryStatus, decision_match
from memory.subjects import TopicIndex, cosine, topic_index

HUMAN_EDIT_WINS = "a human edited the memory it contradicts"

Raw = dict[str, Any]
Embed = Callable[[str], Sequence[float]]


def embedder_key(embedder: Any) -> tuple[Any, ...]:
    """What tells one embedder's vectors from another's, to keep one ``TopicIndex`` per embedder in a process."""
    config = getattr(embedder, "config", None)
    return (
        type(embedder).__module__,
        type(embedder).__qualname__,
        getattr(config, "model", None),
        getattr(config, "embedding_dims", None),
        getattr(embedder, "quantized", None),
    )


class Comparison:
    """Similarity and preference topics for one supersession pass, each text embedded once."""

    def __init__(self, embed: Embed, key: tuple[Any, ...]) -> None:
        self._embed = embed
        self._key = key
        self._vectors: dict[str, Sequence[float]] = {}
        self._topics: TopicIndex | None = None

    def vector(self, text: str) -> Sequence[float]:
        if text not in self._vectors:
            self._vectors[text] = self._embed(text)
        return self._vectors[text]

    def similarity(self, first: str, second: str) -> float:
        return cosine(self.vector(first), self.vector(second))

    def topic(self, text: str) -> str | None:
        if self._topics is None:
            self._topics = topic_index(self._key, self._embed)
        return self._topics.topic_of(self.vector(text))


def supersession_marks(
    conclusion: Conclusion,
    new_id: str,
    known: Sequence[Raw],
    comparison: Comparison,
    *,
    new_is_locked: bool = False,
) -> list[tuple[str, dict[str, Any]]]:
    """(memory id, metadata to write) for each memory that storing ``conclusion`` as ``new_id`` supersedes."""
    related = _same_decisions(conclusion, known, comparison)
    locked = [(raw, reason) for raw, reason in related if (raw.get("metadata") or {}).get("locked")]
    now = datetime.now(UTC).isoformat()
    if new_is_locked:
        return [
            (str(raw["id"]), _mark(new_id, now, f"a human wrote the memory that replaces it ({reason})"))
            for raw, reason in related
            if (raw, reason) not in locked
        ]
    if locked:
        return [(new_id, _mark(str(locked[0][0]["id"]), now, HUMAN_EDIT_WINS))]
    return [(str(raw["id"]), _mark(new_id, now, reason)) for raw, reason in related]


def _same_decisions(conclusion: Conclusion, known: Sequence[Raw], comparison: Comparison) -> list[tuple[Raw, str]]:
    related = []
    for raw in known:
        metadata = raw.get("metadata") or {}
        if metadata.get("status", MemoryStatus.ACTIVE.value) != MemoryStatus.ACTIVE.value:
            continue
        reason = decision_match(
            conclusion.kind.value,
            conclusion.identifiers,
            conclusion.text,
            metadata,
            str(raw.get("memory") or ""),
            comparison.similarity,
            comparison.topic,
        )
        if reason is not None:
            related.append((raw, reason))
    return related


def _mark(by: str, at: str, reason: str) -> dict[str, Any]:
    return {
        "status": MemoryStatus.SUPERSEDED.value,
        "superseded_by": by,
        "superseded_at": at,
        "superseded_reason": reason,
    }
