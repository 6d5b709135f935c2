"""Containing degenerate replies: a reply that loops is stopped, and a reply that was cut ends visibly.

Small models fall into loops ("I love you. I love you. …") until the reply cap. ``RepetitionGuard`` watches the
streamed text: once any run of ``REPEAT_NGRAM_TOKENS`` tokens (with at least two words in it) has appeared
``REPEAT_LIMIT`` times, the reply is over, and what is kept is the text before the run's second appearance.
Tokens are words, single CJK characters, and single punctuation marks, compared in lower case.

``ended_cleanly`` applies the outcome to a ``ChatResponse``: a text reply stopped by the guard (``cut="repetition"``)
or by the token cap (``cut="length"``) ends with ``ELLIPSIS`` so the customer sees it was cut, and carries ``cut`` so
the turn can mark and count it. Replies with tool calls are never cut: their text is not what the customer reads.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict

from app.llm.responses import ChatResponse

# Long enough that a list repeating a phrase ("will arrive on 2026-12-02") for a few orders is not a loop.
REPEAT_NGRAM_TOKENS = 8
REPEAT_LIMIT = 4
MIN_WORDS_IN_NGRAM = 2
ELLIPSIS = "…"
# Trailing separators dropped before the ellipsis, so a cut reads "… and then…" rather than "… and then, …".
TRAILING_SEPARATORS = " \t\n,;:-–—"
CUT_REPETITION = "repetition"
CUT_LENGTH = "length"

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")
_WORDLIKE = re.compile(r"\w")


class RepetitionGuard:
    """Feed it the reply's text as it streams; ``feed`` answers True once the reply repeats itself."""

    def __init__(self, *, ngram_tokens: int = REPEAT_NGRAM_TOKENS, limit: int = REPEAT_LIMIT) -> None:
        if ngram_tokens < 2 or limit < 2:
            raise ValueError("ngram_tokens and limit must be at least 2")
        self.ngram_tokens = ngram_tokens
        self.limit = limit
        self._text: list[str] = []
        self.cut_at: int | None = None

    @property
    def tripped(self) -> bool:
        return self.cut_at is not None

    @property
    def text(self) -> str:
        return "".join(self._text)

    def kept_text(self) -> str:
        """The reply up to where it started repeating (all of it when it did not)."""
        text = self.text
        return text if self.cut_at is None else text[: self.cut_at]

    def feed(self, fragment: str) -> bool:
        if self.tripped:
            return True
        self._text.append(fragment)
        # A repeat completes only when a token does; a fragment inside a word cannot finish one.
        if fragment and not re.search(r"\W", fragment):
            return False
        self.cut_at = self._first_repeat(self.text)
        return self.tripped

    def _first_repeat(self, text: str) -> int | None:
        tokens = [(match.group().lower(), match.start()) for match in _TOKEN.finditer(text)]
        seen: dict[tuple[str, ...], list[int]] = defaultdict(list)
        size = self.ngram_tokens
        for index in range(len(tokens) - size + 1):
            window = tuple(token for token, _ in tokens[index : index + size])
            if sum(1 for token in window if _WORDLIKE.match(token)) < MIN_WORDS_IN_NGRAM:
                continue
            starts = seen[window]
            starts.append(index)
            if len(starts) >= self.limit:
                return tokens[starts[1]][1]
        return None


def ended_cleanly(response: ChatResponse, guard: RepetitionGuard | None = None) -> ChatResponse:
    """``response`` with a cut text reply shortened and ending in ``ELLIPSIS``, and ``cut`` set (see above)."""
    if response.tool_calls or not response.content:
        return response
    if guard is not None and guard.tripped:
        kept = guard.kept_text().rstrip(TRAILING_SEPARATORS)
        return dataclasses.replace(response, content=f"{kept}{ELLIPSIS}", cut=CUT_REPETITION)
    if response.truncated:
        kept = response.content.rstrip(TRAILING_SEPARATORS)
        return dataclasses.replace(response, content=f"{kept}{ELLIPSIS}", cut=CUT_LENGTH)
    return response
