"""Malformed input made safe before a compaction touches it.

Hosts pass whatever their storage gave them; a context engine must not crash on it. ``sanitize_messages`` drops
items that are not messages (``None``, strings, lists), gives a message without a usable role the role ``user`` only
when it has text (otherwise drops it), turns odd ``content`` into text, and rewrites tool calls so that every one
has a string id, a function name and JSON-string arguments. What it changed is counted so the trace can say so.
It returns the origin index of every kept message, so ranges can be reported against the caller's list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from compression.messages import ChatMessage, ToolCallPart, content_text, safe_json_text

KNOWN_ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})
UNNAMED_TOOL = "unknown_tool"


@dataclass
class Sanitized:
    """The cleaned messages, where each came from in the input, and what was repaired or dropped."""

    messages: list[ChatMessage]
    origins: list[int]
    dropped: int = 0
    repaired: int = 0
    notes: list[str] = field(default_factory=list)

    def trace(self) -> dict[str, Any]:
        return {"dropped": self.dropped, "repaired": self.repaired, "notes": self.notes[:10]}


def _clean_tool_calls(calls: Any, index: int, notes: list[str]) -> tuple[list[dict[str, Any]] | None, bool]:
    if calls is None:
        return None, False
    if not isinstance(calls, list):
        notes.append(f"#{index}: tool_calls was not a list; removed")
        return None, True
    cleaned: list[dict[str, Any]] = []
    changed = False
    for position, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(function, dict):
            notes.append(f"#{index}: tool call {position} had no function; removed")
            changed = True
            continue
        call_id = call.get("id")
        name = function.get("name")
        arguments = function.get("arguments")
        fixed = {
            **call,
            "id": call_id if isinstance(call_id, str) and call_id else f"call_missing_{index}_{position}",
            "function": {
                **function,
                "name": name if isinstance(name, str) and name else UNNAMED_TOOL,
                "arguments": arguments if isinstance(arguments, str) else safe_json_text(arguments or {}),
            },
        }
        changed = changed or fixed != call
        cleaned.append(fixed)
    return cleaned, changed


def _is_clean(message: dict[str, Any]) -> bool:
    """The common case, checked cheaply: a known role, text content, well-formed tool calls and ids."""
    role = message.get("role")
    if role not in KNOWN_ROLES or not isinstance(message.get("content"), (str, type(None))):
        return False
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        return False
    calls = message.get("tool_calls")
    if calls is None:
        return True
    if not isinstance(calls, list) or not calls:
        return False
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not (isinstance(function, dict) and isinstance(call.get("id"), str) and call["id"]):
            return False
        if not (
            isinstance(function.get("name"), str) and function["name"] and isinstance(function.get("arguments"), str)
        ):
            return False
    return True


def _clean_message(message: dict[str, Any], index: int, notes: list[str]) -> tuple[ChatMessage | None, bool]:
    role = message.get("role")
    content = message.get("content")
    changed = False
    if not (content is None or isinstance(content, (str, list))):
        content = safe_json_text(content)
        changed = True
    elif isinstance(content, list):
        flat = content_text(content)
        if not all(isinstance(part, (dict, str)) for part in content):
            content, changed = flat, True
    if not isinstance(role, str) or role not in KNOWN_ROLES:
        if not content_text(content).strip():
            notes.append(f"#{index}: no usable role and no text; dropped")
            return None, True
        notes.append(f"#{index}: role {str(role)[:20]!r} read as user")
        role, changed = "user", True
    # From here on the message has the shape the rest of the package relies on.
    cleaned = cast(ChatMessage, {**message, "role": role, "content": content})
    calls, calls_changed = _clean_tool_calls(message.get("tool_calls"), index, notes)
    if "tool_calls" in message:
        if calls:
            cleaned["tool_calls"] = cast(list[ToolCallPart], calls)
        else:
            cleaned.pop("tool_calls")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        cleaned["tool_call_id"] = safe_json_text(message.get("tool_call_id")) or f"call_missing_{index}"
        changed = True
    return cleaned, changed or calls_changed


def sanitize_messages(messages: Sequence[Any]) -> Sanitized:
    """Messages safe for every later step; unchanged messages are passed through as the same objects."""
    result = Sanitized(messages=[], origins=[])
    for index, item in enumerate(messages):
        if not isinstance(item, dict):
            result.dropped += 1
            result.notes.append(f"#{index}: {type(item).__name__} is not a message; dropped")
            continue
        if _is_clean(item):
            result.messages.append(cast(ChatMessage, item))
            result.origins.append(index)
            continue
        cleaned, changed = _clean_message(item, index, result.notes)
        if cleaned is None:
            result.dropped += 1
            continue
        result.repaired += changed
        result.messages.append(cleaned if changed else cast(ChatMessage, item))
        result.origins.append(index)
    return result
