"""Provenance of key decisions: the turn an item cites, whether that turn supports it, and who said it.

The summary model cites the turn an item came from (``from: #N``). ``DecisionLedger`` accepts a new promise or
decision, or a change of one, only when the cited turn is inside the summarized range, was written by support (the
bot or a staff member) or a tool, and *supports* the item:

- every amount of the item (``compression.subjects``) appears in what the turn stands behind: its text, its tool
  calls' arguments and those calls' results (for a tool result: its text and the arguments of the call that asked
  for it);
- and one of its subjects (order, RMA, tracking number) appears there too, or else the turn shares distinctive
  words with the item (``MIN_SHARED_WORDS``, or all of the item's words when it has fewer): a reply that says
  "your replacement ships in 3 days" supports "Replacement ships" for the order the customer named before.

Customers speak for themselves only: a customer turn may establish a preference, never a commitment. Staff replies
are assistant messages the host marks with ``author: "staff:<id>"``; ``said_by`` reads that mark.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from compression.facts import normalize_identifier
from compression.messages import ChatMessage, content_text, function_calls
from compression.subjects import ItemIdentifiers
from compression.types import KeyDecisionKind

COMMITTING_ROLES = frozenset({"assistant", "tool"})
MIN_SHARED_WORDS = 2
STAFF_PREFIX = "staff:"

_WORD = re.compile(r"[a-z]{3,}")
_STOP_WORDS = frozenset(
    {
        *("the", "and", "for", "with", "that", "this", "from", "will", "was", "are", "has", "have", "been"),
        *("our", "your", "their", "customer", "support", "agent", "via", "over", "than", "rather", "into"),
        *("onto", "about", "after", "before", "until", "would", "should", "could", "also", "only"),
    }
)


def distinctive_words(text: str) -> frozenset[str]:
    return frozenset(word for word in _WORD.findall(text.lower()) if word not in _STOP_WORDS)


def cited_turn(source: int | None, turns: Sequence[ChatMessage], first_index: int) -> ChatMessage | None:
    """The turn ``#source`` of the summarized range, or None when there is no citation or it points outside."""
    if source is None:
        return None
    position = source - first_index
    return turns[position] if 0 <= position < len(turns) else None


def is_staff(message: ChatMessage) -> bool:
    author = message.get("author")
    return message.get("role") == "assistant" and isinstance(author, str) and author.startswith(STAFF_PREFIX)


def said_by(turn: ChatMessage | None) -> str | None:
    """Who wrote ``turn``: its ``author`` mark, else "bot" for support and tool turns, "customer" for a customer's."""
    if turn is None:
        return None
    author = turn.get("author")
    if isinstance(author, str) and author:
        return author
    role = turn.get("role")
    if role in COMMITTING_ROLES:
        return "bot"
    return "customer" if role == "user" else None


def may_establish(turn: ChatMessage, kind: KeyDecisionKind) -> bool:
    """Support and tools commit; anyone, the customer first, may state how the customer wants things done."""
    return kind == "preference" or turn.get("role") in COMMITTING_ROLES


def evidence(turn: ChatMessage, turns: Sequence[ChatMessage]) -> str:
    """The text a turn stands behind: its own, its tool calls' arguments and results (or its call's arguments)."""
    parts = [content_text(turn.get("content"))]
    calls = {call.id: call.arguments for call in function_calls(turn)} if turn.get("tool_calls") else {}
    parts += calls.values()
    wanted = str(turn.get("tool_call_id") or "")
    for message in turns:
        if message.get("role") == "tool" and message.get("tool_call_id") in calls:
            parts.append(content_text(message.get("content")))
        elif wanted and message.get("tool_calls"):
            parts += [call.arguments for call in function_calls(message) if call.id == wanted]
    return "\n".join(parts)


def supports(turns: Sequence[ChatMessage], position: int, text: str, ids: ItemIdentifiers) -> bool:
    """Whether ``turns[position]`` stands behind an item with ``text`` and ``ids``."""
    said = evidence(turns[position], turns)
    haystack = normalize_identifier(said)
    if not all(amount in haystack for amount in ids.amounts):
        return False
    if any(subject in haystack for subject in ids.subjects):
        return True
    wanted = distinctive_words(text)
    return bool(wanted) and len(wanted & distinctive_words(said)) >= min(MIN_SHARED_WORDS, len(wanted))
