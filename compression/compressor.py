"""``ContextCompressor``: the default context engine, a five-step lossy compaction for support conversations.

1. Prune old tool output without an LLM (``pruning``).
2-3. Keep the head and a token-budget tail verbatim (``boundaries``).
4. Summarize the middle into structured customer-service notes with the summary model (``summarizer``), appending
   every pinned identifier the summary left out (``facts``).
5. On the next compaction, update those notes instead of summarizing them again.

Budgets derive from the model's context length: compaction triggers at ``threshold_percent`` of the window (never
below ``threshold_floor_tokens``), the tail keeps ``threshold x summary_target_ratio`` tokens and the summary may
use min(5 % of the window, 12,000 tokens). Two breakers stop thrashing: after ``max_ineffective_compactions``
compactions in a row that saved less than ``min_savings_ratio``, and when more than ``max_compactions_per_window``
happened within the last ``frequency_window`` API responses; neither holds once the prompt nears the hard limit.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from compression.assembly import find_previous_summary, insert_summary, repair_tool_sequence
from compression.boundaries import head_end, must_keep_start, tail_start
from compression.dates import absolutize_dates, parse_timestamp
from compression.decisions import decision_key, parse_key_decisions
from compression.engine import ContextEngine, register_engine, trace_event
from compression.facts import DEFAULT_FACT_PATTERNS, FactExtractor, FactPattern, PinnedFacts
from compression.pruning import PRUNE_MIN_CHARS, is_pruned, prune_tool_outputs, shrink_tool_output
from compression.sanitize import sanitize_messages
from compression.sections import CRITICAL_CONTEXT, append_to_section
from compression.summarizer import (
    COOLDOWN_STEPS_S,
    PROMPTS_DIR,
    SummaryWriter,
    build_summary_request,
    fallback_summary,
    latest_customer_message,
    load_prompt_templates,
)
from compression.tokens import content_text, estimate_message_tokens, estimate_messages_tokens
from compression.types import CompressionResult, ContextOverflowError, Message, SummaryLLM, Usage

DEFAULT_THRESHOLD_PERCENT = 0.50
DEFAULT_THRESHOLD_FLOOR_TOKENS = 4_000
DEFAULT_PROTECT_FIRST_N = 3
DEFAULT_SUMMARY_TARGET_RATIO = 0.20
SUMMARY_TARGET_RATIO_MIN = 0.10
SUMMARY_TARGET_RATIO_MAX = 0.80
SUMMARY_BUDGET_SHARE = 0.05
SUMMARY_BUDGET_MAX_TOKENS = 12_000
SUMMARY_BUDGET_MIN_TOKENS = 256
MIN_SAVINGS_RATIO = 0.10
MAX_INEFFECTIVE_COMPACTIONS = 2
MAX_COMPACTIONS_PER_WINDOW = 3
FREQUENCY_WINDOW_RESPONSES = 6
HARD_LIMIT_RATIO = 0.95
MAX_THRESHOLD_SHARE = 0.85  # a floor larger than a small window must still leave room to compact before it is full
PINNED_HEADING_LINE = "- Pinned identifiers from earlier turns (verbatim):"


@register_engine
class ContextCompressor(ContextEngine):
    """Summarizing context engine; see the module docstring for the algorithm and budgets."""

    name = "compressor"

    def __init__(
        self,
        *,
        model: str,
        context_length: int,
        summary_llm: SummaryLLM | None = None,
        summary_model_override: str | None = None,
        threshold_percent: float = DEFAULT_THRESHOLD_PERCENT,
        threshold_floor_tokens: int = DEFAULT_THRESHOLD_FLOOR_TOKENS,
        protect_first_n: int = DEFAULT_PROTECT_FIRST_N,
        summary_target_ratio: float = DEFAULT_SUMMARY_TARGET_RATIO,
        fact_patterns: Sequence[FactPattern] = DEFAULT_FACT_PATTERNS,
        cooldown_steps_s: Sequence[float] = COOLDOWN_STEPS_S,
        min_savings_ratio: float = MIN_SAVINGS_RATIO,
        max_ineffective_compactions: int = MAX_INEFFECTIVE_COMPACTIONS,
        max_compactions_per_window: int = MAX_COMPACTIONS_PER_WINDOW,
        frequency_window: int = FREQUENCY_WINDOW_RESPONSES,
        prompts_dir: Path = PROMPTS_DIR,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if context_length <= 0:
            raise ValueError(f"context_length must be positive, got {context_length}.")
        if not 0 < threshold_percent <= 1:
            raise ValueError(f"threshold_percent must be in (0, 1], got {threshold_percent}.")
        self.threshold_percent = threshold_percent
        self.threshold_floor_tokens = threshold_floor_tokens
        self.protect_first_n = max(0, protect_first_n)
        self.summary_target_ratio = min(max(summary_target_ratio, SUMMARY_TARGET_RATIO_MIN), SUMMARY_TARGET_RATIO_MAX)
        self.extractor = FactExtractor(fact_patterns)
        self.writer = SummaryWriter(
            summary_llm,
            main_model=model,
            override_model=summary_model_override,
            cooldown_steps_s=cooldown_steps_s,
            clock=clock,
        )
        self.min_savings_ratio = min_savings_ratio
        self.max_ineffective_compactions = max_ineffective_compactions
        self.max_compactions_per_window = max_compactions_per_window
        self.frequency_window = frequency_window
        self.prompts_dir = prompts_dir
        load_prompt_templates(prompts_dir)
        self.clock = clock
        self.model = model
        self.last_prompt_tokens = 0
        self.compression_count = 0
        self.ineffective_streak = 0
        self._responses = 0
        self._recent_compactions: deque[int] = deque()
        self._known_decisions: dict[str, tuple[int, int] | None] = {}
        self.update_model(model, context_length)

    # -- budgets ---------------------------------------------------------------------------------------------
    def update_model(self, model: str, context_length: int) -> None:
        self.model = model
        self.writer.main_model = model
        self.context_length = context_length
        threshold = max(int(context_length * self.threshold_percent), self.threshold_floor_tokens)
        self.threshold_tokens = min(threshold, int(context_length * max(self.threshold_percent, MAX_THRESHOLD_SHARE)))
        self.tail_budget_tokens = int(self.threshold_tokens * self.summary_target_ratio)
        budget = min(int(context_length * SUMMARY_BUDGET_SHARE), SUMMARY_BUDGET_MAX_TOKENS)
        self.summary_budget_tokens = max(budget, min(SUMMARY_BUDGET_MIN_TOKENS, context_length // 4))

    # -- triggers --------------------------------------------------------------------------------------------
    def update_from_response(self, usage: Usage) -> None:
        self.last_prompt_tokens = usage.prompt_tokens
        self._responses += 1

    def _breakers_allow(self, tokens: int) -> bool:
        if tokens >= self.context_length * HARD_LIMIT_RATIO:
            return True
        if self.ineffective_streak >= self.max_ineffective_compactions:
            return False
        while self._recent_compactions and self._recent_compactions[0] <= self._responses - self.frequency_window:
            self._recent_compactions.popleft()
        return len(self._recent_compactions) < self.max_compactions_per_window

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return tokens >= self.threshold_tokens and self._breakers_allow(tokens)

    def should_compress_preflight(self, messages: list[Message]) -> bool:
        """Estimate-based trigger; also indexes new messages so a later compaction finds its work cached."""
        self._index(messages)
        return self.should_compress(estimate_messages_tokens(messages))

    def _index(self, messages: list[Message]) -> None:
        """Shrink tool output and extract identifiers per message ahead of time (both are cached by content).

        Called every turn, this costs only the turn's new messages and keeps ``compress`` itself fast.
        """
        for message in messages:
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            if message.get("role") == "tool" and isinstance(content, str):
                if len(content) >= PRUNE_MIN_CHARS and not is_pruned(content):
                    content = shrink_tool_output(content)
                self.extractor.extract(content)
            elif isinstance(content, str):
                self.extractor.extract(content)

    def on_session_start(self, session_id: str) -> None:
        self.ineffective_streak = 0
        self._recent_compactions.clear()

    # -- compaction ------------------------------------------------------------------------------------------
    def compress(
        self,
        messages: list[Message],
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
    ) -> CompressionResult:
        clean = sanitize_messages(messages)
        result = self._compress(clean.messages, current_tokens=current_tokens, focus_topic=focus_topic)
        if clean.dropped or clean.repaired:
            result.events[0]["input_repairs"] = clean.trace()
            if result.compacted_range is not None:
                start, end = result.compacted_range
                result.compacted_range = (clean.origins[start], clean.origins[end - 1] + 1)
                result.events[0]["compacted_range"] = list(result.compacted_range)
        return result

    def _compress(
        self, messages: list[Message], *, current_tokens: int | None, focus_topic: str | None
    ) -> CompressionResult:
        started = time.perf_counter()
        estimated_before = estimate_messages_tokens(messages)
        tokens_before = current_tokens if current_tokens is not None else estimated_before
        previous = find_previous_summary(messages)
        head = head_end(messages, protect_first_n=self.protect_first_n, recompaction=previous is not None)
        tail = tail_start(messages, head=head, budget_tokens=self.tail_budget_tokens)
        working = self._fit_protected(messages, head, tail)

        if tail <= head:
            return self._finish_unchanged(messages, working, tokens_before, estimated_before, started)

        middle = working[head:tail]
        previous_summary = previous[1] if previous is not None and head <= previous[0] < tail else None
        turns = self._turns_to_summarize(middle, previous, head)
        pruned, pruned_indexes = prune_tool_outputs(turns, range(len(turns)))
        pinned = self._pinned_facts(pruned, previous_summary)
        as_of = self._latest_time(middle)

        outcome = self.writer.write(
            lambda: build_summary_request(
                turns=pruned,
                first_index=head,
                previous_summary=previous_summary,
                pinned=pinned,
                latest_ask=latest_customer_message(messages),
                focus_topic=focus_topic,
                as_of=as_of,
                max_tokens=self.summary_budget_tokens,
                prompts_dir=self.prompts_dir,
            ),
            max_tokens=self.summary_budget_tokens,
        )
        fallback_used = outcome.text is None
        summary = outcome.text or fallback_summary(pruned, first_index=head, previous_summary=previous_summary)
        if as_of is not None:
            summary = absolutize_dates(summary, as_of.date())
        summary = self._pin_missing(summary, pinned)

        created_at = middle[-1].get("created_at")
        assembled = insert_summary(working[:head], summary, working[tail:], created_at)
        result_messages, orphans, stubs = repair_tool_sequence(assembled)
        tokens_after = estimate_messages_tokens(result_messages)
        compacted_range = (head, tail)
        decisions = parse_key_decisions(
            summary, self.extractor, source_range=compacted_range, known=self._known_decisions
        )
        for decision in decisions:
            self._known_decisions.setdefault(decision_key(decision.kind, decision.text), decision.source_range)
        self._record_compaction(estimated_before, tokens_after)
        event = trace_event(
            strategy="summary" if not fallback_used else "fallback_summary",
            engine=self.name,
            messages_before=len(messages),
            messages_after=len(result_messages),
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            compacted_range=compacted_range,
            started=started,
            model=outcome.model,
            fallback_used=fallback_used,
            pruned_indexes=[head + index for index in pruned_indexes],
            attempts=[{"model": a.model, "error": a.error} for a in outcome.attempts],
            cooldown=outcome.skipped_for_cooldown,
            pinned_facts=len(pinned),
            orphans_removed=orphans,
            stubs_added=stubs,
            focus_topic=focus_topic,
        )
        return CompressionResult(
            messages=result_messages,
            summary=summary,
            key_decisions=decisions,
            compacted_range=compacted_range,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            summary_model=outcome.model,
            summary_usage=outcome.usage,
            fallback_used=fallback_used,
            events=[event],
        )

    # -- helpers ---------------------------------------------------------------------------------------------
    def _fit_protected(self, messages: list[Message], head: int, tail: int) -> list[Message]:
        """The messages, with tool output inside the protected tail pruned if that is what it takes to fit.

        Raises ``ContextOverflowError`` when the head, the must-keep tail and the summary cannot fit the window.
        """
        keep_from = max(min(tail, must_keep_start(messages)), head)

        def protected_tokens(candidate: list[Message]) -> int:
            head_tokens = sum(estimate_message_tokens(m) for m in candidate[:head])
            return head_tokens + sum(estimate_message_tokens(m) for m in candidate[keep_from:])

        limit = self.context_length - self.summary_budget_tokens
        needed = protected_tokens(messages)
        if needed <= limit:
            return messages
        pruned, _ = prune_tool_outputs(messages, range(keep_from, len(messages)))
        needed = protected_tokens(pruned)
        if needed <= limit:
            return pruned
        raise ContextOverflowError(protected_tokens=needed, context_length=self.context_length)

    def _turns_to_summarize(
        self, middle: list[Message], previous: tuple[int, str, str] | None, offset: int
    ) -> list[Message]:
        """The middle without the previous summary (it goes to the prompt as notes to update)."""
        if previous is None or not offset <= previous[0] < offset + len(middle):
            return middle
        index = previous[0] - offset
        rest = previous[2]
        replacement = [{**middle[index], "content": rest}] if rest else []
        return [*middle[:index], *replacement, *middle[index + 1 :]]

    def _pinned_facts(self, turns: list[Message], previous_summary: str | None) -> PinnedFacts:
        """Identifiers of the turns being compacted (tool output as pruning kept it) and of the previous notes."""
        texts: list[str] = [previous_summary or ""]
        for message in turns:
            texts.append(content_text(message.get("content")))
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                    texts.append(function["arguments"])
        return self.extractor.collect(texts)

    @staticmethod
    def _latest_time(messages: list[Message]) -> datetime | None:
        for message in reversed(messages):
            moment = parse_timestamp(message.get("created_at"))
            if moment is not None:
                return moment
        return None

    @staticmethod
    def _pin_missing(summary: str, pinned: PinnedFacts) -> str:
        missing = pinned.missing_from(summary)
        if not len(missing):
            return summary
        return append_to_section(summary, CRITICAL_CONTEXT, f"{PINNED_HEADING_LINE}\n{missing.render()}")

    def _record_compaction(self, before: int, after: int) -> None:
        self.compression_count += 1
        self._recent_compactions.append(self._responses)
        saved = (before - after) / before if before else 0.0
        self.ineffective_streak = self.ineffective_streak + 1 if saved < self.min_savings_ratio else 0
        self.last_prompt_tokens = after

    def _finish_unchanged(
        self, messages: list[Message], working: list[Message], tokens_before: int, estimated: int, started: float
    ) -> CompressionResult:
        result_messages, orphans, stubs = repair_tool_sequence(working)
        tokens_after = estimate_messages_tokens(result_messages)
        self._record_compaction(estimated, tokens_after)
        event = trace_event(
            strategy="none",
            engine=self.name,
            messages_before=len(messages),
            messages_after=len(result_messages),
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            compacted_range=None,
            started=started,
            orphans_removed=orphans,
            stubs_added=stubs,
        )
        return CompressionResult(
            messages=result_messages,
            summary=None,
            key_decisions=[],
            compacted_range=None,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            events=[event],
        )
