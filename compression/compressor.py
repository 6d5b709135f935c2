"""``ContextCompressor``: the default context engine, a five-step lossy compaction for support conversations.

0. Before every LLM call, age old tool results into stubs in batches, without an LLM (``aging``), so most turns
   never need a summarizing compaction.
1. Prune old tool output without an LLM (``pruning``).
2-3. Keep the head and a token-budget tail verbatim (``boundaries``).
4. Summarize the middle into structured customer-service notes with the summary model (``summarizer``), in chunks
   when it does not fit the summary model's window; key decisions get stable keys (``decisions``) and the
   identifiers the notes left out are pinned within a budget (``pinning``).
5. On the next compaction, update those notes instead of summarizing them again: the new compaction covers the
   previous notes plus every turn since, so no turn is ever summarized from its raw text twice.

The previous notes are found by ``NOTES_KEY`` on the message (set by this engine or by the host from its compaction
record), never by their wording, so text that imitates the notes frame stays ordinary content. ``recall_hint`` is a
sentence the notes frame adds (``compression.assembly``), for a host that lets the model search the earlier turns.

Budgets derive from the model's context length: compaction triggers at ``threshold_percent`` of the window (never
below ``threshold_floor_tokens``) or at ``max_working_tokens``, whichever is lower; the tail keeps
``threshold x summary_target_ratio`` tokens; the notes may use min(5 % of the window, 25 % of the threshold,
12,000 tokens), of which ``pinned_budget_share`` holds pinned identifiers. Two breakers stop thrashing: after
``max_ineffective_compactions`` compactions in a row that saved less than ``min_savings_ratio``, and when more than
``max_compactions_per_window`` happened within the last ``frequency_window`` trigger checks (calls to
``should_compress`` and ``should_compress_preflight``, so the breaker works without ``update_from_response``);
neither holds once the prompt nears the hard limit.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

from compression.aging import (
    DEFAULT_AGING_BATCH_TOKENS,
    DEFAULT_KEEP_RECENT_TOOL_TURNS,
    AgingResult,
    age_tool_results,
    aging_event,
    remember_stub_identifiers,
)
from compression.assembly import NOTES_KEY, find_notes, insert_notes, notes_of, notes_role, repair_tool_sequence
from compression.boundaries import group_start, head_end, must_keep_start, tail_start
from compression.dates import canonical_zone, parse_timestamp
from compression.decisions import DecisionLedger, ReconcileContext
from compression.engine import ContextEngine, register_engine, trace_event
from compression.facts import DEFAULT_FACT_PATTERNS, FactExtractor, FactPattern
from compression.fallback import fallback_summary
from compression.known_context import KnownContext
from compression.message_index import IndexPrimer, history_mark, warm_caches
from compression.messages import ChatMessage
from compression.pinning import PinnedIdentifiers, PinSelection, strip_pinned_block
from compression.pruning import prune_tool_outputs
from compression.sanitize import sanitize_messages
from compression.sections import trim_to_budget
from compression.summarizer import (
    COOLDOWN_STEPS_S,
    NotesDraft,
    SummaryRequest,
    SummaryWriter,
    default_prompts_dir,
    latest_customer_message,
    load_prompt_templates,
    summarize_in_chunks,
)
from compression.tokens import estimate_message_tokens, estimate_messages_tokens, estimate_text_tokens
from compression.types import CompressionResult, ContextOverflowError, KeyDecision, SummaryLLM, Usage

DEFAULT_THRESHOLD_PERCENT = 0.50
DEFAULT_THRESHOLD_FLOOR_TOKENS = 4_000
# A support conversation needs far less working context than a large window offers, and every turn bills what it
# sends; benchmarks/compression.py chose this from its 128k-window run (ratio and cost against retention).
DEFAULT_MAX_WORKING_TOKENS = 12_000
DEFAULT_PROTECT_FIRST_N = 3
DEFAULT_SUMMARY_TARGET_RATIO = 0.20
SUMMARY_TARGET_RATIO_MIN = 0.10
SUMMARY_TARGET_RATIO_MAX = 0.80
SUMMARY_BUDGET_SHARE = 0.05
SUMMARY_BUDGET_MAX_TOKENS = 12_000
SUMMARY_BUDGET_MIN_TOKENS = 256
# Notes larger than this share of the compaction threshold would leave too little room for the turns they serve.
SUMMARY_BUDGET_THRESHOLD_SHARE = 0.25
# The summary model may write this share of the notes budget; the rest holds pins and the decision fields.
SUMMARY_OUTPUT_SHARE = 0.75
DEFAULT_PINNED_BUDGET_SHARE = 0.20
MIN_SAVINGS_RATIO = 0.10
MAX_INEFFECTIVE_COMPACTIONS = 2
MAX_COMPACTIONS_PER_WINDOW = 3
FREQUENCY_WINDOW_CHECKS = 6
HARD_LIMIT_RATIO = 0.95
MAX_THRESHOLD_SHARE = 0.85  # a floor larger than a small window must still leave room to compact before it is full


@dataclass
class WrittenNotes:
    """The notes of one compaction and what went into them, for the result and its trace event."""

    notes: str
    decisions: list[KeyDecision]
    draft: NotesDraft
    pruned_indexes: list[int]
    selection: PinSelection
    trimmed: int
    rejected: int

    def trace(self, head: int) -> dict[str, Any]:
        return {
            "pruned_indexes": [head + index for index in self.pruned_indexes],
            "attempts": [{"model": a.model, "error": a.error} for a in self.draft.attempts],
            "cooldown": self.draft.skipped_for_cooldown,
            "summary_chunks": self.draft.chunks,
            "summary_request_tokens": self.draft.request_tokens,
            "notes_tokens": estimate_text_tokens(self.notes),
            "pinned_facts": len(self.selection.pinned),
            "pinned_evicted": self.selection.evicted,
            "notes_items_trimmed": self.trimmed,
            "decisions": {
                "new": sum(d.new and not d.changed for d in self.decisions),
                "changed": sum(d.changed for d in self.decisions),
                "carried": sum(not d.new for d in self.decisions),
                "rejected": self.rejected,
            },
        }


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
        summary_context_length: int | None = None,
        threshold_percent: float = DEFAULT_THRESHOLD_PERCENT,
        threshold_floor_tokens: int = DEFAULT_THRESHOLD_FLOOR_TOKENS,
        max_working_tokens: int | None = DEFAULT_MAX_WORKING_TOKENS,
        protect_first_n: int = DEFAULT_PROTECT_FIRST_N,
        summary_target_ratio: float = DEFAULT_SUMMARY_TARGET_RATIO,
        pinned_budget_share: float = DEFAULT_PINNED_BUDGET_SHARE,
        micro_compaction: bool = True,
        keep_recent_tool_turns: int = DEFAULT_KEEP_RECENT_TOOL_TURNS,
        aging_batch_tokens: int = DEFAULT_AGING_BATCH_TOKENS,
        fact_patterns: Sequence[FactPattern] = DEFAULT_FACT_PATTERNS,
        cooldown_steps_s: Sequence[float] = COOLDOWN_STEPS_S,
        min_savings_ratio: float = MIN_SAVINGS_RATIO,
        max_ineffective_compactions: int = MAX_INEFFECTIVE_COMPACTIONS,
        max_compactions_per_window: int = MAX_COMPACTIONS_PER_WINDOW,
        frequency_window: int = FREQUENCY_WINDOW_CHECKS,
        prompts_dir: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        timezone: tzinfo = UTC,
        recall_hint: str | None = None,
    ) -> None:
        _check_options(context_length, threshold_percent)
        self.threshold_percent = threshold_percent
        self.threshold_floor_tokens = threshold_floor_tokens
        self.max_working_tokens = max_working_tokens
        self.protect_first_n = max(0, protect_first_n)
        self.summary_target_ratio = min(max(summary_target_ratio, SUMMARY_TARGET_RATIO_MIN), SUMMARY_TARGET_RATIO_MAX)
        self.pinned_budget_share = min(max(pinned_budget_share, 0.0), 0.5)
        self.micro_compaction = micro_compaction
        self.keep_recent_tool_turns = keep_recent_tool_turns
        self.aging_batch_tokens = aging_batch_tokens
        self._aged_call_ids: set[str] = set()
        self.extractor = FactExtractor(fact_patterns)
        self.ledger = DecisionLedger(self.extractor, canonical_zone(timezone))
        self.writer = SummaryWriter(
            summary_llm,
            main_model=model,
            override_model=summary_model_override,
            cooldown_steps_s=cooldown_steps_s,
            clock=clock,
        )
        self.min_savings_ratio, self.max_ineffective_compactions = min_savings_ratio, max_ineffective_compactions
        self.max_compactions_per_window, self.frequency_window = max_compactions_per_window, frequency_window
        self.prompts_dir = prompts_dir or default_prompts_dir()
        load_prompt_templates(self.prompts_dir)
        self.clock = clock
        self.recall_hint = recall_hint
        self._summary_context_length = summary_context_length
        self.last_prompt_tokens = 0
        self.compression_count = 0
        self.ineffective_streak = 0
        self._checks = 0
        self._recent_compactions: deque[int] = deque()
        self._indexed: tuple[int, tuple[object, ...]] = (0, ())
        self._primer = IndexPrimer(self.extractor)
        self._known = KnownContext()
        self.update_model(model, context_length)

    # -- budgets ---------------------------------------------------------------------------------------------
    def update_model(self, model: str, context_length: int) -> None:
        self.model = model
        self.writer.main_model = model
        self.context_length = context_length
        threshold = max(int(context_length * self.threshold_percent), self.threshold_floor_tokens)
        threshold = min(threshold, int(context_length * max(self.threshold_percent, MAX_THRESHOLD_SHARE)))
        if self.max_working_tokens is not None:
            threshold = min(threshold, max(self.max_working_tokens, self.threshold_floor_tokens))
        self.threshold_tokens = threshold
        self.tail_budget_tokens = int(self.threshold_tokens * self.summary_target_ratio)
        budget = min(
            int(context_length * SUMMARY_BUDGET_SHARE),
            int(self.threshold_tokens * SUMMARY_BUDGET_THRESHOLD_SHARE),
            SUMMARY_BUDGET_MAX_TOKENS,
        )
        self.summary_budget_tokens = max(budget, min(SUMMARY_BUDGET_MIN_TOKENS, context_length // 4))
        self.pinned_budget_tokens = int(self.summary_budget_tokens * self.pinned_budget_share)
        self.summary_context_length = self._summary_context_length or context_length

    # -- triggers --------------------------------------------------------------------------------------------
    def update_from_response(self, usage: Usage) -> None:
        self.last_prompt_tokens = usage.prompt_tokens

    def _breakers_allow(self, tokens: int) -> bool:
        if tokens >= self.context_length * HARD_LIMIT_RATIO:
            return True
        if self.ineffective_streak >= self.max_ineffective_compactions:
            return False
        while self._recent_compactions and self._recent_compactions[0] <= self._checks - self.frequency_window:
            self._recent_compactions.popleft()
        return len(self._recent_compactions) < self.max_compactions_per_window

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        self._checks += 1
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return tokens >= self.threshold_tokens and self._breakers_allow(tokens)

    def should_compress_preflight(self, messages: list[ChatMessage]) -> bool:
        """Estimate-based trigger; also indexes new messages so a later compaction finds its work cached. Like a
        compaction it takes any item: what is not a message counts nothing and is not indexed."""
        self._index(messages)
        return self.should_compress(self._known.estimate(messages))

    def _index(self, messages: list[ChatMessage]) -> None:
        """Shrink tool output and extract identifiers of the messages and tool calls not indexed yet (both cached
        process-wide).

        Called every turn, this costs only the turn's new messages and keeps ``compress`` itself fast.
        """
        start = self._unindexed_from(messages)
        self._primer.prime(messages)  # what the host stored with them is not done again
        for position in self._primer.unindexed(start):
            if isinstance(messages[position], dict):
                warm_caches(messages[position], self.extractor)
        self._indexed = (len(messages), history_mark(messages, len(messages)))

    @property
    def wants_stored_index(self) -> bool:
        """True until this engine has indexed a context: the first one in this process is the costly one."""
        return self._indexed[0] == 0

    def _unindexed_from(self, messages: list[ChatMessage]) -> int:
        """Where the messages this engine has not indexed yet start (0 for a new engine or a different list)."""
        count, fingerprint = self._indexed
        return count if count <= len(messages) and history_mark(messages, count) == fingerprint else 0

    def age_tool_results(self, messages: list[ChatMessage]) -> AgingResult:
        """Micro-compaction (``compression.aging``); a trace event whenever a new batch of results ages."""
        if not self.micro_compaction:
            return AgingResult(messages=messages)
        started = time.perf_counter()
        self._primer.prime(messages)  # the stored index holds the reduced outputs the stubs are made of
        result = age_tool_results(
            messages, keep_recent_user_turns=self.keep_recent_tool_turns, min_batch_tokens=self.aging_batch_tokens
        )
        newly_aged = set(result.aged_call_ids) - self._aged_call_ids
        if not newly_aged:
            self._known.remember(result.messages, clean=True)
            return result
        self._aged_call_ids |= newly_aged
        for stub in result.stubs:  # index the new stubs now, as preflight does for new messages
            if stub.call_id in newly_aged:
                remember_stub_identifiers(stub, self.extractor)
        tokens_after = self._known.estimate(result.messages, clean=True)
        duration_ms = (time.perf_counter() - started) * 1000
        result.events.append(aging_event(tokens_after, result, len(newly_aged), duration_ms))
        return result

    def on_session_start(self, session_id: str) -> None:
        self.ineffective_streak = 0
        self._recent_compactions.clear()

    # -- compaction ------------------------------------------------------------------------------------------
    def compress(
        self,
        messages: list[ChatMessage],
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
    ) -> CompressionResult:
        self._primer.prime(messages)
        clean = sanitize_messages(messages, clean_prefix=self._known.clean_prefix(messages))
        result = self._compress(clean.messages, current_tokens=current_tokens, focus_topic=focus_topic)
        if clean.dropped or clean.repaired:
            result.events[0]["input_repairs"] = clean.trace()
            if result.compacted_range is not None:
                start, end = result.compacted_range
                result.compacted_range = (clean.origins[start], clean.origins[end - 1] + 1)
                result.events[0]["compacted_range"] = list(result.compacted_range)
        return result

    def _compress(
        self, messages: list[ChatMessage], *, current_tokens: int | None, focus_topic: str | None
    ) -> CompressionResult:
        started = time.perf_counter()
        estimated_before = self._known.estimate(messages, clean=True)
        tokens_before = current_tokens if current_tokens is not None else estimated_before
        previous = find_notes(messages)
        if previous is not None and not self.ledger.known:
            self.ledger.load(previous[1])
        head = head_end(messages, protect_first_n=self.protect_first_n, recompaction=previous is not None)
        tail = tail_start(messages, head=head, budget_tokens=self.tail_budget_tokens)
        working = self._fit_protected(messages, head, tail)
        tail = _alternating_tail(working, head, tail)
        if tail <= head or (previous is not None and not head <= previous[0] < tail):
            return self._finish_unchanged(messages, working, tokens_before, estimated_before, started)

        middle = working[head:tail]
        written = self.write_notes(messages, middle, (head, tail), previous, focus_topic)
        assembled = insert_notes(
            working[:head], written.notes, working[tail:], middle[-1].get("created_at"), recall_hint=self.recall_hint
        )
        result_messages, orphans, stubs = repair_tool_sequence(assembled)
        tokens_after = estimate_messages_tokens(result_messages)
        self._record_compaction(estimated_before, tokens_after)
        draft = written.draft
        event = trace_event(
            strategy="summary" if not draft.fallback_used else "fallback_summary",
            engine=self.name,
            messages_before=len(messages),
            messages_after=len(result_messages),
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            compacted_range=(head, tail),
            started=started,
            model=draft.model,
            fallback_used=draft.fallback_used,
            **written.trace(head),
            orphans_removed=orphans,
            stubs_added=stubs,
            focus_topic=focus_topic,
        )
        return CompressionResult(
            messages=result_messages,
            summary=written.notes,
            key_decisions=written.decisions,
            compacted_range=(head, tail),
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            summary_model=draft.model,
            summary_usage=draft.usage,
            fallback_used=draft.fallback_used,
            events=[event],
        )

    def write_notes(
        self,
        messages: list[ChatMessage],
        middle: list[ChatMessage],
        compacted_range: tuple[int, int],
        previous: tuple[int, str] | None,
        focus_topic: str | None,
    ) -> WrittenNotes:
        """Notes for ``middle``: summarized (in chunks if need be), decisions reconciled, pins within budget.

        ``compression.transcript`` calls it too, to summarize a stretch of transcript outside a compaction."""
        head = compacted_range[0]
        turns = [message for message in middle if NOTES_KEY not in message or notes_of(message) is None]
        pruned, pruned_indexes = prune_tool_outputs(turns, range(len(turns)))
        previous_notes = previous[1] if previous is not None else None
        pins = PinnedIdentifiers(self.extractor, self.pinned_budget_tokens)
        selection = pins.candidates(pruned, previous_notes)
        request = SummaryRequest(
            previous_summary=previous_notes,
            pinned=selection.render_candidates(),
            latest_ask=latest_customer_message(messages),
            focus_topic=focus_topic,
            as_of=_latest_time(middle),
            max_tokens=int(self.summary_budget_tokens * SUMMARY_OUTPUT_SHARE),
            prompts_dir=self.prompts_dir,
            timezone=self.ledger.timezone,
        )
        rejected_before = self.ledger.rejected
        batch = self.ledger.batch(ReconcileContext(pruned, head, compacted_range, _latest_time(middle)))
        draft = summarize_in_chunks(
            self.writer,
            pruned,
            head,
            request,
            window_tokens=self.summary_context_length,
            fallback=lambda chunk, first, notes: fallback_summary(chunk, first_index=first, previous_summary=notes),
            check=lambda notes, seen: batch.check(strip_pinned_block(notes), seen),
        )
        notes, decisions = draft.text, batch.decisions()
        pins.select(selection, notes)
        pin_tokens = estimate_text_tokens(pins.render(selection.pinned)) if selection.pinned else 0
        notes, trimmed = trim_to_budget(notes, self.summary_budget_tokens - pin_tokens - 2)
        return WrittenNotes(
            notes=pins.append(notes, selection.pinned),
            decisions=decisions,
            draft=draft,
            pruned_indexes=pruned_indexes,
            selection=selection,
            trimmed=trimmed,
            rejected=self.ledger.rejected - rejected_before,
        )

    # -- helpers ---------------------------------------------------------------------------------------------
    def _fit_protected(self, messages: list[ChatMessage], head: int, tail: int) -> list[ChatMessage]:
        """The messages, with tool output inside the protected tail pruned if that is what it takes to fit.

        Raises ``ContextOverflowError`` when the head, the must-keep tail and the summary cannot fit the window.
        """
        keep_from = max(min(tail, must_keep_start(messages)), head)

        def protected_tokens(candidate: list[ChatMessage]) -> int:
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

    def _record_compaction(self, before: int, after: int) -> None:
        self.compression_count += 1
        self._recent_compactions.append(self._checks)
        saved = (before - after) / before if before else 0.0
        self.ineffective_streak = self.ineffective_streak + 1 if saved < self.min_savings_ratio else 0
        self.last_prompt_tokens = after

    def _finish_unchanged(
        self, messages: list[ChatMessage], working: list[ChatMessage], tokens_before: int, estimate: int, started: float
    ) -> CompressionResult:
        result_messages, orphans, stubs = repair_tool_sequence(working)
        tokens_after = estimate_messages_tokens(result_messages)
        self._record_compaction(estimate, tokens_after)
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


def _check_options(context_length: int, threshold_percent: float) -> None:
    if context_length <= 0:
        raise ValueError(f"context_length must be positive, got {context_length}.")
    if not 0 < threshold_percent <= 1:
        raise ValueError(f"threshold_percent must be in (0, 1], got {threshold_percent}.")


def _alternating_tail(messages: list[ChatMessage], head: int, tail: int) -> int:
    """Move the tail boundary back (one message or tool group at a time) until some role for the notes differs
    from both neighbours, so user and assistant turns keep alternating around them."""
    while head < tail < len(messages):
        before = messages[head - 1].get("role") if head else None
        if notes_role(before, messages[tail].get("role")) is not None:
            break
        tail = group_start(messages, tail - 1)
    return tail


def _latest_time(messages: Sequence[ChatMessage]) -> datetime | None:
    for message in reversed(messages):
        moment = parse_timestamp(message.get("created_at"))
        if moment is not None:
            return moment
    return None
