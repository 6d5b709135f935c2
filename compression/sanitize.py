"""Malformed input made safe before aging or a compaction touches it.

Hosts pass whatever their storage gave them; a context engine must not crash on it. ``sanitize_messages`` drops
items that are not messages (``None``, strings, lists), gives a message without a usable role the role ``user`` only
when it has text (otherwise drops it), turns odd ``content`` into text, and rewrites tool calls so that every one
has a string id, a function name and JSON-string arguments. Lone surrogates (which a JSON escape such as ``\ud800``
or a lenient decoder lets into a Python string, and which no UTF-8 encoder accepts) become U+FFFD in the content,
its parts, the message's name and tool call id, and the tool calls' ids, names and arguments. What it changed is
counted so the trace can say so. It returns the origin index of every kept message, so ranges can be reported
against the caller's list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from compression.messages import ChatMessage, ToolCallPart, content_text, safe_json_text

KNOWN_ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})
UNNAMED_TOOL = "unknown_tool"
REPLACEMENT_CHARACTER = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


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


def encodable(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8, that is, holds no lone surrogate (``isascii`` answers most texts at once)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def without_surrogates(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD; ``text`` itself when it has none."""
    return text if encodable(text) else _SURROGATE.sub(REPLACEMENT_CHARACTER, text)


def _clean_part(part: dict[str, Any] | str) -> dict[str, Any] | str:
    if isinstance(part, str):
        return without_surrogates(part)
    if all(encodable(value) for value in part.values() if isinstance(value, str)):
        return part
    return {key: without_surrogates(value) if isinstance(value, str) else value for key, value in part.items()}


def _clean_content(content: Any) -> tuple[str | list[Any] | None, bool]:
    """Text, content parts or None, without surrogates; and whether that changed anything."""
    if content is None:
        return None, False
    if isinstance(content, str):
        text = without_surrogates(content)
        return text, text is not content
    if not isinstance(content, list):
        return without_surrogates(safe_json_text(content)), True
    if not all(isinstance(part, (dict, str)) for part in content):
        return without_surrogates(content_text(content)), True
    parts = [_clean_part(part) for part in content]
    if all(new is old for new, old in zip(parts, content, strict=True)):
        return content, False
    return parts, True


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
            "id": without_surrogates(call_id)
            if isinstance(call_id, str) and call_id
            else f"call_missing_{index}_{position}",
            "function": {
                **function,
                "name": without_surrogates(name) if isinstance(name, str) and name else UNNAMED_TOOL,
                "arguments": without_surrogates(
                    arguments if isinstance(arguments, str) else safe_json_text(arguments or {})
                ),
            },
        }
        changed = changed or fixed != call
        cleaned.append(fixed)
    return cleaned, changed


def _is_clean(message: dict[str, Any]) -> bool:
    """The common case, checked cheaply: a known role, text content, well-formed tool calls and ids, all encodable."""
    # Every message of a context passes here at each aging and each compaction: ``isascii`` first, which answers
    # at once for nearly all text, before the call that encodes.
    role = message.get("role")
    content = message.get("content")
    if role not in KNOWN_ROLES:
        return False
    if content is not None and not (isinstance(content, str) and (content.isascii() or encodable(content))):
        return False
    call_id = message.get("tool_call_id")
    if isinstance(call_id, str):
        if not (call_id.isascii() or encodable(call_id)):
            return False
    elif role == "tool":
        return False
    name = message.get("name")
    if name is not None and isinstance(name, str) and not encodable(name):
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
        name, arguments = function.get("name"), function.get("arguments")
        if not (isinstance(name, str) and name and isinstance(arguments, str)):
            return False
        if not (arguments.isascii() or encodable(arguments)) or not (encodable(call["id"]) and encodable(name)):
            return False
    return True


def _clean_message(message: dict[str, Any], index: int, notes: list[str]) -> tuple[ChatMessage | None, bool]:
    role = message.get("role")
    content, changed = _clean_content(message.get("content"))
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
    call_id = message.get("tool_call_id")
    if role == "tool" and not isinstance(call_id, str):
        cleaned["tool_call_id"] = without_surrogates(safe_json_text(call_id)) or f"call_missing_{index}"
        changed = True
    elif isinstance(call_id, str) and not encodable(call_id):
        cleaned["tool_call_id"], changed = without_surrogates(call_id), True
    name = message.get("name")
    if isinstance(name, str) and not encodable(name):
        cleaned["name"], changed = without_surrogates(name), True
    return cleaned, changed or calls_changed


def sanitize_messages(messages: Sequence[Any], *, clean_prefix: int = 0) -> Sanitized:
    """Messages safe for every later step; unchanged messages are passed through as the same objects. The first
    ``clean_prefix`` are known to be sanitized already (``compression.known_context``) and are not checked."""
    result = Sanitized(messages=list(messages[:clean_prefix]), origins=list(range(clean_prefix)))
    keep, keep_origin = result.messages.append, result.origins.append
    for index, item in enumerate(messages[clean_prefix:], start=clean_prefix):
        if isinstance(item, dict) and _is_clean(item):
            keep(cast(ChatMessage, item))
            keep_origin(index)
            continue
        if not isinstance(item, dict):
            result.dropped += 1
            result.notes.append(f"#{index}: {type(item).__name__} is not a message; dropped")
            continue
        cleaned, changed = _clean_message(item, index, result.notes)
        if cleaned is None:
            result.dropped += 1
            continue
        result.repaired += changed
        result.messages.append(cleaned if changed else cast(ChatMessage, item))
        result.origins.append(index)
    return result
