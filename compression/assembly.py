"""Putting a compacted context back together: the framed summary, its role, and a valid tool-call sequence.

A host that keeps every turn can give a ``recall_hint``: one sentence the frame adds after its opening, saying how
the model can look the earlier turns up. The host must pass the same hint wherever it rebuilds the notes, so the
rebuilt message is identical to the engine's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from compression.messages import ChatMessage

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


# The notes message is recognised by this key, which the host sets and no text can produce, never by its wording:
# a customer or a tool can write the frame above, but that stays ordinary content.
NOTES_KEY: Final = "memdesk_notes"
ROLES_FOR_NOTES = ("user", "assistant")


def frame_summary(summary: str, recall_hint: str | None = None) -> str:
    opening = f"{SUMMARY_PREFIX} {recall_hint.strip()}" if recall_hint and recall_hint.strip() else SUMMARY_PREFIX
    return f"{opening}\n\n{summary.strip()}\n\n{SUMMARY_END}"


def notes_message(
    summary: str, *, role: str, created_at: object = None, recall_hint: str | None = None, **record: object
) -> ChatMessage:
    """The message that carries the notes; ``record`` is the host's own bookkeeping (ids of the covered range)."""
    content = frame_summary(summary, recall_hint)
    message: ChatMessage = {"role": role, "content": content, NOTES_KEY: {"summary": summary, **record}}
    if created_at is not None:
        message["created_at"] = created_at
    return message


def notes_of(message: ChatMessage) -> str | None:
    """The notes held by ``message``, or None when it is not a notes message."""
    record = message.get(NOTES_KEY)
    if isinstance(record, dict) and isinstance(record.get("summary"), str):
        return str(record["summary"])
    return None


def find_notes(messages: Sequence[ChatMessage]) -> tuple[int, str] | None:
    """(index, notes) of the latest notes message in ``messages``."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        notes = notes_of(message) if NOTES_KEY in message else None  # most messages: no call
        if notes is not None:
            return index, notes
    return None


def notes_role(before: object, after: object) -> str | None:
    """The role that differs from both neighbours, or None when user and assistant are both taken."""
    return next((role for role in ROLES_FOR_NOTES if role != before and role != after), None)


def insert_notes(
    head: list[ChatMessage],
    summary: str,
    tail: list[ChatMessage],
    created_at: object = None,
    *,
    recall_hint: str | None = None,
    **record: object,
) -> list[ChatMessage]:
    """head + notes + tail. The notes take a role that keeps user and assistant turns alternating; the compressor
    moves its tail boundary so that one exists, and when a host's layout leaves none they go in as a user turn."""
    before = head[-1].get("role") if head else None
    after = tail[0].get("role") if tail else None
    role = notes_role(before, after) or "user"
    notes = notes_message(summary, role=role, created_at=created_at, recall_hint=recall_hint, **record)
    return [*head, notes, *tail]


def repair_tool_sequence(messages: Sequence[ChatMessage]) -> tuple[list[ChatMessage], int, int]:
    """A valid OpenAI sequence: tool results directly follow the assistant message that called them.

    Orphan tool results are removed; a call without a result gets a stub result saying it was compacted away.
    Returns (messages, orphans removed, stubs added).
    """
    repaired: list[ChatMessage] = []
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
