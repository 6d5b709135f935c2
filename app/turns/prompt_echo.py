"""A reply that repeats the prompt's own text is not sent: the customer gets what the desk can help with instead.

Small models echo their instructions or the memory block's framing ("Open promises to this customer (keep
them…"), and a prompt injection may ask any model to. ``PromptEcho`` holds every run of ``SPAN_WORDS`` words of the
turn's system prompt (the instructions and the turn context), except the runs inside what the customer may be told:
the recalled memories' own text. A reply that contains one of them repeats the prompt.

Seven words: shorter runs of the instructions are everyday support phrases ("transfer the conversation to a
human"), longer ones let a partial echo through.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SPAN_WORDS = 7
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MEMORY_LINE = re.compile(r"^- \[[^\]]*\] (.*)$", re.MULTILINE)


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def _spans(text: str) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i : i + SPAN_WORDS]) for i in range(len(words) - SPAN_WORDS + 1)}


class PromptEcho:
    def __init__(self, prompt_texts: Iterable[str], *, allowed: Iterable[str] = ()) -> None:
        """``allowed``: prompt text a reply may repeat (the sign-off the guidelines ask for)."""
        texts = list(prompt_texts)
        allowed_spans: set[tuple[str, ...]] = set().union(*(_spans(text) for text in allowed))
        for text in texts:
            for memory in _MEMORY_LINE.findall(text):
                allowed_spans |= _spans(memory)
        self.spans = set().union(*(_spans(text) for text in texts)) - allowed_spans if texts else set()

    def repeats_prompt(self, reply: str) -> bool:
        return not self.spans.isdisjoint(_spans(reply))
