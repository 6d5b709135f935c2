"""Deterministic, download-free token estimates, aware of CJK text.

Real counts come from the API's ``usage``; these estimates drive preflight checks and budgets before a request
is sent. Ratios are deliberately on the generous side so that an estimate under the window means the real prompt
fits: about four ASCII characters per token, one token per CJK character (Han, kana, Hangul, full-width forms)
and two other non-ASCII characters per token.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from compression.messages import ChatMessage, content_text, function_calls

ASCII_CHARS_PER_TOKEN = 4
OTHER_CHARS_PER_TOKEN = 2
MESSAGE_OVERHEAD_TOKENS = 4
TOOL_CALL_OVERHEAD_TOKENS = 8
_TEXT_CACHE_SIZE = 16_384

_CJK = re.compile(
    "[\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"
)


_ASCII_BYTES = bytes(range(128))


def _non_ascii_chars(text: str) -> str:
    """The non-ASCII characters of ``text``, in order.

    Mostly-English text with a few typographic characters is the common case: dropping the ASCII bytes of its UTF-8
    form is several times faster than scanning every character for CJK ranges (lone surrogates pass through).
    """
    encoded = text.encode("utf-8", "surrogatepass")
    return encoded.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")


def char_class_counts(text: str) -> tuple[int, int, int]:
    """ASCII, CJK and other characters of ``text``; the counts of a concatenation are the sums of its parts'."""
    if text.isascii():
        return len(text), 0, 0
    non_ascii = _non_ascii_chars(text)
    cjk_chars = len(_CJK.findall(non_ascii))
    return len(text) - len(non_ascii), cjk_chars, len(non_ascii) - cjk_chars


def count_text_tokens(text: str) -> int:
    """Estimated tokens for one string, not cached: for text built once (a rendered turn, a request)."""
    if text.isascii():
        return -(-len(text) // ASCII_CHARS_PER_TOKEN)
    ascii_chars, cjk_chars, other_chars = char_class_counts(text)
    return -(-ascii_chars // ASCII_CHARS_PER_TOKEN) + cjk_chars + -(-other_chars // OTHER_CHARS_PER_TOKEN)


def texts_fit(texts: Sequence[str], budget_tokens: int, *, per_text_tokens: int = 0) -> bool:
    """Whether ``count_text_tokens`` of every text plus ``per_text_tokens`` each surely sums to at most
    ``budget_tokens``, from one pass over the concatenation instead of one estimate per text.

    Each estimate rounds its ASCII share up by under one token and its other share by under half a token, so four
    times the sum is at most 4 * counts-based tokens + 3 + 2 per text; False only means "count them one by one".
    """
    ascii_chars, cjk_chars, other_chars = char_class_counts("".join(texts))
    quarter_tokens = ascii_chars + 4 * cjk_chars + 2 * other_chars + (5 + 4 * per_text_tokens) * len(texts)
    return quarter_tokens <= 4 * budget_tokens


def estimate_text_tokens(text: str) -> int:
    """Estimated tokens for one string. ASCII text is counted at once (``str.isascii`` and ``len`` cost less than a
    cache lookup); other text is cached, since message texts are estimated again at every turn."""
    return count_text_tokens(text) if text.isascii() else _estimate_other_text_tokens(text)


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def _estimate_other_text_tokens(text: str) -> int:
    return count_text_tokens(text)


def clear_estimate_cache() -> None:
    _estimate_other_text_tokens.cache_clear()


def estimate_message_tokens(message: ChatMessage) -> int:
    """Estimated tokens of one chat message, tool calls included."""
    content = message.get("content")
    # Plain text is the common case: read it without a call (every trigger check estimates a whole context).
    text = content if isinstance(content, str) else content_text(content)
    tokens = MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(text)
    tool_calls = message.get("tool_calls")
    if tool_calls and isinstance(tool_calls, list):
        tokens += TOOL_CALL_OVERHEAD_TOKENS * len(tool_calls)
        for call in function_calls(message):
            tokens += estimate_text_tokens(call.name) + estimate_text_tokens(call.arguments)
    return tokens


def estimate_messages_tokens(messages: list[ChatMessage]) -> int:
    """Estimated tokens of a whole chat sequence (items that are not messages count nothing)."""
    total = 0
    for message in messages:  # every trigger check runs this over the whole context: text turns are read inline
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str) and not message.get("tool_calls"):
            total += MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(content)
        else:
            total += estimate_message_tokens(message)
    return total
