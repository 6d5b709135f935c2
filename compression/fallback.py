"""Notes written without any LLM, for when the summary model and the main model both fail (or are cooling down).

The previous notes are kept as they are, so their decisions and promises stay with their keys. Added from the new
turns: the customer's goal and latest asks (flattened to one line each, so nothing a customer writes can become a
heading or a notes section of its own), each tool call with its outcome, and the last turns replaced. Nothing here
turns a customer's words into a promise or a decision: the decision sections only ever hold what earlier notes held.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from compression.messages import ChatMessage, content_text, function_calls, safe_json_text
from compression.sanitize import without_surrogates
from compression.sections import (
    ACTIONS_TAKEN,
    CUSTOMER_GOAL,
    PENDING_ASKS,
    parse_sections,
    render_sections,
)
from compression.summarizer import describe_turn

FALLBACK_ITEM_CHARS = 240
FALLBACK_RECENT_TURNS = 4
FALLBACK_SECTION_MAX_ITEMS = 30
FALLBACK_RECENT_HEADING = "## Last Turns Replaced (written without a summary model)"


def _one_line(text: str, limit: int = FALLBACK_ITEM_CHARS) -> str:
    flat = " ".join(without_surrogates(text).split())  # tool output decoded from JSON may hold a lone surrogate
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _tool_outcome(content: str) -> str:
    try:
        parsed: Any = json.loads(content)
    except (ValueError, RecursionError):
        return _one_line(content, 120)
    if isinstance(parsed, dict):
        if "error" in parsed:
            return _one_line(f"error {safe_json_text(parsed['error'])}", 160)
        fields = {key: value for key, value in parsed.items() if not isinstance(value, (dict, list))}
        if fields:
            return _one_line(safe_json_text(fields), 160)
    return _one_line(content, 120)


def fallback_summary(turns: Sequence[ChatMessage], *, first_index: int, previous_summary: str | None) -> str:
    """Notes built without an LLM: earlier notes kept, plus customer asks, tool calls and outcomes, last turns."""
    sections = parse_sections(previous_summary) if previous_summary else {}
    customer = [content_text(m.get("content")) for m in turns if m.get("role") == "user"]
    customer = [text for text in customer if text.strip()]
    if customer and not sections.get(CUSTOMER_GOAL):
        sections[CUSTOMER_GOAL] = [_one_line(customer[0])]
    results = {str(m.get("tool_call_id")): content_text(m.get("content")) for m in turns if m.get("role") == "tool"}
    actions = list(sections.get(ACTIONS_TAKEN, []))
    for message in turns:
        for call in function_calls(message):
            outcome = results.get(call.id)
            arguments = _one_line(call.arguments, 120)
            result = _tool_outcome(outcome) if outcome is not None else "no result recorded"
            actions.append(f"{call.name}({arguments}) -> {result}")
    sections[ACTIONS_TAKEN] = actions[-FALLBACK_SECTION_MAX_ITEMS:]
    asks = list(sections.get(PENDING_ASKS, [])) + [_one_line(text) for text in customer[-3:]]
    sections[PENDING_ASKS] = asks[-FALLBACK_SECTION_MAX_ITEMS:]
    recent = [
        _one_line(
            describe_turn(
                message,
                first_index + len(turns) - len(turns[-FALLBACK_RECENT_TURNS:]) + offset,
                {},
                FALLBACK_ITEM_CHARS,
                0,
            )
        )
        for offset, message in enumerate(turns[-FALLBACK_RECENT_TURNS:])
    ]
    body = render_sections(sections)
    return f"{body}\n\n{FALLBACK_RECENT_HEADING}\n" + "\n".join(f"- {line}" for line in recent)
