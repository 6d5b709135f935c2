"""The compression benchmarks' summary model: a zero-latency ``SummaryLLM`` that answers every compaction request with
the same structured notes, which copy no identifier (so what survives a compaction is what the compressor itself
kept: pinned identifiers, the tail), and counts the tokens it was sent and wrote per model.
"""

from __future__ import annotations

from compression.messages import ChatMessage
from compression.tokens import estimate_messages_tokens, estimate_text_tokens
from compression.types import Completion, Usage

SCRIPTED_SUMMARY = """## Customer Goal
- The customer is following up on several kitchen orders (delivery status, a damaged item, a refund).
## Verified Identity
- Verified through the order email on file.
## Orders & Identifiers
- See the pinned identifiers below.
## Actions Taken
- get_order -> order details returned; track_shipment -> carrier events returned; list_orders -> order list.
## Key Decisions
- Refund approved for the damaged item once the return is scanned.
## Promises & Commitments
- Refund to the original card within 5 business days.
## Customer Preferences
- Prefers text messages over email.
## Resolved Questions
- How long refunds take: up to 5 business days.
## Pending Customer Asks
- Wants an update on the remaining order.
## Handoff State
- None
## Critical Context
- None
"""


class ScriptedSummarizer:
    """Zero-latency ``SummaryLLM``: a fixed structured summary, usage estimated from the request."""

    def __init__(self) -> None:
        self.usage_by_model: dict[str, Usage] = {}

    def complete(self, messages: list[ChatMessage], *, model: str, max_tokens: int) -> Completion:
        usage = Usage(estimate_messages_tokens(messages), estimate_text_tokens(SCRIPTED_SUMMARY))
        self.usage_by_model[model] = self.usage_by_model.get(model, Usage()) + usage
        return Completion(text=SCRIPTED_SUMMARY, model=model, usage=usage)


def request_material(prompt: str) -> tuple[str, str]:
    """The current notes (empty on a first compaction) and the turns of a compaction request, for scripted models
    that answer from what they were sent."""
    notes = prompt.split("<current-notes>", 1)[1].split("</current-notes>", 1)[0] if "<current-notes>" in prompt else ""
    return notes, prompt.split("<turns>", 1)[1].split("</turns>", 1)[0]


def promise_items(notes: str) -> list[str]:
    """The items of the notes' Promises & Commitments section, without their bullets."""
    lines = notes.split("## Promises & Commitments", 1)[-1].split("\n## ", 1)[0].splitlines()
    return [line[2:] for line in lines if line.startswith("- ") and line[2:] != "None"]
