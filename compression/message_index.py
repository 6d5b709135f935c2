"""What a host stores with each message, so that a compressor in another process starts warm.

A compaction reads every message it summarizes: large tool output is reduced (``compression.pruning``) and the
identifiers are extracted from what is left (``compression.facts``). Both are cached per process, so a process that
lives as long as the conversation pays for each message once. A new process (after a restart, or another worker of
a deployment with several) would pay for the whole history at its first compaction. ``index_message`` does that
work for one message when the host stores it; the host keeps the result beside the message and passes it back under
``INDEX_KEY``, and the compressor loads it into the process caches (``prime_caches``) instead of doing it again.
An engine loads each history once (``IndexPrimer``): its aging takes the reduced tool output from it, and its
preflight estimate and compaction work through only the messages without a usable index.

An index is only believed for the exact text it was made from (a checksum) and by an extractor with the same
fingerprint and this version of pruning; anything else, a malformed index included, is ignored and the work is done
as if there were none.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from compression.facts import FactExtractor, Found
from compression.messages import ChatMessage, content_text, function_calls
from compression.pruning import PRUNE_MIN_CHARS, is_pruned, remember_shrunk, shrink_tool_output
from compression.sanitize import encodable

INDEX_KEY = "memdesk_index"
# Changes whenever pruning or extraction would produce something else for the same text, so older indexes are
# recomputed instead of believed.
INDEX_VERSION = 2


@lru_cache(maxsize=1)
def default_extractor() -> FactExtractor:
    """The extractor of the default patterns, the one hosts index with (building one is cheap, sharing is cheaper)."""
    return FactExtractor()


def _checksum(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def _version(extractor: FactExtractor) -> str:
    return f"{INDEX_VERSION}:{extractor.fingerprint}"


def _plain_content(message: ChatMessage) -> str | None:
    content = message.get("content")
    if content is None:
        return ""
    return content if isinstance(content, str) else None


def _reduces(message: ChatMessage, content: str) -> bool:
    return message.get("role") == "tool" and len(content) >= PRUNE_MIN_CHARS and not is_pruned(content)


def index_message(message: ChatMessage, extractor: FactExtractor) -> dict[str, Any] | None:
    """The index of one message (JSON-serializable), or None when its content is not plain text (or none, as in an
    assistant message that only calls tools). The work fills this process's caches too."""
    content = _plain_content(message)
    if content is None:
        return None
    shrunk = shrink_tool_output(content) if _reduces(message, content) else None
    calls = [[_checksum(c.arguments), _as_lists(extractor.extract(c.arguments))] for c in function_calls(message)]
    return {
        "v": _version(extractor),
        "sum": _checksum(content),
        "shrunk": shrunk,
        "facts": _as_lists(extractor.extract(shrunk if shrunk is not None else content)),
        "calls": calls,
    }


def warm_caches(message: ChatMessage, extractor: FactExtractor) -> None:
    """Do the work of ``index_message`` into this process's caches only, without building the index."""
    content = message.get("content")
    if isinstance(content, str):
        extractor.extract(shrink_tool_output(content) if _reduces(message, content) else content)
    for call in function_calls(message):
        extractor.extract(call.arguments)


def prime_caches(messages: Sequence[Any], extractor: FactExtractor) -> int:
    """Load the index stored with each of ``messages`` into the process caches; returns how many were used."""
    return len(messages) - len(_prime(messages, extractor))


def _prime(messages: Sequence[Any], extractor: FactExtractor) -> list[int]:
    """``prime_caches``, returning the positions of the messages whose stored index was not used."""
    version = _version(extractor)
    unused: list[int] = []
    for position, message in enumerate(messages):  # one pass over a whole history: the checks are inlined
        index = message.get(INDEX_KEY) if isinstance(message, dict) else None
        if isinstance(index, dict) and index.get("v") == version:
            content = message.get("content")
            if content is None:
                content = ""
            if (
                isinstance(content, str)
                and index.get("sum") == (_checksum(content) if content else 0)
                and _prime_one(message, content, index, extractor)
            ):
                continue
        unused.append(position)
    return unused


class IndexPrimer:
    """Loads the stored index of a growing history into the process caches, each message once: an engine's aging,
    preflight estimate and compaction each start with it, on the same history (or on its aged copy, whose stubs
    aging indexes). It keeps where the messages without a usable index are, the only ones left to work through."""

    def __init__(self, extractor: FactExtractor) -> None:
        self.extractor = extractor
        self._primed: tuple[int, tuple[object, ...]] = (0, ())
        self._unindexed: list[int] = []

    def prime(self, messages: Sequence[ChatMessage]) -> None:
        count, mark = self._primed
        start = count if count <= len(messages) and history_mark(messages, count) == mark else 0
        if start == 0:
            self._unindexed = []
        self._unindexed += [start + position for position in _prime(messages[start:], self.extractor)]
        self._primed = (len(messages), history_mark(messages, len(messages)))

    def unindexed(self, start: int) -> list[int]:
        """Positions, from ``start`` on, of the primed messages that had no usable stored index."""
        return [position for position in self._unindexed if position >= start]


def history_mark(messages: Sequence[ChatMessage], count: int) -> tuple[object, ...]:
    """What identifies the first ``count`` messages cheaply: their number and the last one's identity (aging
    leaves the last messages alone, so a history and its aged copy have the same marks)."""
    if count == 0 or count > len(messages):
        return (count,)
    last = messages[count - 1]
    if not isinstance(last, dict):
        return (count, None)
    return (count, last.get("role"), last.get("id"), last.get("tool_call_id"), content_text(last.get("content"))[:64])


def _prime_one(message: ChatMessage, content: str, index: dict[str, Any], extractor: FactExtractor) -> bool:
    facts, shrunk = index.get("facts"), index.get("shrunk")
    if not isinstance(facts, list):
        return False
    if shrunk is not None:
        # A reduction with a lone surrogate was made before pruning replaced them: done again.
        if not (isinstance(shrunk, str) and _reduces(message, content) and encodable(shrunk)):
            return False
        remember_shrunk(content, shrunk)
        extractor.remember(shrunk, facts or ())
    elif content:
        extractor.remember(content, facts or ())
    calls = index.get("calls")
    if calls and isinstance(calls, list):
        _prime_calls(message, calls, extractor)
    return True


def _prime_calls(message: ChatMessage, calls: list[Any], extractor: FactExtractor) -> None:
    # The calls are read as ``function_calls`` reads them (one stored entry per call with a function part), but
    # without building a FunctionCall each: a long history has a call in every other turn. Arguments that are not
    # text are left to be extracted again.
    raw_calls = message.get("tool_calls")
    if not isinstance(raw_calls, list):
        return
    stored_calls = iter(calls)
    for call in raw_calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        stored = next(stored_calls, None)
        arguments = function.get("arguments")
        if not (isinstance(stored, list) and len(stored) == 2 and isinstance(arguments, str)):
            continue
        if isinstance(stored[1], list) and stored[0] == _checksum(arguments):
            extractor.remember(arguments, stored[1] or ())


def _as_lists(found: Found) -> list[str]:
    """Stored flat, kind and value after each other: the cheapest shape to check and read back
    (``compression.facts.found_from_flat``)."""
    return [part for pair in found for part in pair]
