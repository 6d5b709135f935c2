"""What a host stores with each message, so that a compressor in another process starts warm.

A compaction reads every message it summarizes: large tool output is reduced (``compression.pruning``) and the
identifiers are extracted from what is left (``compression.facts``). Both are cached per process, so a process that
lives as long as the conversation pays for each message once. A new process (after a restart, or another worker of
a deployment with several) would pay for the whole history at its first compaction. ``index_message`` does that
work for one message when the host stores it; the host keeps the result beside the message and passes it back under
``INDEX_KEY``, and the compressor loads it into the process caches (``prime_caches``) instead of doing it again.

An index is only believed for the exact text it was made from (a checksum) and by an extractor with the same
fingerprint and this version of pruning; anything else, a malformed index included, is ignored and the work is done
as if there were none.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from compression.facts import FactExtractor, Found
from compression.messages import ChatMessage, function_calls
from compression.pruning import PRUNE_MIN_CHARS, is_pruned, remember_shrunk, shrink_tool_output

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


def prime_caches(messages: Iterable[Any], extractor: FactExtractor) -> int:
    """Load the index stored with each of ``messages`` into the process caches; returns how many were used."""
    version = _version(extractor)
    used = 0
    for message in messages:  # one pass over a whole history: the checks are inlined
        index = message.get(INDEX_KEY) if isinstance(message, dict) else None
        if not isinstance(index, dict) or index.get("v") != version:
            continue
        content = message.get("content")
        if content is None:
            content = ""
        elif not isinstance(content, str):
            continue
        if index.get("sum") == (_checksum(content) if content else 0) and _prime_one(
            message, content, index, extractor
        ):
            used += 1
    return used


def _prime_one(message: ChatMessage, content: str, index: dict[str, Any], extractor: FactExtractor) -> bool:
    facts, shrunk = index.get("facts"), index.get("shrunk")
    if not isinstance(facts, list):
        return False
    if shrunk is not None:
        if not (isinstance(shrunk, str) and _reduces(message, content)):
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
