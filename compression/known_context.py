"""The context an engine last read, so that the next step of the same turn does not read it again.

A host runs several steps of an engine on one context before an LLM call: aging, the preflight estimate, and when
it triggers, a compaction of a copy of the aged list. Each would estimate the whole context, and the compaction
would sanitize it again, though aging already did. ``KnownContext`` keeps the messages of the last context an
engine estimated or sanitized (the objects themselves, so that they are recognised by identity, and none is
freed and its address reused), their estimated tokens and whether they are sanitized. A later context that starts
with the same objects in the same order reuses that and only reads what follows.

A message is recognised by being the same object; a host that changed a message in place after handing it to the
engine would have it counted as it was. Hosts build a new message for every change (the app does).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from compression.messages import ChatMessage
from compression.tokens import estimate_messages_tokens


class KnownContext:
    """The last context read, its estimated tokens (None when not estimated) and whether it is sanitized."""

    def __init__(self) -> None:
        self._messages: tuple[ChatMessage, ...] = ()
        self._tokens: int | None = None
        self._clean = False

    def _known_length(self, messages: Sequence[ChatMessage]) -> int:
        """How many of the known messages ``messages`` starts with: all of them or none."""
        known = self._messages
        if not known or len(messages) < len(known) or not all(map(operator.is_, known, messages)):
            return 0
        return len(known)

    def remember(self, messages: Sequence[ChatMessage], *, tokens: int | None = None, clean: bool) -> None:
        self._messages, self._tokens, self._clean = tuple(messages), tokens, clean

    def clean_prefix(self, messages: Sequence[ChatMessage]) -> int:
        """How many leading messages of ``messages`` are known to be sanitized."""
        return self._known_length(messages) if self._clean else 0

    def estimate(self, messages: list[ChatMessage], *, clean: bool = False) -> int:
        """``estimate_messages_tokens(messages)``, reading only what follows the known messages; ``messages`` become
        the known context (sanitized when ``clean``, or when they are exactly the known sanitized ones)."""
        known = self._known_length(messages)
        if known and self._tokens is not None:
            tokens = self._tokens + estimate_messages_tokens(messages[known:])
        else:
            tokens = estimate_messages_tokens(messages)
        self.remember(messages, tokens=tokens, clean=clean or (self._clean and known == len(messages)))
        return tokens
