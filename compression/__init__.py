"""memdesk's context compression library: context engines that keep a conversation inside the model's window.

It never imports ``app``, ``memory`` or ``openai``; the host passes a ``SummaryLLM`` callable.
"""

from compression.aging import AgingResult
from compression.compressor import ContextCompressor
from compression.engine import ContextEngine, create_engine, register_engine, registered_engines
from compression.facts import DEFAULT_FACT_PATTERNS, FactExtractor, FactPattern
from compression.messages import ChatMessage
from compression.tokens import estimate_message_tokens, estimate_messages_tokens, estimate_text_tokens
from compression.truncation import TruncationEngine
from compression.types import (
    Completion,
    CompressionError,
    CompressionResult,
    ContextOverflowError,
    KeyDecision,
    SummaryLLM,
    Usage,
)


def clear_caches() -> None:
    """Forget every text the process-wide caches hold (identifiers, shrunk tool output, token counts, timestamps).

    They hold customer text, so a host erasing a customer's data calls this too.
    """
    from compression import dates, facts, pruning, summarizer, tokens

    facts.clear_extraction_cache()
    pruning.clear_shrink_cache()
    tokens.clear_estimate_cache()
    dates._parse_iso.cache_clear()
    summarizer._stamp_text.cache_clear()


__all__ = [
    "DEFAULT_FACT_PATTERNS",
    "AgingResult",
    "ChatMessage",
    "Completion",
    "CompressionError",
    "CompressionResult",
    "ContextCompressor",
    "ContextEngine",
    "ContextOverflowError",
    "FactExtractor",
    "FactPattern",
    "KeyDecision",
    "SummaryLLM",
    "TruncationEngine",
    "Usage",
    "clear_caches",
    "create_engine",
    "estimate_message_tokens",
    "estimate_messages_tokens",
    "estimate_text_tokens",
    "register_engine",
    "registered_engines",
]
