"""Putting a compacted context back together: the framed summary, its role, and a valid tool-call sequence."""

from __future__ import annotations

from collections.abc import Sequence

from compression.tokens import content_text
from compression.types import Message

SUMMARY_PREFIX = (
    "[memdesk: notes on earlier turns] Earlier turns of this conversation were condensed into the notes below to "
    "keep the context small. They are reference material about what already happened, written by the support "
    "system, not instructions and not a message to reply to. Continue from the latest customer message."
)
SUMMARY_END = "[memdesk: end of notes on earlier turns]"
MISSING_RESULT_CONTENT = (
    '{"error": {"code": "result_unavailable", "message": "This tool result was removed when the context was '
    'compacted; the summary notes describe the outcome."}}'
)
_ROLES_FOR_SUMMARY = ("user", "assistant")


def frame_summary(summary: str) -> str:
    return f"{SUMMARY_PREFIX}\n\n{summary.strip()}\n\n{SUMMARY_END}"


def split_framed(content: str) -> tuple[str, str] | None:
    """(summary, rest of the message) when ``content`` holds a framed summary; None otherwise."""
    if not content.startswith(SUMMARY_PREFIX):
        return None
    body = content[len(SUMMARY_PREFIX) :]
    end = body.find(SUMMARY_END)
    if end < 0:
        return body.strip(), ""
    return body[:end].strip(), body[end + len(SUMMARY_END) :].strip()


def find_previous_summary(messages: Sequence[Message]) -> tuple[int, str, str] | None:
    """(index, summary, rest) of the latest framed summary in ``messages``."""
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].get("content")
        if isinstance(content, str) and content.startswith(SUMMARY_PREFIX):
            split = split_framed(content)
            if split is not None:
                return index, split[0], split[1]
    return None


def insert_summary(head: list[Message], summary: str, tail: list[Message], created_at: object) -> list[Message]:
    """head + summary + tail, with the summary in a role that differs from both neighbours.

    When both roles collide (a user message before and an assistant message after, or the reverse), the summary
    is merged into the first tail message instead of breaking the alternation.
    """
    framed = frame_summary(summary)
    before = head[-1].get("role") if head else None
    after = tail[0].get("role") if tail else None
    for role in _ROLES_FOR_SUMMARY:
        if role != before and role != after:
            message: Message = {"role": role, "content": framed}
            if created_at is not None:
                message["created_at"] = created_at
            return [*head, message, *tail]
    first = tail[0]
    original = content_text(first.get("content"))
    merged = {**first, "content": f"{framed}\n\n{original}" if original else framed}
    return [*head, merged, *tail[1:]]


def repair_tool_sequence(messages: Sequence[Message]) -> tuple[list[Message], int, int]:
    """A valid OpenAI sequence: tool results directly follow the assistant message that called them.

    Orphan tool results are removed; a call without a result gets a stub result saying it was compacted away.
    Returns (messages, orphans removed, stubs added).
    """
    repaired: list[Message] = []
    pending: list[str] = []
    answered: set[str] = set()
    removed = added = 0

    def close_group() -> None:
        nonlocal added
        for call_id in pending:
            if call_id not in answered:
                repaired.append({"role": "tool", "tool_call_id": call_id, "content": MISSING_RESULT_CONTENT})
                added += 1
        pending.clear()
        answered.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str) and call_id in pending and call_id not in answered:
                answered.add(call_id)
                repaired.append(message)
            else:
                removed += 1
            continue
        close_group()
        repaired.append(message)
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    pending.append(call["id"])
    close_group()
    return repaired, removed, added
