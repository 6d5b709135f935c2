"""memdesk's context compression library: context engines that keep a conversation inside the model's window.

It never imports ``app``, ``memory`` or ``openai``; the host passes a ``SummaryLLM`` callable.
"""

from compression.compressor import ContextCompressor
from compression.engine import ContextEngine, create_engine, register_engine, registered_engines
from compression.facts import DEFAULT_FACT_PATTERNS, FactExtractor, FactPattern
from compression.tokens import estimate_message_tokens, estimate_messages_tokens, estimate_text_tokens
from compression.truncation import TruncationEngine
from compression.types import (
    Completion,
    CompressionError,
    CompressionResult,
    ContextOverflowError,
    KeyDecision,
    Message,
    SummaryLLM,
    Usage,
)

__all__ = [
    "DEFAULT_FACT_PATTERNS",
    "Completion",
    "CompressionError",
    "CompressionResult",
    "ContextCompressor",
    "ContextEngine",
    "ContextOverflowError",
    "FactExtractor",
    "FactPattern",
    "KeyDecision",
    "Message",
    "SummaryLLM",
    "TruncationEngine",
    "Usage",
    "create_engine",
    "estimate_message_tokens",
    "estimate_messages_tokens",
    "estimate_text_tokens",
    "register_engine",
    "registered_engines",
]
