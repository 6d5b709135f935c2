"""``TruncationEngine``: the simplest context engine, kept to prove the engine seam and as a baseline.

It drops the oldest turns after the system prompt until the estimate is back under the trigger threshold, never
separating a tool call from its results, and writes no summary: whatever it drops is gone from the context.
"""

from __future__ import annotations

import time

from compression.assembly import repair_tool_sequence
from compression.boundaries import leading_system_count, must_keep_start
from compression.engine import ContextEngine, register_engine, trace_event
from compression.messages import ChatMessage
from compression.tokens import estimate_message_tokens, estimate_messages_tokens
from compression.types import CompressionResult, ContextOverflowError, Usage

DEFAULT_THRESHOLD_PERCENT = 0.50
TARGET_SHARE_OF_THRESHOLD = 0.60


@register_engine
class TruncationEngine(ContextEngine):
    name = "truncation"

    def __init__(
        self,
        *,
        model: str,
        context_length: int,
        threshold_percent: float = DEFAULT_THRESHOLD_PERCENT,
        **_ignored: object,
    ) -> None:
        self.threshold_percent = threshold_percent
        self.update_model(model, context_length)

    def update_model(self, model: str, context_length: int) -> None:
        self.model = model
        self.context_length = context_length
        self.threshold_tokens = int(context_length * self.threshold_percent)

    def update_from_response(self, usage: Usage) -> None:
        self.last_prompt_tokens = usage.prompt_tokens

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return tokens >= self.threshold_tokens

    def should_compress_preflight(self, messages: list[ChatMessage]) -> bool:
        return self.should_compress(estimate_messages_tokens(messages))

    def compress(
        self, messages: list[ChatMessage], *, current_tokens: int | None = None, focus_topic: str | None = None
    ) -> CompressionResult:
        started = time.perf_counter()
        before = estimate_messages_tokens(messages)
        head = leading_system_count(messages)
        keep_from = max(must_keep_start(messages), head)
        protected = sum(estimate_message_tokens(m) for m in messages[:head] + messages[keep_from:])
        if protected > self.context_length:
            raise ContextOverflowError(protected_tokens=protected, context_length=self.context_length)
        target = int(self.threshold_tokens * TARGET_SHARE_OF_THRESHOLD)
        cut = head
        remaining = before
        while cut < keep_from and remaining > target:
            remaining -= estimate_message_tokens(messages[cut])
            cut += 1
        while cut < keep_from and messages[cut].get("role") == "tool":
            remaining -= estimate_message_tokens(messages[cut])
            cut += 1
        result, orphans, stubs = repair_tool_sequence(messages[:head] + messages[cut:])
        after = estimate_messages_tokens(result)
        self.compression_count += 1
        self.last_prompt_tokens = after
        dropped = (head, cut) if cut > head else None
        event = trace_event(
            strategy="truncation",
            engine=self.name,
            messages_before=len(messages),
            messages_after=len(result),
            tokens_before=current_tokens if current_tokens is not None else before,
            tokens_after=after,
            compacted_range=dropped,
            started=started,
            orphans_removed=orphans,
            stubs_added=stubs,
        )
        return CompressionResult(
            messages=result,
            summary=None,
            key_decisions=[],
            compacted_range=dropped,
            tokens_before=current_tokens if current_tokens is not None else before,
            tokens_after=after,
            events=[event],
        )
