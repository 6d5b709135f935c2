"""Pinned identifiers with a budget: which identifiers the notes carry verbatim when the summary left them out.

Candidates are ranked by where they were said, then by recency:

1. what the customer and support wrote, and tool-call arguments (newest turns first, then those carried in the
   previous notes);
2. tool results (JSON and plain text, newest first, then carried ones);
3. log and table output, the noisiest (timestamps, row after row of ids).

Only the best-ranked candidates fit in the pinned budget; the rest are evicted and counted. Extraction is lazy: it
runs, best rank first, only until the budget can be filled, so a long context with enough identifiers in what was
said never pays for scanning its bulky tool output. Identifiers that a key decision names are in the decision items
themselves, so they are never lost to eviction.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple

from compression.facts import FactExtractor, normalize_identifier
from compression.messages import ChatMessage, content_text, function_calls
from compression.pruning import PRUNED_MARKER
from compression.sections import CRITICAL_CONTEXT, append_to_section
from compression.tokens import estimate_text_tokens

PINNED_HEADING_LINE = "- Pinned identifiers from earlier turns (verbatim):"
CONVERSATION_LINE = "  - said in the conversation:"
TOOL_LINE = "  - from tool results:"
_NOISY_OUTPUT_PREFIXES = (f"{PRUNED_MARKER} log ", f"{PRUNED_MARKER} table ")


class PinRank(IntEnum):
    CONVERSATION = 0
    TOOL_RESULT = 1
    NOISE = 2


class PinCandidate(NamedTuple):  # a tuple: one per identifier found, built several times faster than a dataclass
    value: str
    rank: PinRank


@dataclass
class PinSelection:
    """The candidates offered to the summary model and, after the summary, the ones appended to the notes."""

    candidates: list[PinCandidate] = field(default_factory=list)
    pinned: list[PinCandidate] = field(default_factory=list)
    evicted: int = 0
    pending: Iterator[tuple[PinRank, str]] = field(default_factory=lambda: iter(()))
    seen: set[str] = field(default_factory=set)
    candidate_tokens: int = 0

    def render_candidates(self) -> str:
        return ", ".join(candidate.value for candidate in self.candidates)


def _rank_of_tool_output(content: str) -> PinRank:
    return PinRank.NOISE if content.startswith(_NOISY_OUTPUT_PREFIXES) else PinRank.TOOL_RESULT


def _sources(turns: Sequence[ChatMessage]) -> dict[PinRank, list[str]]:
    """The texts of ``turns`` by rank, newest first within a rank."""
    by_rank: dict[PinRank, list[str]] = {rank: [] for rank in PinRank}
    conversation = by_rank[PinRank.CONVERSATION]
    for message in reversed(turns):
        content = message.get("content")
        text = content if isinstance(content, str) else content_text(content)
        if message.get("role") == "tool":
            by_rank[_rank_of_tool_output(text)].append(text)
            continue
        if text:  # a call-only turn has no text of its own
            conversation.append(text)
        if message.get("tool_calls"):
            conversation += [call.arguments for call in function_calls(message)]
    return by_rank


def _carried(previous_notes: str | None) -> tuple[str, str]:
    """(conversation text, tool text) of the previous notes: its tool-results pin line ranks as tool output."""
    if not previous_notes:
        return "", ""
    tool_lines = [line for line in previous_notes.splitlines() if line.startswith(TOOL_LINE)]
    other = [line for line in previous_notes.splitlines() if not line.startswith(TOOL_LINE)]
    return "\n".join(other), "\n".join(tool_lines)


class PinnedIdentifiers:
    """Ranks, offers and selects pinned identifiers for one compaction within ``budget_tokens``."""

    def __init__(self, extractor: FactExtractor, budget_tokens: int) -> None:
        self.extractor = extractor
        self.budget_tokens = budget_tokens

    def candidates(self, turns: Sequence[ChatMessage], previous_notes: str | None) -> PinSelection:
        """The best-ranked candidates, enough to fill the budget once (more are extracted when needed)."""
        carried_conversation, carried_tools = _carried(previous_notes)
        texts = _sources(turns)
        texts[PinRank.CONVERSATION].append(carried_conversation)
        texts[PinRank.TOOL_RESULT].append(carried_tools)
        # (rank, text) pairs paired by C iterators, not generator expressions: this runs over most of the turns.
        ordered = itertools.chain.from_iterable(zip(itertools.repeat(rank), texts[rank]) for rank in PinRank)
        selection = PinSelection(pending=ordered)
        while selection.candidate_tokens < self.budget_tokens and self._extract_next(selection):
            pass
        return selection

    def _extract_next(self, selection: PinSelection) -> list[PinCandidate]:
        """Candidates from the next source text; an empty list once the sources are exhausted."""
        extract, seen = self.extractor.extract, selection.seen  # read once: this loop visits most of the turns
        for rank, text in selection.pending:
            added = []
            for kind, value in extract(text):
                if value in seen:  # said before in the same form: no need to normalize it again
                    continue
                key = normalize_identifier(value)
                if key in seen or (rank == PinRank.NOISE and kind == "date"):
                    continue  # timestamps of log lines and table rows are noise, not facts
                seen.add(key)
                seen.add(value)  # a normalized key is its own normal form, so both can share the set
                added.append(PinCandidate(value, rank))
                selection.candidate_tokens += estimate_text_tokens(value) + 1
            if added:
                selection.candidates += added
                return added
        return []

    def select(self, selection: PinSelection, summary: str) -> PinSelection:
        """The candidates that ``summary`` does not mention, best first, as many as the budget holds."""
        haystack = normalize_identifier(summary)
        spent = estimate_text_tokens(PINNED_HEADING_LINE + CONVERSATION_LINE + TOOL_LINE)
        batch = list(selection.candidates)
        while batch:
            for candidate in batch:
                if normalize_identifier(candidate.value) in haystack:
                    continue
                cost = estimate_text_tokens(candidate.value) + 1
                if spent + cost > self.budget_tokens:
                    selection.evicted += 1
                    continue
                spent += cost
                selection.pinned.append(candidate)
            # Room left: read further sources, in rank order, only now that they are needed.
            batch = self._extract_next(selection) if spent < self.budget_tokens - 1 else []
        return selection

    @staticmethod
    def render(pinned: Sequence[PinCandidate]) -> str:
        conversation = [c.value for c in pinned if c.rank == PinRank.CONVERSATION]
        tools = [c.value for c in pinned if c.rank != PinRank.CONVERSATION]
        lines = [PINNED_HEADING_LINE]
        if conversation:
            lines.append(f"{CONVERSATION_LINE} {', '.join(conversation)}")
        if tools:
            lines.append(f"{TOOL_LINE} {', '.join(tools)}")
        return "\n".join(lines)

    def append(self, summary: str, pinned: Sequence[PinCandidate]) -> str:
        if not pinned:
            return summary
        return append_to_section(summary, CRITICAL_CONTEXT, self.render(pinned))


def strip_pinned_block(summary: str) -> str:
    """``summary`` without the pinned block an earlier compaction appended; its identifiers are candidates again."""
    own = (PINNED_HEADING_LINE, CONVERSATION_LINE, TOOL_LINE)
    return "\n".join(line for line in summary.splitlines() if not line.startswith(own))
