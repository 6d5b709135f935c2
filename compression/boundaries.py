"""Steps 2-3 of a compaction: where the verbatim head ends and the verbatim tail begins.

The head is the system prompt and the first exchange on a first compaction; on later ones only the leading system
messages, so the first exchange goes into the updated summary instead of staying forever. The tail is found by
walking back from the end until its token budget is spent, then widened so that it holds the customer's latest
message and the last assistant reply. No boundary ever falls between an assistant's tool calls and their results.
"""

from __future__ import annotations

from collections.abc import Sequence

from compression.messages import ChatMessage
from compression.tokens import estimate_message_tokens


def leading_system_count(messages: Sequence[ChatMessage]) -> int:
    count = 0
    while count < len(messages) and messages[count].get("role") == "system":
        count += 1
    return count


def _past_tool_results(messages: Sequence[ChatMessage], index: int) -> int:
    """Move ``index`` forward past tool results, so it never points inside a tool-call group."""
    while index < len(messages) and messages[index].get("role") == "tool":
        index += 1
    return index


def group_start(messages: Sequence[ChatMessage], index: int) -> int:
    """Move ``index`` back to the assistant message whose tool results it points into."""
    while index > 0 and messages[index].get("role") == "tool":
        index -= 1
    return index


def head_end(messages: Sequence[ChatMessage], *, protect_first_n: int, recompaction: bool) -> int:
    """Index of the first message after the protected head."""
    if recompaction:
        return leading_system_count(messages)
    end = min(max(protect_first_n, leading_system_count(messages)), len(messages))
    return _past_tool_results(messages, end)


def must_keep_start(messages: Sequence[ChatMessage]) -> int:
    """The tail must start at or before the latest customer message and the last assistant reply."""
    start = len(messages)
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None)
    if last_user is not None:
        start = last_user
    last_reply = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if messages[i].get("role") == "assistant" and messages[i].get("content")
        ),
        None,
    )
    if last_reply is not None:
        start = min(start, last_reply)
    return group_start(messages, start) if start < len(messages) else start


def tail_start(messages: Sequence[ChatMessage], *, head: int, budget_tokens: int) -> int:
    """Index of the first message of the protected tail (``len(messages)`` when the tail is empty)."""
    index = len(messages)
    spent = 0
    while index > head:
        cost = estimate_message_tokens(messages[index - 1])
        if spent + cost > budget_tokens:
            break
        spent += cost
        index -= 1
    index = min(index, must_keep_start(messages))
    return max(group_start(messages, index), head) if index < len(messages) else index
