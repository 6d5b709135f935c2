"""Summarizing a stretch of transcript outside a compaction (the host's periodic conclusion sync).

The same prompt, model order (override model, main model, deterministic fallback), decision parsing and date rules as a
compaction, through the compressor's own ``write_notes``. ``previous_notes`` (the latest compaction's notes, if any)
give the model the conversation so far; the decisions they hold are known to the engine's ledger, so only what the new
turns establish or change comes back as new.
"""

from __future__ import annotations

from dataclasses import dataclass

from compression.assembly import notes_message
from compression.compressor import ContextCompressor
from compression.messages import ChatMessage
from compression.sanitize import sanitize_messages
from compression.types import KeyDecision, Usage


@dataclass(frozen=True)
class TranscriptSummary:
    notes: str
    decisions: list[KeyDecision]
    model: str | None
    usage: Usage | None
    fallback_used: bool


def summarize_transcript(
    engine: ContextCompressor, turns: list[ChatMessage], *, previous_notes: str | None = None
) -> TranscriptSummary:
    """Notes and key decisions for ``turns`` (which must hold at least one message)."""
    clean = sanitize_messages(turns).messages
    head: list[ChatMessage] = []
    previous: tuple[int, str] | None = None
    if previous_notes:
        head = [notes_message(previous_notes, role="user")]
        previous = (0, previous_notes)
        if not engine.ledger.known:
            engine.ledger.load(previous_notes)
    messages = [*head, *clean]
    written = engine.write_notes(messages, clean, (len(head), len(messages)), previous, None)
    return TranscriptSummary(
        notes=written.notes,
        decisions=[decision for decision in written.decisions if decision.new],
        model=written.draft.model,
        usage=written.draft.usage,
        fallback_used=written.draft.fallback_used,
    )
